// The h2 transport bounds the request bytes a connection holds for a server that does not take
// them (maxBufferedRequestBytes): against a server that never opens its flow-control window and
// one that never reads its socket, over real loopback TCP. Beyond the bound a request is refused
// at once, unsent, with an error naming the bound; what the connection holds stays within it.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidConfigError, WriteNotAppliedError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import { etcdserverpb_KV } from '../../src/generated/methods.js';
import {
  MAX_WINDOW,
  SETTINGS_INITIAL_WINDOW_SIZE,
  settingsFrame,
  windowUpdateFrame,
} from '../../src/transport/h2/index.js';
import { H2Transport } from '../../src/transport/h2.js';
import {
  DEFAULT_MAX_BUFFERED_REQUEST_BYTES,
  H2Connection,
  RequestBufferFullError,
} from '../../src/transport/h2-connection.js';
import { GrpcStatus, TransportError } from '../../src/transport/types.js';
import { streamEvents } from './stream-events.js';

const cleanups: (() => unknown)[] = [];
/** Lets the connection write what it queued this tick. */
const flushed = () => new Promise((resolve) => setImmediate(resolve));
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A server that sends `preface` on each connection, and reads what comes only when `reads`. */
async function serverSending(preface: Buffer, reads: boolean): Promise<number> {
  const server: Server = createServer((socket: Socket) => {
    socket.on('error', () => {});
    if (!reads) socket.pause();
    else socket.resume();
    socket.write(preface);
    cleanups.push(() => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as { port: number }).port;
}

/** An H2Connection to `port` with the request bound `limit`, once the handshake is done. */
async function connectionTo(port: number, limit: number): Promise<H2Connection> {
  let ready!: () => void;
  const readyP = new Promise<void>((resolve) => {
    ready = resolve;
  });
  const connection = new H2Connection(
    connect(port, '127.0.0.1'),
    {
      scheme: 'http',
      authority: `127.0.0.1:${port}`,
      contentType: 'application/grpc',
      userAgent: 't',
    },
    { onReady: () => ready(), onGoaway: () => {}, onClose: () => {} },
    { maxBufferedRequestBytes: limit },
  );
  cleanups.push(() => connection.destroy());
  await readyP;
  return connection;
}

const refusals: RequestBufferFullError[] = [];
const events = streamEvents({ onRefused: (error) => refusals.push(error) });

/** A server whose streams get no window at all: every DATA frame waits for it. */
const CLOSED_WINDOWS = settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]]);

describe('the h2 connection bounds the request bytes it holds', () => {
  it('refuses a request beyond the bound while the server keeps its window closed, and takes requests again once the held ones end', async () => {
    const connection = await connectionTo(await serverSending(CLOSED_WINDOWS, true), 10_000);
    const request = () => connection.request('/p', [], events, [Buffer.alloc(3000)], true);
    const held = [];
    for (let i = 0; i < 3; i++) {
      held.push(request());
      await flushed();
    }
    expect(connection.bufferedRequestBytes).toBe(9000);
    let refused: unknown;
    try {
      request();
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(RequestBufferFullError);
    expect((refused as Error).message).toBe(
      "the server is not taking this connection's requests: 9000 bytes wait for its flow-control window or its reads, and 3000 more would exceed the client's bound of 10000 (maxBufferedRequestBytes)",
    );
    expect(connection.streamCount).toBe(3);
    for (const stream of held) stream.cancel();
    await flushed();
    expect(connection.bufferedRequestBytes).toBe(0);
    request();
    await flushed();
    expect(connection.bufferedRequestBytes).toBe(3000);
  });

  it('always takes one request while nothing is held, even one larger than the bound', async () => {
    const connection = await connectionTo(await serverSending(CLOSED_WINDOWS, true), 1000);
    connection.request('/p', [], events, [Buffer.alloc(5000)], true);
    await flushed();
    expect(connection.bufferedRequestBytes).toBe(5000);
    expect(() => connection.request('/p', [], events, [Buffer.alloc(1)], true)).toThrow(
      RequestBufferFullError,
    );
  });

  it('ends an open stream whose write would go beyond the bound', async () => {
    refusals.length = 0;
    const connection = await connectionTo(await serverSending(CLOSED_WINDOWS, true), 4000);
    const stream = connection.request('/p', [], events, [Buffer.alloc(3000)], false);
    await flushed();
    stream.write(Buffer.alloc(500));
    expect(refusals).toEqual([]);
    stream.write(Buffer.alloc(1000));
    expect(refusals.map((error) => [error.buffered, error.bytes, error.limit])).toEqual([
      [3500, 1000, 4000],
    ]);
    expect(stream.closed).toBe(true);
    expect(connection.bufferedRequestBytes).toBeLessThan(100);
  });

  it('holds no more than the bound for a server that opens its windows but never reads', async () => {
    const open = Buffer.concat([
      settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW]]),
      windowUpdateFrame(0, MAX_WINDOW - 65_535),
    ]);
    const limit = 2 * 1024 * 1024;
    const connection = await connectionTo(await serverSending(open, false), limit);
    const chunk = Buffer.alloc(64 * 1024);
    let most = 0;
    let refused: RequestBufferFullError | undefined;
    // Up to 256 MiB offered: the kernel's socket buffers fill, then the bound refuses.
    for (let i = 0; i < 4096 && refused === undefined; i++) {
      try {
        connection.request('/p', [], events, [chunk], true);
      } catch (error) {
        refused = error as RequestBufferFullError;
      }
      most = Math.max(most, connection.bufferedRequestBytes);
      if (i % 16 === 15) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(refused).toBeInstanceOf(RequestBufferFullError);
    expect(refused!.limit).toBe(limit);
    // The bound, plus the HEADERS and DATA frame headers of the requests it let through.
    expect(most).toBeLessThanOrEqual(limit + 64 * 1024);
  });
});

describe('the h2 transport with maxBufferedRequestBytes', () => {
  it('fails a call beyond the bound at once, unsent, with Unavailable naming the bound', async () => {
    const port = await serverSending(CLOSED_WINDOWS, true);
    const channel = new H2Transport({ maxBufferedRequestBytes: 50_000 }).open({
      target: `127.0.0.1:${port}`,
    });
    cleanups.push(() => channel.close());
    const put = () =>
      channel.unary(
        etcdserverpb_KV.Put,
        { key: Buffer.from('k'), value: Buffer.alloc(20_000) },
        { deadline: Date.now() + 60_000 },
      );
    const held = [put(), put()];
    for (const call of held) call.catch(() => {});
    await channel.ready(Date.now() + 5000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const error = await put().then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).code).toBe(GrpcStatus.Unavailable);
    expect((error as TransportError).sent).toBe(false);
    expect((error as TransportError).cause).toBeInstanceOf(RequestBufferFullError);
    expect((error as TransportError).message).toMatch(
      /^the server is not taking this connection's requests: 400\d\d bytes wait .* bound of 50000 \(maxBufferedRequestBytes\)$/,
    );
  });

  it('fails a put beyond the bound, after the retries of an unsent call, with WriteNotAppliedError naming the bound', async () => {
    const port = await serverSending(CLOSED_WINDOWS, true);
    const etcd = new Etcd({
      endpoints: [`http://127.0.0.1:${port}`],
      transport: new H2Transport({ maxBufferedRequestBytes: 50_000 }),
    });
    cleanups.push(() => etcd.close());
    const held = [etcd.put('a', Buffer.alloc(20_000)), etcd.put('b', Buffer.alloc(20_000))];
    for (const put of held) put.catch(() => {});
    const error = await etcd.put('c', Buffer.alloc(20_000)).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).toBeInstanceOf(WriteNotAppliedError);
    expect((error as Error).message).toMatch(
      /^the write was not applied: the server is not taking this connection's requests: .* bound of 50000 \(maxBufferedRequestBytes\)$/,
    );
  }, 60_000);

  it('defaults to 64 MiB and refuses a bound that is not a positive integer', () => {
    expect(DEFAULT_MAX_BUFFERED_REQUEST_BYTES).toBe(64 * 1024 * 1024);
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new H2Transport({ maxBufferedRequestBytes: bad })).toThrow(InvalidConfigError);
    }
  });
});
