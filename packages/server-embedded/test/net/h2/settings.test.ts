// The server's SETTINGS and stream limits side by side with grpc-js's server at the member
// server's configuration: node:http2 under it sends an empty SETTINGS frame (no
// SETTINGS_MAX_CONCURRENT_STREAMS: no limit on open streams), and so does net/h2.
import {
  encodeLiterals,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_DATA,
  FRAME_GOAWAY,
  FRAME_HEADERS,
  FRAME_RST_STREAM,
  frameOf,
  HeaderBlockDecoder,
  PREFACE,
  settingsFrame,
} from '@etcdkit/client/h2';
import { afterEach, describe, expect, it } from 'vitest';
import { startGrpcJsToy } from './grpc-js-toy.js';
import { rawConnect } from './raw-socket.js';
import { grpcFrame, grpcMessages, startToy, until } from './toy-service.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Both servers, grpc-js's first. */
async function servers() {
  const grpcJs = await startGrpcJsToy();
  cleanups.push(grpcJs.stop);
  const own = await startToy();
  cleanups.push(own.stop);
  return [grpcJs, own];
}

async function connect(port: number) {
  const client = await rawConnect(port);
  cleanups.push(() => client.socket.destroy());
  return client;
}

const REQUEST = encodeLiterals(
  [
    [':method', 'POST'],
    [':scheme', 'http'],
    [':path', '/toy.Echo/Unary'],
    [':authority', 'localhost'],
    ['content-type', 'application/grpc'],
  ].map(([name, value]) => ({ name: name!, value: value!, sensitive: false })),
);

describe('SETTINGS, grpc-js server beside net/h2', () => {
  it('sends an empty SETTINGS frame before the client says anything, and nothing else', async () => {
    const sent: string[][] = [];
    for (const server of await servers()) {
      const client = await connect(server.port);
      await until(() => client.frames.length > 0);
      await new Promise((resolve) => setTimeout(resolve, 100));
      sent.push(
        client.frames.map((f) => frameOf(f.type, f.flags, f.streamId, f.payload).toString('hex')),
      );
    }
    expect(sent).toEqual([['000000040000000000'], ['000000040000000000']]);
  });

  it('serves 300 streams open at once: no MAX_CONCURRENT_STREAMS', async () => {
    const count = 300;
    for (const server of await servers()) {
      const client = await connect(server.port);
      const ids = Array.from({ length: count }, (_, i) => 2 * i + 1);
      // Every stream is opened before any request ends.
      client.socket.write(
        Buffer.concat([
          PREFACE,
          settingsFrame([]),
          ...ids.map((id) => frameOf(FRAME_HEADERS, FLAG_END_HEADERS, id, REQUEST)),
        ]),
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      client.socket.write(
        Buffer.concat(
          ids.map((id) =>
            frameOf(FRAME_DATA, FLAG_END_STREAM, id, grpcFrame(Buffer.from(`${id}`))),
          ),
        ),
      );
      const ended = () =>
        client.frames.filter((f) => f.type === FRAME_HEADERS && f.flags & FLAG_END_STREAM);
      await until(() => ended().length === count, 5000);
      expect(
        client.frames.filter((f) => f.type === FRAME_RST_STREAM || f.type === FRAME_GOAWAY),
      ).toEqual([]);
      const decoder = new HeaderBlockDecoder();
      const statuses = client.frames
        .filter((f) => f.type === FRAME_HEADERS)
        .flatMap((f) => decoder.decode(f.payload))
        .filter((field) => field.name === 'grpc-status')
        .map((field) => field.value);
      expect(statuses).toEqual(ids.map(() => '0'));
      for (const id of ids) {
        const data = client.frames.filter((f) => f.type === FRAME_DATA && f.streamId === id);
        expect(grpcMessages(Buffer.concat(data.map((f) => f.payload))).map(String)).toEqual([
          `${id}`,
        ]);
      }
    }
  });
});
