// scan(): every key of a range once, in key order, at one revision; over RangeStream when the
// server has it, else over pages of Range pinned to the first page's revision.
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallOptions, RetryPolicy, Rpc } from '../../src/connection/types.js';
import {
  AbortedError,
  CompactedError,
  InvalidArgumentError,
  UnavailableError,
  UnimplementedError,
} from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import type { MethodDescriptor } from '../../src/generated/methods.js';
import type { KeyValue } from '../../src/key-value.js';
import { KV } from '../../src/kv/kv.js';
import { op } from '../../src/kv/op.js';
import type { ScanRequest } from '../../src/kv/scan.js';
import type { ServerStream } from '../../src/transport/types.js';
import { expectServerError, rejection } from './kv-support.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** Wraps an Rpc and records the name of every method called. */
class CountingRpc implements Rpc {
  readonly calls: string[] = [];
  constructor(private readonly inner: Rpc) {}
  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    retry: RetryPolicy,
    options?: CallOptions,
  ): Promise<Res> {
    this.calls.push(method.name);
    return this.inner.unary(method, request, retry, options);
  }
  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    request: Req,
    retry: RetryPolicy,
    options?: CallOptions,
  ): ServerStream<Res> {
    this.calls.push(method.name);
    return this.inner.serverStream(method, request, retry, options);
  }
  bidiStream<Req, Res>(method: MethodDescriptor<Req, Res, 'bidi-stream'>, options?: CallOptions) {
    return this.inner.bidiStream(method, options);
  }
}

async function collect(iterable: AsyncIterable<KeyValue>): Promise<KeyValue[]> {
  const out: KeyValue[] = [];
  for await (const kv of iterable) out.push(kv);
  return out;
}

describeEachBackend('scan', ({ backend, prefix }) => {
  let etcd: Etcd;
  const k = (name: string) => `${prefix()}${name}`;
  const keysOf = (kvs: readonly KeyValue[]) => kvs.map((kv) => kv.keyText().slice(prefix().length));

  /** Writes `count` keys `<name>/00000`... with values equal to their index, 128 per txn. */
  async function fill(name: string, count: number): Promise<bigint> {
    let revision = 0n;
    for (let start = 0; start < count; start += 128) {
      const ops = [];
      for (let i = start; i < Math.min(count, start + 128); i++) {
        ops.push(op.put(k(`${name}/${String(i).padStart(5, '0')}`), String(i)));
      }
      revision = (
        await etcd
          .txn()
          .then(...ops)
          .commit()
      ).header.revision;
    }
    return revision;
  }

  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('yields each of 2,500 keys once, in order, at one revision while a writer changes the range', async () => {
    const filled = await fill('big', 2500);
    const scan = etcd.scan({ prefix: k('big/'), pageSize: 100 });
    const seen: KeyValue[] = [];
    let writes = 0;
    for await (const kv of scan) {
      seen.push(kv);
      if (seen.length % 250 === 1) {
        // New keys inside the range (before and after the cursor), a change and a delete of keys
        // not yet reached: none of it may show.
        const n = seen.length;
        await etcd.put(k(`big/${String(n).padStart(5, '0')}a`), 'new');
        await etcd.put(k('big/0'), 'new-before-cursor');
        await etcd.put(k(`big/${String(Math.min(n + 300, 2499)).padStart(5, '0')}`), 'changed');
        await etcd.delete(k(`big/${String(Math.min(n + 400, 2499)).padStart(5, '0')}`));
        writes += 4;
      }
    }
    expect(writes).toBe(40);
    expect(scan.revision).toBe(filled);
    expect(seen).toHaveLength(2500);
    const expected = Array.from({ length: 2500 }, (_, i) => `big/${String(i).padStart(5, '0')}`);
    expect(keysOf(seen)).toEqual(expected);
    expect(seen.map((kv) => kv.text())).toEqual(expected.map((_, i) => String(i)));
    expect(seen.every((kv) => kv.modRevision <= filled)).toBe(true);
    // The writes did happen: a new scan sees them.
    const after = await collect(etcd.scan({ prefix: k('big/'), pageSize: 1000 }));
    expect(after.length).toBe(2500 + 10 + 1 - 10);
  });

  it('without RangeStream, pages of Range are used and the fallback is remembered', async () => {
    await fill('fb', 25);
    const rpc = new CountingRpc(etcd.connection);
    const kv = new KV(rpc);
    const first = await collect(kv.scan({ prefix: k('fb/'), pageSize: 10 }));
    const second = await collect(kv.scan({ prefix: k('fb/'), pageSize: 10 }));
    expect(first).toHaveLength(25);
    expect(keysOf(second)).toEqual(keysOf(first));
    if (backend().features.rangeStream) {
      expect(rpc.calls).toEqual(['RangeStream', 'RangeStream']);
    } else {
      expect(rpc.calls).toEqual([
        'RangeStream',
        'Range',
        'Range',
        'Range',
        'Range',
        'Range',
        'Range',
      ]);
    }
  });

  it('a page size equal to the number of keys needs no extra page', async () => {
    await fill('exact', 10);
    const rpc = new CountingRpc(etcd.connection);
    const kv = new KV(rpc);
    await collect(kv.scan({ prefix: k('exact/'), pageSize: 10 }));
    rpc.calls.length = 0;
    expect(await collect(kv.scan({ prefix: k('exact/'), pageSize: 10 }))).toHaveLength(10);
    expect(rpc.calls).toEqual(backend().features.rangeStream ? ['RangeStream'] : ['Range']);
  });

  it('breaking out of the loop stops the scan; nothing more is requested', async () => {
    await fill('brk', 30);
    const rpc = new CountingRpc(etcd.connection);
    const kv = new KV(rpc);
    await collect(kv.scan({ key: k('warm-up') }));
    rpc.calls.length = 0;
    const seen: string[] = [];
    for await (const item of kv.scan({ prefix: k('brk/'), pageSize: 10 })) {
      seen.push(item.keyText());
      if (seen.length === 3) break;
    }
    expect(seen).toHaveLength(3);
    expect(rpc.calls).toEqual(backend().features.rangeStream ? ['RangeStream'] : ['Range']);
    // The client is still fine afterwards.
    expect(await etcd.count({ prefix: k('brk/') })).toBe(30n);
  });

  it('an aborted signal ends the scan with AbortedError', async () => {
    await fill('ab', 30);
    const controller = new AbortController();
    const seen: string[] = [];
    const error = await rejection(
      (async () => {
        for await (const item of etcd.scan({
          prefix: k('ab/'),
          pageSize: 10,
          signal: controller.signal,
        })) {
          seen.push(item.keyText());
          if (seen.length === 12) controller.abort(new Error('enough'));
        }
      })(),
    );
    expect(error).toBeInstanceOf(AbortedError);
    expect((error as AbortedError).cause).toEqual(new Error('enough'));
    expect(seen.length).toBeLessThan(30);
    const already = await rejection(
      collect(etcd.scan({ prefix: k('ab/'), signal: AbortSignal.abort() })),
    );
    expect(already).toBeInstanceOf(AbortedError);
  });

  it('reads at a requested revision, keys only, or an empty range', async () => {
    const old = await fill('rv', 5);
    await etcd.put(k('rv/00000'), 'changed');
    await etcd.put(k('rv/00009'), 'new');
    const scan = etcd.scan({ prefix: k('rv/'), revision: old, pageSize: 2 });
    expect(scan.revision).toBe(old);
    const atOld = await collect(scan);
    expect(keysOf(atOld)).toEqual(['rv/00000', 'rv/00001', 'rv/00002', 'rv/00003', 'rv/00004']);
    expect(atOld[0]?.text()).toBe('0');
    const keysOnly = await collect(etcd.scan({ prefix: k('rv/'), keysOnly: true, pageSize: 4 }));
    expect(keysOnly).toHaveLength(6);
    expect(keysOnly.every((kv) => kv.value.length === 0)).toBe(true);
    expect(keysOnly[0]?.version).toBe(2n);
    const empty = etcd.scan({ prefix: k('nothing/') });
    expect(await collect(empty)).toEqual([]);
    expect(typeof empty.revision).toBe('bigint');
    const single = await collect(etcd.scan({ key: k('rv/00001') }));
    expect(keysOf(single)).toEqual(['rv/00001']);
    const half = await collect(etcd.scan({ key: k('rv/00001'), end: k('rv/00003'), pageSize: 1 }));
    expect(keysOf(half)).toEqual(['rv/00001', 'rv/00002']);
  });

  it('binary keys continue after the last key of a page', async () => {
    const base = bytes(k('bin/'));
    const keys = [[0x00], [0x00, 0x00], [0x00, 0x01], [0x7f], [0xff], [0xff, 0xff]].map(
      (tail) => new Uint8Array([...base, ...tail]),
    );
    for (const key of keys) await etcd.put(key, 'v');
    const seen = await collect(etcd.scan({ prefix: base, pageSize: 1 }));
    expect(seen.map((kv) => kv.key)).toEqual(keys);
  });
});

describeEachBackend('scan across a compaction', ({ backend }) => {
  it('fails with CompactedError when the pinned revision is compacted between pages', async (ctx) => {
    // A stream may deliver everything before the compaction lands: only paging is deterministic.
    if (backend().features.rangeStream) ctx.skip();
    const etcd = new Etcd({ endpoints: backend().endpoints });
    try {
      for (let i = 0; i < 20; i++) await etcd.put(`c/${String(i).padStart(2, '0')}`, 'v');
      const seen: string[] = [];
      const error = await rejection(
        (async () => {
          for await (const kv of etcd.scan({ prefix: 'c/', pageSize: 5 })) {
            seen.push(kv.keyText());
            if (seen.length === 5) {
              const put = await etcd.put('c/00', 'again');
              await etcd.compact(put.header.revision);
            }
          }
        })(),
      );
      expectServerError(error, CompactedError);
      expect(seen).toHaveLength(5);
    } finally {
      await etcd.close();
    }
  });
});

/** A fake server: RangeStream answers `chunks` (or fails), Range answers from `keys`. */
class FakeRpc implements Rpc {
  readonly calls: string[] = [];
  cancelled = 0;
  constructor(
    private readonly stream: { chunks?: unknown[]; failFirst?: Error; failAfter?: Error },
    private readonly keys: string[] = [],
  ) {}

  async unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    _retry: RetryPolicy,
  ): Promise<Res> {
    this.calls.push(method.name);
    const r = request as { key: Uint8Array; limit: bigint; revision: bigint };
    const from = text(r.key);
    const matching = this.keys.filter((key) => key >= from);
    const page = matching.slice(0, Number(r.limit));
    return {
      header: { revision: r.revision || 42n },
      kvs: page.map((key) => ({ key: bytes(key), value: bytes('v') })),
      more: matching.length > page.length,
      count: BigInt(matching.length),
    } as Res;
  }

  serverStream<Req, Res>(method: MethodDescriptor<Req, Res, 'server-stream'>): ServerStream<Res> {
    this.calls.push(method.name);
    const { chunks = [], failFirst, failAfter } = this.stream;
    const fake = this;
    return {
      cancel() {
        fake.cancelled++;
      },
      async *[Symbol.asyncIterator]() {
        if (failFirst) throw failFirst;
        for (const chunk of chunks) yield chunk as Res;
        if (failAfter) throw failAfter;
      },
    };
  }

  bidiStream(): never {
    throw new Error('not used');
  }
}

const chunk = (keys: string[], last?: { revision: bigint; count: bigint }) => ({
  rangeResponse: {
    kvs: keys.map((key) => ({ key: bytes(key), value: bytes('v'), modRevision: 3n })),
    ...(last ? { header: { revision: last.revision }, count: last.count } : {}),
  },
});

describe('scan over RangeStream (fake server)', () => {
  it('yields the chunks in order and learns the revision from the last one', async () => {
    const rpc = new FakeRpc({
      chunks: [chunk(['a', 'b']), chunk([]), chunk(['c'], { revision: 9n, count: 3n })],
    });
    const scan = new KV(rpc).scan({ all: true });
    expect(scan.revision).toBeUndefined();
    const seen = await collect(scan);
    expect(seen.map((kv) => kv.keyText())).toEqual(['a', 'b', 'c']);
    expect(scan.revision).toBe(9n);
    expect(rpc.calls).toEqual(['RangeStream']);
    expect(rpc.cancelled).toBe(0);
  });

  it('cancels the stream when the loop breaks', async () => {
    const rpc = new FakeRpc({
      chunks: [chunk(['a', 'b']), chunk(['c'], { revision: 9n, count: 3n })],
    });
    for await (const kv of new KV(rpc).scan({ prefix: '' })) {
      expect(kv.keyText()).toBe('a');
      break;
    }
    expect(rpc.cancelled).toBe(1);
  });

  it('falls back to pages on Unimplemented, once per client (namespaces included)', async () => {
    const rpc = new FakeRpc({ failFirst: new UnimplementedError() }, ['a', 'b', 'c', 'd', 'e']);
    const kv = new KV(rpc);
    const scan = kv.scan({ fromKey: 'b', pageSize: 2 });
    expect((await collect(scan)).map((x) => x.keyText())).toEqual(['b', 'c', 'd', 'e']);
    expect(scan.revision).toBe(42n);
    expect(rpc.calls).toEqual(['RangeStream', 'Range', 'Range']);
    rpc.calls.length = 0;
    await collect(kv.namespace('x').scan({ all: true }));
    expect(rpc.calls).toEqual(['Range']);
  });

  it('does not fall back on other errors, or on Unimplemented after data arrived', async () => {
    const unavailable = new FakeRpc({ failFirst: new UnavailableError() }, ['a']);
    expect(await rejection(collect(new KV(unavailable).scan({ all: true })))).toBeInstanceOf(
      UnavailableError,
    );
    expect(unavailable.calls).toEqual(['RangeStream']);
    const late = new FakeRpc({ chunks: [chunk(['a'])], failAfter: new UnimplementedError() }, [
      'a',
    ]);
    const lateKv = new KV(late);
    expect(await rejection(collect(lateKv.scan({ all: true })))).toBeInstanceOf(UnimplementedError);
    expect(late.calls).toEqual(['RangeStream']);
    // Not taken for a server without RangeStream: the next scan asks for the stream again.
    await rejection(collect(lateKv.scan({ all: true })));
    expect(late.calls).toEqual(['RangeStream', 'RangeStream']);
  });

  it('rejects sorting, limits, counting and filters before sending anything', () => {
    const rpc = new FakeRpc({});
    const kv = new KV(rpc);
    for (const extra of [
      { sort: { target: 'mod' } },
      { limit: 5 },
      { countOnly: true },
      { minModRevision: 1n },
      { maxModRevision: 1n },
      { minCreateRevision: 1n },
      { maxCreateRevision: 1n },
      { pageSize: 0 },
      { pageSize: -1 },
      { pageSize: 1.5 },
    ]) {
      expect(() => kv.scan({ prefix: 'a', ...extra } as ScanRequest)).toThrow(InvalidArgumentError);
    }
    expect(rpc.calls).toEqual([]);
  });
});
