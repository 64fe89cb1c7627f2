// The h2 transport bounds the request bytes a connection holds for a server that does not take
// them (maxBufferedRequestBytes): against a server that never opens its flow-control window and
// one that never reads its socket, over real loopback TCP. Beyond the bound a request is refused
// at once, unsent, with an error naming the bound; what the connection holds stays within it.
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { H2Connection, RequestBufferFullError } from '../../src/transport/h2-connection.js';
import { CLOSED_WINDOWS, OPEN_WINDOWS, serverSending } from './request-bound-servers.js';
import { streamEvents } from './stream-events.js';

const cleanups: (() => unknown)[] = [];
/** Lets the connection write what it queued this tick. */
const flushed = () => new Promise((resolve) => setImmediate(resolve));
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

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

describe('the h2 connection bounds the request bytes it holds', () => {
  it('refuses a request beyond the bound while the server keeps its window closed, and takes requests again once the held ones end', async () => {
    const connection = await connectionTo(
      await serverSending(CLOSED_WINDOWS, true, cleanups),
      10_000,
    );
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
    const connection = await connectionTo(
      await serverSending(CLOSED_WINDOWS, true, cleanups),
      1000,
    );
    connection.request('/p', [], events, [Buffer.alloc(5000)], true);
    await flushed();
    expect(connection.bufferedRequestBytes).toBe(5000);
    expect(() => connection.request('/p', [], events, [Buffer.alloc(1)], true)).toThrow(
      RequestBufferFullError,
    );
  });

  it('ends an open stream whose write would go beyond the bound', async () => {
    refusals.length = 0;
    const connection = await connectionTo(
      await serverSending(CLOSED_WINDOWS, true, cleanups),
      4000,
    );
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
    const limit = 2 * 1024 * 1024;
    const connection = await connectionTo(
      await serverSending(OPEN_WINDOWS, false, cleanups),
      limit,
    );
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
