// Malicious peers against the server's own HTTP/2 engine, each beside a normal client making calls
// every 20 ms: a flood of PINGs or SETTINGS from a peer that reads nothing, rapid reset (HEADERS
// then RST_STREAM), an endless header block, slow readers asking for large answers, and a peer
// that never sends its preface. Each must end (or stall) at the engine's bounds, read from its
// counters while the attack runs, and the normal client's calls must all be answered.
import { connect as http2Connect } from 'node:http2';
import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Etcd } from '@etcdkit/client';
import {
  CANCEL,
  ENHANCE_YOUR_CALM,
  encodeLiterals,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_CONTINUATION,
  FRAME_DATA,
  FRAME_GOAWAY,
  FRAME_HEADERS,
  FRAME_PING,
  FRAME_RST_STREAM,
  FRAME_SETTINGS,
  frameOf,
  INTERNAL_ERROR,
  MAX_WINDOW,
  PREFACE,
  REFUSED_STREAM,
  rstStreamFrame,
  SETTINGS_INITIAL_WINDOW_SIZE,
  settingsFrame,
  windowUpdateFrame,
} from '@etcdkit/client/h2';
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../../src/index.js';
import type { H2ServerConnection } from '../../../src/net/h2/connection.js';
import { Routes } from '../../../src/net/h2/routes.js';
import { H2GrpcServer, type H2GrpcServerOptions } from '../../../src/net/h2/server.js';
import { rawConnect } from './raw-socket.js';
import { grpcFrame, grpcMessages, until } from './toy-service.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Octets of each answer of /attack.Big. */
const BIG = 256 * 1024;
const MAX_UNWRITTEN = 1024 * 1024;

/** A server with an echo and a large answer; every connection it serves is kept for its counters. */
async function startServer(options: Partial<H2GrpcServerOptions> = {}) {
  const routes = new Routes()
    .unary('/attack.Echo', (request) => request)
    .unary('/attack.Big', () => Buffer.alloc(BIG, 7));
  const server = new H2GrpcServer({
    routes,
    maxUnwrittenBytes: MAX_UNWRITTEN,
    maxUnsentBytes: MAX_UNWRITTEN,
    ...options,
  });
  const connections: H2ServerConnection[] = [];
  const listener: Server = createServer((socket) => connections.push(server.handle(socket)));
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as { port: number };
  cleanups.push(async () => {
    await server.destroy();
    await new Promise((resolve) => listener.close(resolve));
  });
  /** The server's side of the connection of `socket`. */
  const serving = async (socket: Socket): Promise<H2ServerConnection> => {
    const find = () => connections.find((c) => c.socket.remotePort === socket.localPort);
    await until(() => find() !== undefined);
    return find()!;
  };
  return { port, serving };
}

/** A well-behaved client calling the echo every 20 ms until stopped; what each call answered. */
function normalClient(port: number) {
  const session = http2Connect(`http://127.0.0.1:${port}`);
  session.on('error', () => {});
  const answers: Promise<string>[] = [];
  let n = 0;
  const call = (text: string) =>
    new Promise<string>((resolve) => {
      const request = session.request({
        ':method': 'POST',
        ':path': '/attack.Echo',
        'content-type': 'application/grpc',
      });
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => resolve(String(grpcMessages(Buffer.concat(chunks))[0] ?? 'none')));
      request.on('error', (error) => resolve(`error: ${error.message}`));
      request.end(grpcFrame(Buffer.from(text)));
    });
  const timer = setInterval(() => answers.push(call(`call ${n++}`)), 20);
  cleanups.push(() => {
    clearInterval(timer);
    session.destroy();
  });
  return {
    /** Stops calling; every call's answer, in order. */
    async stop(): Promise<string[]> {
      clearInterval(timer);
      const all = await Promise.all(answers);
      session.close();
      return all;
    },
  };
}

/** A socket that writes and never reads (its kernel buffer fills, then the server's). */
async function deafSocket(port: number): Promise<Socket> {
  const socket = netConnect(port, '127.0.0.1');
  socket.on('error', () => {});
  cleanups.push(() => socket.destroy());
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.pause();
  return socket;
}

/** Writes `frame` `count` times, in large writes, waiting for the socket as it backs up. */
async function flood(socket: Socket, frame: Buffer, count: number, stop: () => boolean) {
  const batch = Buffer.concat(Array.from({ length: 1000 }, () => frame));
  for (let sent = 0; sent < count && !stop() && !socket.destroyed; sent += 1000) {
    if (!socket.write(batch)) {
      await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), sleep(50)]);
    }
  }
}

/** The request header block of a call to `path`. */
function requestBlock(path: string): Buffer {
  return encodeLiterals([
    { name: ':method', value: 'POST', sensitive: false },
    { name: ':scheme', value: 'http', sensitive: false },
    { name: ':path', value: path, sensitive: false },
    { name: ':authority', value: 'localhost', sensitive: false },
    { name: 'content-type', value: 'application/grpc', sensitive: false },
  ]);
}

/** A unary request on `streamId`: HEADERS and one DATA frame with END_STREAM. */
function request(streamId: number, path: string): Buffer {
  return Buffer.concat([
    frameOf(FRAME_HEADERS, FLAG_END_HEADERS, streamId, requestBlock(path)),
    frameOf(FRAME_DATA, FLAG_END_STREAM, streamId, grpcFrame(Buffer.from('x'))),
  ]);
}

/** Samples `read` every millisecond or so until stopped; the largest value seen. */
function sample(read: () => number) {
  let max = 0;
  const timer = setInterval(() => {
    max = Math.max(max, read());
  }, 1);
  cleanups.push(() => clearInterval(timer));
  return {
    stop(): number {
      clearInterval(timer);
      return Math.max(max, read());
    },
  };
}

const hello = Buffer.concat([PREFACE, settingsFrame([])]);

// A full GC on demand (vitest's workers do not start with --expose-gc).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** The process's ArrayBuffer memory once garbage is collected. */
async function collectedArrayBuffers(): Promise<number> {
  gc();
  // Backing stores are freed after the GC pause; a second cycle after a turn frees the rest.
  await sleep(10);
  gc();
  return process.memoryUsage().arrayBuffers;
}

describe('net/h2 under attack, beside a normal client', () => {
  it('ends a connection flooding PINGs without reading at 1,000 ACKs unwritten', async () => {
    const { port, serving } = await startServer();
    const normal = normalClient(port);
    const attacker = await deafSocket(port);
    attacker.write(hello);
    const attacked = await serving(attacker);
    const acks = sample(() => attacked.pendingAcks);
    const unwritten = sample(() => attacked.unwrittenBytes);
    let closed = false;
    attacked.socket.once('close', () => {
      closed = true;
    });
    await flood(attacker, frameOf(FRAME_PING, 0, 0, Buffer.alloc(8)), 2_000_000, () => closed);
    await until(() => closed, 10_000);
    expect(acks.stop()).toBeLessThanOrEqual(1000);
    // 1,000 ACKs of 17 octets and what the socket still held of the answers before them.
    expect(unwritten.stop()).toBeLessThan(1000 * 17 + 64 * 1024);
    const answers = await normal.stop();
    expect(answers.length).toBeGreaterThan(0);
    expect(answers).toEqual(answers.map((_, i) => `call ${i}`));
  });

  it('ends a connection flooding SETTINGS without reading at 1,000 ACKs unwritten', async () => {
    const { port, serving } = await startServer();
    const normal = normalClient(port);
    const attacker = await deafSocket(port);
    attacker.write(hello);
    const attacked = await serving(attacker);
    const acks = sample(() => attacked.pendingAcks);
    let closed = false;
    attacked.socket.once('close', () => {
      closed = true;
    });
    await flood(attacker, settingsFrame([]), 2_000_000, () => closed);
    await until(() => closed, 10_000);
    expect(acks.stop()).toBeLessThanOrEqual(1000);
    const answers = await normal.stop();
    expect(answers.length).toBeGreaterThan(0);
    expect(answers).toEqual(answers.map((_, i) => `call ${i}`));
  });

  it('answers rapid reset (HEADERS then RST_STREAM) with GOAWAY ENHANCE_YOUR_CALM', async () => {
    // No refill (33 a second by default): how many resets pass must not depend on how fast a
    // loaded machine sends them.
    const { port, serving } = await startServer({ resetsPerSecond: 0 });
    const normal = normalClient(port);
    const attacker = await rawConnect(port);
    cleanups.push(() => attacker.socket.destroy());
    attacker.socket.write(hello);
    const attacked = await serving(attacker.socket);
    const open = sample(() => attacked.openStreams);
    const block = requestBlock('/attack.Echo');
    let streamId = 1;
    while (!attacker.isClosed() && streamId < 200_000) {
      const pairs: Buffer[] = [];
      for (let i = 0; i < 500; i++, streamId += 2) {
        pairs.push(frameOf(FRAME_HEADERS, FLAG_END_HEADERS, streamId, block));
        pairs.push(rstStreamFrame(streamId, CANCEL));
      }
      attacker.socket.write(Buffer.concat(pairs));
      await sleep(1);
    }
    await until(() => attacker.isClosed(), 10_000);
    const goaway = attacker.frames.find((frame) => frame.type === FRAME_GOAWAY);
    expect(goaway?.payload.readUInt32BE(4)).toBe(ENHANCE_YOUR_CALM);
    // The burst of 1,000 resets passes; the 1,001st (stream 2,001) ends the connection.
    expect(goaway?.payload.readUInt32BE(0)).toBe(2001);
    expect(open.stop()).toBeLessThanOrEqual(1);
    const answers = await normal.stop();
    expect(answers).toEqual(answers.map((_, i) => `call ${i}`));
  });

  it('ends an endless header block at the 9th CONTINUATION frame', async () => {
    const { port } = await startServer();
    const normal = normalClient(port);
    const attacker = await rawConnect(port);
    cleanups.push(() => attacker.socket.destroy());
    const piece = Buffer.alloc(16_384, 0);
    const frames = [hello, frameOf(FRAME_HEADERS, 0, 1, requestBlock('/attack.Echo'))];
    for (let i = 0; i < 100; i++) frames.push(frameOf(FRAME_CONTINUATION, 0, 1, piece));
    attacker.socket.write(Buffer.concat(frames));
    await until(() => attacker.isClosed(), 10_000);
    const goaway = attacker.frames.find((frame) => frame.type === FRAME_GOAWAY);
    expect(goaway?.payload.readUInt32BE(4)).toBe(INTERNAL_ERROR);
    await sleep(100);
    const answers = await normal.stop();
    expect(answers.length).toBeGreaterThan(0);
    expect(answers).toEqual(answers.map((_, i) => `call ${i}`));
  });

  it('stops reading a reader that opens its windows but not its socket, within the bound', async () => {
    const { port, serving } = await startServer();
    const normal = normalClient(port);
    const attacker = await deafSocket(port);
    attacker.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW]]),
        windowUpdateFrame(0, MAX_WINDOW - 65_535),
      ]),
    );
    const attacked = await serving(attacker);
    const held = sample(() => attacked.unwrittenBytes + attacked.unsentBytes);
    // 2,000 requests for 256 KiB each: 500 MiB of answers asked for.
    let streamId = 1;
    for (let round = 0; round < 20; round++) {
      const requests: Buffer[] = [];
      for (let i = 0; i < 100; i++, streamId += 2) requests.push(request(streamId, '/attack.Big'));
      attacker.write(Buffer.concat(requests));
      await sleep(10);
    }
    await sleep(300);
    // What the kernel took, then the bound and the one answer that crossed it.
    expect(held.stop()).toBeLessThanOrEqual(MAX_UNWRITTEN + BIG + 64 * 1024);
    expect(attacked.openStreams).toBe(0);
    const answers = await normal.stop();
    expect(answers.length).toBeGreaterThan(0);
    expect(answers).toEqual(answers.map((_, i) => `call ${i}`));
  });

  it('refuses new requests of a reader whose windows keep the answers waiting', async () => {
    const { port, serving } = await startServer();
    const normal = normalClient(port);
    const attacker = await rawConnect(port);
    cleanups.push(() => attacker.socket.destroy());
    // Stream windows of 0: every answer waits in its stream.
    attacker.socket.write(
      Buffer.concat([PREFACE, settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]])]),
    );
    const attacked = await serving(attacker.socket);
    const held = sample(() => attacked.unsentBytes);
    const requests: Buffer[] = [];
    for (let streamId = 1; streamId < 2 * 50; streamId += 2) {
      requests.push(request(streamId, '/attack.Big'));
    }
    attacker.socket.write(Buffer.concat(requests));
    await until(
      () =>
        attacker.frames.filter(
          (f) => f.type === FRAME_RST_STREAM && f.payload.readUInt32BE(0) === REFUSED_STREAM,
        ).length > 0,
    );
    await sleep(100);
    expect(held.stop()).toBeLessThanOrEqual(MAX_UNWRITTEN + BIG);
    const refused = attacker.frames.filter(
      (f) => f.type === FRAME_RST_STREAM && f.payload.readUInt32BE(0) === REFUSED_STREAM,
    );
    // Four answers of 256 KiB and their prefixes went past 1 MiB; the 46 requests after them
    // were refused.
    expect(refused.map((f) => f.streamId)).toEqual(Array.from({ length: 46 }, (_, i) => 9 + 2 * i));
    const answers = await normal.stop();
    expect(answers.length).toBeGreaterThan(0);
    expect(answers).toEqual(answers.map((_, i) => `call ${i}`));
  });

  it('closes a connection that sends no preface within the settings timeout', async () => {
    const { port } = await startServer({ settingsTimeoutMs: 200 });
    const attacker = await rawConnect(port);
    cleanups.push(() => attacker.socket.destroy());
    await until(() => attacker.isClosed(), 5000);
    const goaway = attacker.frames.find((frame) => frame.type === FRAME_GOAWAY);
    expect(goaway?.payload.readUInt32BE(4)).toBe(0x4);
    expect(goaway?.payload.subarray(8).toString()).toBe(
      'no preface and SETTINGS from the peer in 200 ms',
    );
    expect(attacker.frames.map((frame) => frame.type)).toEqual([FRAME_SETTINGS, FRAME_GOAWAY]);
  });

  it('holds a bounded amount for an EmbeddedEtcd reader asking for 200 MiB of Range answers', async () => {
    const server = await EmbeddedEtcd.start();
    cleanups.push(() => server.stop());
    const etcd = new Etcd({ endpoints: [...server.endpoints] });
    cleanups.push(() => etcd.close());
    await etcd.put('big', Buffer.alloc(1024 * 1024, 1));
    const port = Number(new URL(server.endpoints[0]!).port);
    const attacker = await deafSocket(port);
    attacker.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW]]),
        windowUpdateFrame(0, MAX_WINDOW - 65_535),
      ]),
    );
    // RangeRequest { key: "big" }, by hand: field 1, length 3.
    const range = Buffer.from([0x0a, 3, ...Buffer.from('big')]);
    const block = requestBlock('/etcdserverpb.KV/Range');
    const before = await collectedArrayBuffers();
    let streamId = 1;
    const answered: string[] = [];
    for (let round = 0; round < 20; round++) {
      const requests: Buffer[] = [];
      for (let i = 0; i < 10; i++, streamId += 2) {
        requests.push(
          frameOf(FRAME_HEADERS, FLAG_END_HEADERS, streamId, block),
          frameOf(FRAME_DATA, FLAG_END_STREAM, streamId, grpcFrame(range)),
        );
      }
      attacker.write(Buffer.concat(requests));
      // The normal client is answered meanwhile.
      answered.push(String((await etcd.get('big'))?.value.length));
    }
    await sleep(300);
    expect(answered).toEqual(Array.from({ length: 20 }, () => String(1024 * 1024)));
    // What the server holds for the peer that never reads (held until the peer goes, so the end
    // is the most), measured after a full GC so that garbage (the normal client's answers) does
    // not count, whenever GC would have run: within the configured bounds, not 200 MiB (200 MiB
    // held with both bounds raised to 4 GiB; 4 MiB with them): answers waiting for the peer
    // (maxUnsentBytes, 64 MiB: requests already read when reading paused are answered), 4 MiB
    // unwritten, the answer that crossed it, and 1 MiB for the rest of the process.
    const MiB = 1024 * 1024;
    const grown = (await collectedArrayBuffers()) - before;
    expect(grown).toBeLessThan((64 + 4 + 1 + 1) * MiB);
  });
});
