// A scripted HTTP/2 server on a loopback TCP port, for what no real server does on demand: refuse
// streams (RST_STREAM REFUSED_STREAM), go away below requests in flight (GOAWAY with a
// last-stream-id under them), break the protocol, allow no streams. It answers the KV Put itself,
// recording each put it applied, so a test can tell a write applied here from one applied elsewhere.
import { createServer, type Server, type Socket } from 'node:net';
import { etcdserverpb_KV } from '../../src/generated/methods.js';
import {
  FLAG_ACK,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_CONTINUATION,
  FRAME_DATA,
  FRAME_HEADERS,
  FRAME_PING,
  FRAME_SETTINGS,
  frameOf,
  goawayFrame,
  NO_ERROR,
  PREFACE,
  REFUSED_STREAM,
  rstStreamFrame,
  SETTINGS_MAX_CONCURRENT_STREAMS,
  settingsFrame,
} from '../../src/transport/h2/frames.js';
import { encodeLiterals, HeaderBlockDecoder } from '../../src/transport/h2/hpack.js';

/** One complete request the server received: its stream, path and gRPC message. */
export interface RawRequest {
  readonly streamId: number;
  readonly path: string;
  readonly message: Buffer;
}

/** One client connection, as a script acts on it. */
export interface RawConnection {
  /** Answers a Put as applied (recorded in `applied`); anything else with OK and an empty body. */
  answer(request: RawRequest): void;
  refuse(streamId: number): void;
  /** Writes raw bytes (frames) to the client. */
  send(bytes: Buffer): void;
  /** Ends the socket after what was written. */
  end(): void;
}

/** What the server does with requests: called once per complete request, in stream order. */
export type RawScript = (connection: RawConnection, request: RawRequest) => void;

export interface RawServerOptions {
  /** SETTINGS_MAX_CONCURRENT_STREAMS in the server's SETTINGS; none when absent. */
  readonly maxConcurrentStreams?: number;
}

export interface RawServer {
  readonly endpoint: string;
  /** Keys of the puts this server answered as applied, in order. */
  readonly applied: string[];
  /** Requests received, over all connections. */
  readonly received: RawRequest[];
  /** Connections accepted. */
  readonly connections: number;
  close(): Promise<void>;
}

function grpcMessage(body: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + body.length);
  out.writeUInt32BE(body.length, 1);
  out.set(body, 5);
  return out;
}

/** Starts a scripted server; every complete request goes to `script`. */
export async function startRawServer(
  script: RawScript,
  options: RawServerOptions = {},
): Promise<RawServer> {
  const applied: string[] = [];
  const received: RawRequest[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  let revision = 1n;

  const server: Server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    const decoder = new HeaderBlockDecoder();
    const paths = new Map<number, string>();
    const bodies = new Map<number, Buffer[]>();
    let block: { streamId: number; parts: Buffer[]; endStream: boolean } | undefined;
    let buffer = Buffer.alloc(0);
    let prefaceSeen = false;
    const settings: Array<[number, number]> = [];
    if (options.maxConcurrentStreams !== undefined) {
      settings.push([SETTINGS_MAX_CONCURRENT_STREAMS, options.maxConcurrentStreams]);
    }
    socket.write(settingsFrame(settings));

    const connection: RawConnection = {
      answer(request) {
        let body: Uint8Array = new Uint8Array(0);
        if (request.path === etcdserverpb_KV.Put.path) {
          const put = etcdserverpb_KV.Put.request.decode(request.message);
          applied.push(Buffer.from(put.key ?? []).toString());
          body = etcdserverpb_KV.Put.response.encode({ header: { revision: ++revision } }).finish();
        }
        const id = request.streamId;
        const headers = encodeLiterals([
          { name: ':status', value: '200', sensitive: false },
          { name: 'content-type', value: 'application/grpc', sensitive: false },
        ]);
        const trailers = encodeLiterals([{ name: 'grpc-status', value: '0', sensitive: false }]);
        socket.write(
          Buffer.concat([
            frameOf(FRAME_HEADERS, FLAG_END_HEADERS, id, headers),
            frameOf(FRAME_DATA, 0, id, grpcMessage(body)),
            frameOf(FRAME_HEADERS, FLAG_END_HEADERS | FLAG_END_STREAM, id, trailers),
          ]),
        );
      },
      refuse(streamId) {
        socket.write(rstStreamFrame(streamId, REFUSED_STREAM));
      },
      send(bytes) {
        if (!socket.destroyed) socket.write(bytes);
      },
      end() {
        socket.end();
      },
    };

    const complete = (streamId: number) => {
      const request: RawRequest = {
        streamId,
        path: paths.get(streamId) ?? '',
        message: Buffer.concat(bodies.get(streamId) ?? []).subarray(5),
      };
      bodies.delete(streamId);
      received.push(request);
      script(connection, request);
    };

    const onHeaderBlock = (streamId: number, parts: Buffer[], endStream: boolean) => {
      const fields = decoder.decode(Buffer.concat(parts));
      paths.set(streamId, fields.find((f) => f.name === ':path')?.value ?? '');
      bodies.set(streamId, []);
      if (endStream) complete(streamId);
    };

    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!prefaceSeen) {
        if (buffer.length < PREFACE.length) return;
        buffer = buffer.subarray(PREFACE.length);
        prefaceSeen = true;
      }
      while (buffer.length >= 9) {
        const length = buffer.readUIntBE(0, 3);
        if (buffer.length < 9 + length) break;
        const type = buffer[3]!;
        const flags = buffer[4]!;
        const streamId = buffer.readUInt32BE(5) & 0x7fff_ffff;
        let payload = Buffer.from(buffer.subarray(9, 9 + length));
        buffer = buffer.subarray(9 + length);
        switch (type) {
          case FRAME_SETTINGS:
            if (!(flags & FLAG_ACK))
              socket.write(frameOf(FRAME_SETTINGS, FLAG_ACK, 0, Buffer.alloc(0)));
            break;
          case FRAME_PING:
            if (!(flags & FLAG_ACK)) socket.write(frameOf(FRAME_PING, FLAG_ACK, 0, payload));
            break;
          case FRAME_HEADERS: {
            // Padding and priority fields, when flagged, come before the block fragment.
            let at = 0;
            let pad = 0;
            if (flags & 0x8) {
              pad = payload[0]!;
              at = 1;
            }
            if (flags & 0x20) at += 5;
            payload = payload.subarray(at, payload.length - pad);
            const endStream = (flags & FLAG_END_STREAM) !== 0;
            if (flags & FLAG_END_HEADERS) onHeaderBlock(streamId, [payload], endStream);
            else block = { streamId, parts: [payload], endStream };
            break;
          }
          case FRAME_CONTINUATION:
            if (block) {
              block.parts.push(payload);
              if (flags & FLAG_END_HEADERS) {
                const done = block;
                block = undefined;
                onHeaderBlock(done.streamId, done.parts, done.endStream);
              }
            }
            break;
          case FRAME_DATA: {
            const pad = flags & 0x8 ? payload[0]! : 0;
            const data = flags & 0x8 ? payload.subarray(1, payload.length - pad) : payload;
            bodies.get(streamId)?.push(data);
            if (flags & FLAG_END_STREAM && bodies.has(streamId)) complete(streamId);
            break;
          }
          default:
            break;
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    applied,
    received,
    get connections() {
      return connections;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A GOAWAY that tells the client streams after `lastStreamId` were not processed. */
export function gracefulGoaway(lastStreamId: number): Buffer {
  return goawayFrame(lastStreamId, NO_ERROR);
}
