// Every transport bounds the request bytes it holds for a server that does not take them
// (maxBufferedRequestBytes): against a server that never opens its flow-control window and one
// that never reads its socket. Beyond the bound a call fails at once, unsent, with Unavailable
// naming the bound (a put: WriteNotAppliedError), and a stream write beyond it ends its stream.
// grpc-js counts a unary request until its answer begins (grpc-js-held.ts), the others what their
// HTTP/2 streams hold; on these servers, which never answer, all three hold the same bytes.
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidConfigError, WriteNotAppliedError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import { etcdserverpb_KV, etcdserverpb_Watch } from '../../src/generated/methods.js';
import { GrpcJsTransport } from '../../src/transport/grpc-js.js';
import { H2Transport } from '../../src/transport/h2.js';
import { Http2Transport } from '../../src/transport/http2.js';
import {
  DEFAULT_MAX_BUFFERED_REQUEST_BYTES,
  RequestBufferFullError,
} from '../../src/transport/request-bound.js';
import { GrpcStatus, type Transport, TransportError } from '../../src/transport/types.js';
import { CLOSED_WINDOWS, OPEN_WINDOWS, serverSending } from './request-bound-servers.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

const transports: ReadonlyArray<
  readonly [string, (options: { maxBufferedRequestBytes?: number }) => Transport]
> = [
  ['h2', (options) => new H2Transport(options)],
  ['http2', (options) => new Http2Transport(options)],
  ['grpc-js', (options) => new GrpcJsTransport(options)],
];

describe.each(transports)('the %s transport with maxBufferedRequestBytes', (_, make) => {
  async function channelTo(preface: Buffer, reads: boolean, limit: number) {
    const port = await serverSending(preface, reads, cleanups);
    const channel = make({ maxBufferedRequestBytes: limit }).open({
      target: `127.0.0.1:${port}`,
    });
    cleanups.push(() => channel.close());
    await channel.ready(Date.now() + 5000);
    return channel;
  }

  it('fails a call beyond the bound at once, unsent, with Unavailable naming the bound', async () => {
    const channel = await channelTo(CLOSED_WINDOWS, true, 50_000);
    const put = () =>
      channel.unary(
        etcdserverpb_KV.Put,
        { key: Buffer.from('k'), value: Buffer.alloc(20_000) },
        { deadline: Date.now() + 60_000 },
      );
    const held = [put(), put()];
    for (const call of held) call.catch(() => {});
    await sleep(50);
    const error = await failureOf(put());
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).code).toBe(GrpcStatus.Unavailable);
    expect((error as TransportError).sent).toBe(false);
    expect((error as TransportError).cause).toBeInstanceOf(RequestBufferFullError);
    expect((error as TransportError).message).toMatch(
      /^the server is not taking this connection's requests: 400\d\d bytes wait .* 200\d\d more would exceed the client's bound of 50000 \(maxBufferedRequestBytes\)$/,
    );
  });

  it('refuses calls once the bound is held for a server that opens its windows but never reads', async () => {
    const limit = 2 * 1024 * 1024;
    const channel = await channelTo(OPEN_WINDOWS, false, limit);
    let refused: TransportError | undefined;
    let taken = 0;
    // Up to 256 MiB offered: the kernel's socket buffers fill, then the bound refuses.
    for (let i = 0; i < 4096 && refused === undefined; i++) {
      const call = channel.unary(
        etcdserverpb_KV.Put,
        { key: Buffer.from('k'), value: Buffer.alloc(64 * 1024) },
        { deadline: Date.now() + 60_000 },
      );
      call.catch((error: unknown) => {
        if ((error as TransportError).cause instanceof RequestBufferFullError) {
          refused ??= error as TransportError;
        }
      });
      taken++;
      if (i % 16 === 15) await sleep(1);
    }
    await sleep(20);
    expect(refused?.sent).toBe(false);
    const bound = refused!.cause as RequestBufferFullError;
    expect(bound.limit).toBe(limit);
    expect(bound.buffered).toBeLessThanOrEqual(limit);
    expect(taken).toBeLessThan(4096);
  });

  it('ends a stream whose write would go beyond the bound, naming the bound', async () => {
    const channel = await channelTo(CLOSED_WINDOWS, true, 5000);
    const stream = channel.bidiStream(etcdserverpb_Watch.Watch, {});
    const request = { createRequest: { key: Buffer.alloc(1500, 'k') } };
    for (let i = 0; i < 3; i++) {
      stream.write(request);
      await sleep(20);
    }
    stream.write(request);
    const error = await failureOf(
      (async () => {
        for await (const _ of stream) throw new Error('no response was expected');
      })(),
    );
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).code).toBe(GrpcStatus.Unavailable);
    expect((error as TransportError).cause).toBeInstanceOf(RequestBufferFullError);
    expect((error as TransportError).message).toMatch(
      /^the server is not taking this connection's requests: 45\d\d bytes wait .* bound of 5000 \(maxBufferedRequestBytes\)$/,
    );
  });

  it('fails a put beyond the bound, after the retries of an unsent call, with WriteNotAppliedError naming the bound', async () => {
    const port = await serverSending(CLOSED_WINDOWS, true, cleanups);
    const etcd = new Etcd({
      endpoints: [`http://127.0.0.1:${port}`],
      transport: make({ maxBufferedRequestBytes: 50_000 }),
    });
    cleanups.push(() => etcd.close());
    const held = [etcd.put('a', Buffer.alloc(20_000)), etcd.put('b', Buffer.alloc(20_000))];
    for (const put of held) put.catch(() => {});
    // Both on the wire first (a first attempt may fail and be retried), then the third.
    await sleep(500);
    const error = await failureOf(etcd.put('c', Buffer.alloc(20_000)));
    expect(error).toBeInstanceOf(WriteNotAppliedError);
    expect((error as Error).message).toMatch(
      /^the write was not applied: the server is not taking this connection's requests: .* bound of 50000 \(maxBufferedRequestBytes\)$/,
    );
  }, 60_000);

  it('refuses a bound that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => make({ maxBufferedRequestBytes: bad })).toThrow(InvalidConfigError);
    }
  });
});

it('defaults to 64 MiB', () => {
  expect(DEFAULT_MAX_BUFFERED_REQUEST_BYTES).toBe(64 * 1024 * 1024);
});
