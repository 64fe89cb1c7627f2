// A grpc-js channel in TRANSIENT_FAILURE dials afresh when a call waits for it, instead of leaving
// a server that came back unused until grpc-js's own backoff ends (x1.6 up to 5 s): after an etcd
// restart, a 2 s lease granted over grpc-js was lost so (CI, 2026-12-07).
import { createServer as createHttp2Server } from 'node:http2';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { GrpcJsTransport } from '../../src/transport/grpc-js.js';
import { type Channel, GrpcStatus } from '../../src/transport/types.js';

/**
 * A server on loopback that drops every connection at once (a member that is down) until
 * `serving` is set; then it speaks HTTP/2, which is all a channel needs to be ready.
 */
interface Flapping {
  readonly target: string;
  serving: boolean;
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

async function flappingServer(): Promise<Flapping> {
  const http2 = createHttp2Server();
  const sockets = new Set<Socket>();
  let accepted = 0;
  const state = { serving: false };
  const server: Server = createServer((socket) => {
    accepted++;
    if (!state.serving) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    http2.emit('connection', socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    target: `127.0.0.1:${address.port}`,
    get serving() {
      return state.serving;
    },
    set serving(value: boolean) {
      state.serving = value;
    },
    get accepted() {
      return accepted;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until the channel reports `failed` (grpc-js's attempt failed; it is in backoff). */
async function failed(channel: Channel): Promise<void> {
  while (channel.state() !== 'failed') await sleep(5);
}

describe('the grpc-js channel in TRANSIENT_FAILURE', () => {
  let server: Flapping | undefined;
  let channel: Channel | undefined;
  afterEach(async () => {
    channel?.close();
    await server?.close();
  });

  it('dials afresh when asked ready() once the server is back, not at the end of its backoff', async () => {
    server = await flappingServer();
    channel = new GrpcJsTransport().open({ target: server.target });
    await expect(channel.ready(Date.now() + 5_000)).rejects.toMatchObject({
      code: GrpcStatus.Unavailable,
      sent: false,
    });
    // More than the least time between two dials since the channel's, and failed right now.
    await sleep(300);
    await failed(channel);
    // In the same turn as the check: no attempt of grpc-js's own can have connected since.
    server.serving = true;
    await channel.ready(Date.now() + 5_000);
    expect(channel.state()).toBe('ready');
  });

  it('dials once per wait, at most once per 250 ms: asked again at once after a failed redial, it refuses unsent', async () => {
    server = await flappingServer();
    channel = new GrpcJsTransport().open({ target: server.target });
    await expect(channel.ready(Date.now() + 5_000)).rejects.toMatchObject({ sent: false });
    await sleep(300);
    await failed(channel);
    const before = server.accepted;
    // The redial: a fresh connection, dropped too.
    await expect(channel.ready(Date.now() + 5_000)).rejects.toMatchObject({
      code: GrpcStatus.Unavailable,
      sent: false,
    });
    expect(server.accepted).toBe(before + 1);
    // Asked again at once: the last attempt's error, without a dial.
    await expect(channel.ready(Date.now() + 5_000)).rejects.toMatchObject({
      code: GrpcStatus.Unavailable,
      sent: false,
    });
    expect(server.accepted).toBe(before + 1);
  });

  it('refuses ready() after close() without dialling: a closed grpc-js channel asked to connect dials again', async () => {
    server = await flappingServer();
    channel = new GrpcJsTransport().open({ target: server.target });
    await expect(channel.ready(Date.now() + 5_000)).rejects.toMatchObject({ sent: false });
    await sleep(300);
    await failed(channel);
    channel.close();
    expect(channel.state()).toBe('closed');
    const before = server.accepted;
    await expect(channel.ready(Date.now() + 5_000)).rejects.toMatchObject({
      code: GrpcStatus.Unavailable,
      sent: false,
    });
    expect(channel.state()).toBe('closed');
    expect(server.accepted).toBe(before);
  });
});
