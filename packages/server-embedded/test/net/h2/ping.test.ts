// PING and keepalive side by side with grpc-js's server at its defaults (configured as the member
// server configures it): no keepalive PINGs of its own, no minimum interval or strikes for the
// client's PINGs, and nghttp2's flood limit of 1,000 ACKs waiting to go out.

import {
  FLAG_ACK,
  FRAME_PING,
  FRAME_SETTINGS,
  frameOf,
  goawayFrame,
  INTERNAL_ERROR,
  PREFACE,
  settingsFrame,
} from '@etcdkit/client/h2';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { startGrpcJsToy } from './grpc-js-toy.js';
import { type Frame, rawConnect } from './raw-socket.js';
import { startToy, until } from './toy-service.js';

const raw = (bytes: Buffer): Buffer => bytes;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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

function ping(n: number, flags = 0): Buffer {
  const payload = Buffer.alloc(8);
  payload.writeUInt32BE(n, 4);
  return frameOf(FRAME_PING, flags, 0, payload);
}

/** The frames other than the server's SETTINGS, as hex, runs of equal ones counted. */
function summary(frames: Frame[]): string[] {
  const out: string[] = [];
  let previous = '';
  let run = 0;
  const push = () => {
    if (run > 0) out.push(run > 1 ? `${previous} x${run}` : previous);
  };
  for (const f of frames) {
    if (f.type === FRAME_SETTINGS && f.flags === 0) continue;
    // PING ACKs by their type alone: their payloads are checked apart.
    const text =
      f.type === FRAME_PING
        ? `PING ${f.flags}`
        : frameOf(f.type, f.flags, f.streamId, f.payload).toString('hex');
    if (text === previous) run++;
    else {
      push();
      previous = text;
      run = 1;
    }
  }
  push();
  return out;
}

describe('PING, grpc-js server beside net/h2', () => {
  it('answers every PING however often, and sends none of its own', async () => {
    for (const server of await servers()) {
      const client = await connect(server.port);
      client.socket.write(Buffer.concat([PREFACE, settingsFrame([])]));
      for (let i = 0; i < 50; i++) {
        client.socket.write(ping(i));
        await sleep(2);
      }
      await until(() => client.frames.filter((f) => f.type === FRAME_PING).length === 50);
      await sleep(300);
      expect(summary(client.frames)).toEqual(['000000040100000000', 'PING 1 x50']);
      const payloads = client.frames
        .filter((f) => f.type === FRAME_PING)
        .map((f) => f.payload.readUInt32BE(4));
      expect(payloads).toEqual(Array.from({ length: 50 }, (_, i) => i));
      expect(client.isClosed()).toBe(false);
    }
  });

  it('ends the connection on a PING ACK it sent no PING for, with GOAWAY INTERNAL_ERROR', async () => {
    for (const server of await servers()) {
      const client = await connect(server.port);
      client.socket.write(Buffer.concat([PREFACE, settingsFrame([])]));
      await until(() =>
        client.frames.some((f) => f.type === FRAME_SETTINGS && f.flags === FLAG_ACK),
      );
      client.socket.write(ping(7, FLAG_ACK));
      await until(client.isClosed);
      expect(summary(client.frames)).toEqual([
        '000000040100000000',
        goawayFrame(0, INTERNAL_ERROR).toString('hex'),
      ]);
    }
  });

  it('answers 999 PINGs read at once, with the SETTINGS ACK 1,000 ACKs', async () => {
    for (const server of await servers()) {
      const client = await connect(server.port);
      const pings = Array.from({ length: 999 }, (_, i) => ping(i));
      client.socket.write(Buffer.concat([PREFACE, settingsFrame([]), ...pings]));
      await until(() => client.frames.filter((f) => f.type === FRAME_PING).length === 999);
      await sleep(50);
      expect(summary(client.frames)).toEqual(['000000040100000000', 'PING 1 x999']);
      expect(client.isClosed()).toBe(false);
    }
  });

  it('ends a connection with 1,001 ACKs waiting with GOAWAY INTERNAL_ERROR alone', async () => {
    for (const server of await servers()) {
      const client = await connect(server.port);
      const pings = Array.from({ length: 1000 }, (_, i) => ping(i));
      client.socket.write(Buffer.concat([PREFACE, settingsFrame([]), ...pings]));
      await until(client.isClosed);
      expect(summary(client.frames)).toEqual([goawayFrame(0, INTERNAL_ERROR).toString('hex')]);
    }
  });

  it('ends the connection of a client that sends PINGs and reads nothing', async () => {
    for (const server of await servers()) {
      const client = await connect(server.port);
      client.socket.pause();
      client.socket.write(Buffer.concat([PREFACE, settingsFrame([])]));
      // Batches of 500, under the limit each: the ACKs pile up only as the socket backs up.
      const batch = Buffer.concat(Array.from({ length: 500 }, (_, i) => ping(i)));
      let sent = 0;
      while (!client.isClosed() && sent < 2_000_000) {
        client.socket.write(batch);
        sent += 500;
        await sleep(1);
      }
      expect(client.isClosed()).toBe(true);
    }
  });

  it('serves a grpc-js client that sends keepalive PINGs every 20 ms', async () => {
    for (const server of await servers()) {
      const client = new grpc.Client(server.target, grpc.credentials.createInsecure(), {
        'grpc.keepalive_time_ms': 20,
        'grpc.keepalive_permit_without_calls': 1,
      });
      cleanups.push(() => client.close());
      const call = () =>
        new Promise<string>((resolve) => {
          const metadata = new grpc.Metadata();
          client.makeUnaryRequest('/toy.Echo/Unary', raw, raw, Buffer.from('k'), metadata, (e, r) =>
            resolve(e ? `${e.code}: ${e.details}` : String(r)),
          );
        });
      expect(await call()).toBe('k');
      await sleep(500);
      expect(await call()).toBe('k');
      expect(client.getChannel().getConnectivityState(false)).toBe(grpc.connectivityState.READY);
    }
  });
});
