import { PassThrough } from 'node:stream';
import { type EtcdProcess, freePort, startBlackHole, startEtcd } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  etcdserverpb_KV,
  etcdserverpb_Maintenance,
  etcdserverpb_Watch,
} from '../src/generated/methods.js';
import { GrpcJsTransport } from '../src/transport/grpc-js.js';
import { readableToAsyncIterator } from '../src/transport/stream-reader.js';
import { GrpcStatus, TransportError } from '../src/transport/types.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const transport = new GrpcJsTransport();
const target = (endpoint: string) => new URL(endpoint).host;

async function rejection(promise: Promise<unknown>): Promise<TransportError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TransportError);
  return error as TransportError;
}

describe('GrpcJsTransport', () => {
  let etcd: EtcdProcess;

  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterAll(async () => {
    await etcd?.stop();
  });

  it('is named grpc-js and opens lazily', () => {
    expect(transport.name).toBe('grpc-js');
    const channel = transport.open({ target: target(etcd.endpoint) });
    expect(channel.state()).toBe('idle');
    channel.close();
    expect(channel.state()).toBe('closed');
  });

  it('connects with ready() and round-trips a unary call', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      await channel.ready(Date.now() + 5_000);
      expect(channel.state()).toBe('ready');
      await channel.unary(etcdserverpb_KV.Put, { key: bytes('t'), value: bytes('1') }, {});
      const res = await channel.unary(etcdserverpb_KV.Range, { key: bytes('t') }, {});
      expect(res.kvs[0]?.version).toBe(1n);
    } finally {
      channel.close();
    }
  });

  it('marks failures before any connection as unsent', async () => {
    const channel = transport.open({ target: `127.0.0.1:${await freePort()}` });
    try {
      const ready = await rejection(channel.ready(Date.now() + 5_000));
      expect(ready.code).toBe(GrpcStatus.Unavailable);
      expect(ready.sent).toBe(false);
      expect(ready.details).toMatch(/ECONNREFUSED/);
      // A call started without a connection fails in grpc-js's picker: provably unsent too.
      const call = await rejection(
        channel.unary(etcdserverpb_KV.Put, { key: bytes('t'), value: bytes('1') }, {}),
      );
      expect(call.code).toBe(GrpcStatus.Unavailable);
      expect(call.sent).toBe(false);
    } finally {
      channel.close();
    }
  });

  it('gives ready() a real deadline against a server that never answers', async () => {
    const hole = await startBlackHole();
    const channel = transport.open({ target: target(hole.endpoint) });
    try {
      const started = Date.now();
      const error = await rejection(channel.ready(Date.now() + 300));
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(error.code).toBe(GrpcStatus.Unavailable);
      expect(error.sent).toBe(false);
    } finally {
      channel.close();
      await hole.close();
    }
  });

  it('marks failures after the call reached a ready channel as sent', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      await channel.ready(Date.now() + 5_000);
      await etcd.pause();
      const error = await rejection(
        channel.unary(
          etcdserverpb_KV.Put,
          { key: bytes('t'), value: bytes('2') },
          { deadline: Date.now() + 200 },
        ),
      );
      expect(error.code).toBe(GrpcStatus.DeadlineExceeded);
      expect(error.sent).toBe(true);
    } finally {
      etcd.resume();
      channel.close();
    }
  });

  it('cancels a call on abort: Cancelled, cause = the reason', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      await channel.ready(Date.now() + 5_000);
      const controller = new AbortController();
      const reason = new Error('no longer needed');
      await etcd.pause();
      const pending = channel.unary(
        etcdserverpb_KV.Range,
        { key: bytes('t') },
        { signal: controller.signal },
      );
      controller.abort(reason);
      const error = await rejection(pending);
      expect(error.code).toBe(GrpcStatus.Cancelled);
      expect(error.cause).toBe(reason);
      const before = await rejection(
        channel.unary(etcdserverpb_KV.Range, { key: bytes('t') }, { signal: controller.signal }),
      );
      expect(before.sent).toBe(false);
      expect(before.cause).toBe(reason);
    } finally {
      etcd.resume();
      channel.close();
    }
  });

  it('maps server errors with their status and details', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      const error = await rejection(
        channel.unary(etcdserverpb_KV.Put, { key: new Uint8Array(), value: bytes('x') }, {}),
      );
      expect(error.code).toBe(GrpcStatus.InvalidArgument);
      expect(error.details).toBe('etcdserver: key is not provided');
      expect(error.sent).toBe(true);
    } finally {
      channel.close();
    }
  });

  it('enforces the send size limit', async () => {
    const channel = transport.open({ target: target(etcd.endpoint), maxSendMessageBytes: 1024 });
    try {
      const error = await rejection(
        channel.unary(etcdserverpb_KV.Put, { key: bytes('big'), value: new Uint8Array(4096) }, {}),
      );
      expect(error.code).toBe(GrpcStatus.ResourceExhausted);
    } finally {
      channel.close();
    }
  });

  it('streams: server stream iterates, bidi writes after end() throw, cancel() ends with Cancelled', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      let chunks = 0;
      for await (const part of channel.serverStream(etcdserverpb_Maintenance.Snapshot, {}, {})) {
        expect(part.blob).toBeInstanceOf(Uint8Array);
        chunks++;
      }
      expect(chunks).toBeGreaterThan(0);

      const watch = channel.bidiStream(etcdserverpb_Watch.Watch, {});
      watch.write({ createRequest: { key: bytes('t') } });
      const it = watch[Symbol.asyncIterator]();
      expect((await it.next()).value?.created).toBe(true);
      watch.end();
      expect(() => watch.write({ createRequest: { key: bytes('u') } })).toThrow(TransportError);
      watch.cancel();
      const error = await it.next().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TransportError);
      expect((error as TransportError).code).toBe(GrpcStatus.Cancelled);
    } finally {
      channel.close();
    }
  });

  it('ends a stream with the TransportError when the server fails it', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      const error = await (async () => {
        for await (const _ of channel.serverStream(etcdserverpb_KV.RangeStream, {}, {})) {
          // etcd 3.4 has no RangeStream
        }
      })().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TransportError);
      expect((error as TransportError).code).toBe(GrpcStatus.Unimplemented);
    } finally {
      channel.close();
    }
  });
});

describe('readableToAsyncIterator', () => {
  it('pauses the source while the consumer lags, and resumes it', async () => {
    const source = new PassThrough({ objectMode: true, highWaterMark: 1_000 });
    const it = readableToAsyncIterator<number>(
      source,
      (e) => e as Error,
      () => {},
      4,
    );
    for (let i = 0; i < 10; i++) source.write(i);
    await new Promise((r) => setImmediate(r));
    expect(source.isPaused()).toBe(true);
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) seen.push((await it.next()).value as number);
    source.end();
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      seen.push(r.value);
    }
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('delivers buffered messages before the error, then throws it once', async () => {
    const source = new PassThrough({ objectMode: true });
    let done = 0;
    const it = readableToAsyncIterator<string>(
      source,
      (e) => new Error(`mapped: ${(e as Error).message}`),
      () => done++,
    );
    source.write('a');
    source.write('b');
    source.push(null);
    source.emit('error', new Error('boom'));
    expect((await it.next()).value).toBe('a');
    expect((await it.next()).value).toBe('b');
    await expect(it.next()).rejects.toThrow('mapped: boom');
    expect((await it.next()).done).toBe(true);
    expect(done).toBe(1);
  });

  it('runs onDone once on early return', async () => {
    const source = new PassThrough({ objectMode: true });
    let done = 0;
    const it = readableToAsyncIterator<string>(
      source,
      (e) => e as Error,
      () => done++,
    );
    source.write('a');
    await it.next();
    await it.return?.();
    await it.return?.();
    expect(done).toBe(1);
  });
});
