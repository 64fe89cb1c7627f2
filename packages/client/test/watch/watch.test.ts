// Watch: event shapes, history, selections, filters, namespaces, compaction, closing, the shared
// stream and backpressure, against every backend.
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { AbortedError, CompactedError, EtcdError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import { KV } from '../../src/kv/kv.js';
import { op } from '../../src/kv/op.js';
import { GrpcJsTransport } from '../../src/transport/grpc-js.js';
import type { Channel, Transport } from '../../src/transport/types.js';
import { WatchCompactedError } from '../../src/watch/errors.js';
import type { WatchEvent } from '../../src/watch/types.js';
import {
  describeEvents,
  envCount,
  nextWithin,
  recordingRpc,
  streamLog,
  takeEvents,
  waitFor,
} from './watch-support.js';

const bytes = (s: string) => new TextEncoder().encode(s);

/** The fields of a key-value, for exact comparison. */
function fields(kv: WatchEvent['kv'] | undefined) {
  return (
    kv && {
      key: kv.keyText(),
      value: kv.text(),
      createRevision: kv.createRevision,
      modRevision: kv.modRevision,
      version: kv.version,
      lease: kv.lease,
    }
  );
}

describeEachBackend('watch', ({ backend, prefix }) => {
  let etcd: Etcd;

  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('delivers puts and deletes with exact key-values and prevKv, one batch per revision', async () => {
    const p = prefix();
    const watcher = etcd.watch({ prefix: p, prevKv: true });
    try {
      const created = await watcher.ready();
      const r1 = (await etcd.put(`${p}a`, 'v1')).header.revision;
      const r2 = (await etcd.put(`${p}a`, 'v2')).header.revision;
      const r3 = (await etcd.delete(`${p}a`)).header.revision;
      expect(created).toBe(r1 - 1n);
      const batches = await takeEvents(watcher[Symbol.asyncIterator](), 3);
      expect(batches.map((b) => [b.revision, b.header.revision, b.events.length])).toEqual([
        [r1, r1, 1],
        [r2, r2, 1],
        [r3, r3, 1],
      ]);
      const [put1, put2, del] = batches.map((b) => b.events[0]!);
      expect(put1!.type).toBe('put');
      expect(fields(put1!.kv)).toEqual({
        key: `${p}a`,
        value: 'v1',
        createRevision: r1,
        modRevision: r1,
        version: 1n,
        lease: 0n,
      });
      expect(put1!.prevKv).toBeUndefined();
      expect(put2!.type).toBe('put');
      expect(fields(put2!.kv)).toEqual({
        key: `${p}a`,
        value: 'v2',
        createRevision: r1,
        modRevision: r2,
        version: 2n,
        lease: 0n,
      });
      expect(fields(put2!.prevKv)).toEqual(fields(put1!.kv));
      expect(del!.type).toBe('delete');
      // A delete event's kv holds only the key and the revision of the deletion.
      expect(fields(del!.kv)).toEqual({
        key: `${p}a`,
        value: '',
        createRevision: 0n,
        modRevision: r3,
        version: 0n,
        lease: 0n,
      });
      expect(fields(del!.prevKv)).toEqual(fields(put2!.kv));
      expect(watcher.revision).toBe(r3);
      expect(del!.kv.key).toBeInstanceOf(Uint8Array);
    } finally {
      await watcher.close();
    }
  });

  it('replays history from a start revision, then delivers live changes', async () => {
    const p = prefix();
    const r1 = (await etcd.put(`${p}k`, '1')).header.revision;
    await etcd.put(`${p}k`, '2');
    await etcd.put(`${p}other`, 'x');
    const r4 = (await etcd.put(`${p}k`, '3')).header.revision;
    const watcher = etcd.watch({ key: `${p}k`, startRevision: r1 + 1n });
    try {
      expect(await watcher.ready()).toBe(r4);
      const iterator = watcher[Symbol.asyncIterator]();
      const history = await takeEvents(iterator, 2);
      const r5 = (await etcd.put(`${p}k`, '4')).header.revision;
      const live = await takeEvents(iterator, 1);
      expect(describeEvents([...history, ...live])).toEqual([
        `${r1 + 1n} put ${p}k=2`,
        `${r4} put ${p}k=3`,
        `${r5} put ${p}k=4`,
      ]);
      // Replayed batches carry the store revision of the response, live ones their own.
      expect(history.every((b) => b.header.revision >= r4)).toBe(true);
      expect(live[0]!.header.revision).toBe(r5);
    } finally {
      await watcher.close();
    }
  });

  it('a start revision in the future delivers nothing before it', async () => {
    const p = prefix();
    const now = (await etcd.put(`${p}k`, '0')).header.revision;
    const watcher = etcd.watch({ key: `${p}k`, startRevision: now + 3n });
    try {
      expect(await watcher.ready()).toBe(now);
      for (const value of ['1', '2', '3', '4']) await etcd.put(`${p}k`, value);
      const batches = await takeEvents(watcher[Symbol.asyncIterator](), 2);
      expect(describeEvents(batches)).toEqual([
        `${now + 3n} put ${p}k=3`,
        `${now + 4n} put ${p}k=4`,
      ]);
    } finally {
      await watcher.close();
    }
  });

  it('filters: noPut delivers only deletes, noDelete only puts', async () => {
    const p = prefix();
    const deletes = etcd.watch({ prefix: p, filters: ['noPut'] });
    const puts = etcd.watch({ prefix: p, filters: ['noDelete'] });
    try {
      await Promise.all([deletes.ready(), puts.ready()]);
      const a = (await etcd.put(`${p}a`, '1')).header.revision;
      const b = (await etcd.delete(`${p}a`)).header.revision;
      const c = (await etcd.put(`${p}b`, '2')).header.revision;
      const d = (await etcd.delete(`${p}b`)).header.revision;
      expect(describeEvents(await takeEvents(deletes[Symbol.asyncIterator](), 2))).toEqual([
        `${b} delete ${p}a=`,
        `${d} delete ${p}b=`,
      ]);
      expect(describeEvents(await takeEvents(puts[Symbol.asyncIterator](), 2))).toEqual([
        `${a} put ${p}a=1`,
        `${c} put ${p}b=2`,
      ]);
    } finally {
      await Promise.all([deletes.close(), puts.close()]);
    }
  });

  it('key, prefix, range, { key, end } and fromKey watches select exactly their keys', async () => {
    const p = prefix();
    const watchers = {
      key: etcd.watch({ key: `${p}b1` }),
      prefix: etcd.watch({ prefix: `${p}b` }),
      range: etcd.watch({ range: { start: `${p}b2`, end: `${p}d` } }),
      keyEnd: etcd.watch({ key: `${p}b2`, end: `${p}d` }),
      fromKey: etcd.watch({ fromKey: `${p}c` }),
    };
    const all = Object.values(watchers);
    try {
      await Promise.all(all.map((w) => w.ready()));
      const keys = ['a', 'b1', 'b2', 'c', 'd', 'e'];
      for (const key of keys) await etcd.put(`${p}${key}`, key);
      const seen = async (watcher: (typeof all)[number], n: number) =>
        describeEvents(await takeEvents(watcher[Symbol.asyncIterator](), n)).map(
          (line) => line.split(' ')[2]!.split('=')[1],
        );
      expect(await seen(watchers.key, 1)).toEqual(['b1']);
      expect(await seen(watchers.prefix, 2)).toEqual(['b1', 'b2']);
      expect(await seen(watchers.range, 2)).toEqual(['b2', 'c']);
      expect(await seen(watchers.keyEnd, 2)).toEqual(['b2', 'c']);
      expect(await seen(watchers.fromKey, 3)).toEqual(['c', 'd', 'e']);
      // Nothing beyond what each selects arrived.
      for (const watcher of all) expect(watcher.bufferedEvents).toBe(0);
    } finally {
      await Promise.all(all.map((w) => w.close()));
    }
  });

  it('all events of one revision arrive as one batch, in the txn order', async () => {
    const p = prefix();
    await etcd.put(`${p}gone`, 'x');
    const watcher = etcd.watch({ prefix: p });
    try {
      await watcher.ready();
      const result = await etcd
        .txn()
        .then(
          op.put(`${p}z`, '1'),
          op.put(`${p}a`, '2'),
          op.delete(`${p}gone`),
          op.put(`${p}m`, '3'),
        )
        .commit();
      const [batch] = await takeEvents(watcher[Symbol.asyncIterator](), 4);
      expect(batch!.revision).toBe(result.header.revision);
      expect(describeEvents([batch!])).toEqual([
        `${result.header.revision} put ${p}z=1`,
        `${result.header.revision} put ${p}a=2`,
        `${result.header.revision} delete ${p}gone=`,
        `${result.header.revision} put ${p}m=3`,
      ]);
    } finally {
      await watcher.close();
    }
  });

  it('a namespaced watch sees keys relative to its prefix and nothing outside it, on the shared stream', async () => {
    const p = prefix();
    const log = streamLog();
    const client = new Etcd({ endpoints: backend().endpoints, watch: { hooks: log.hooks } });
    try {
      const ns = client.namespace(`${p}ns/`);
      const inside = ns.watch({ prefix: 'a', prevKv: true });
      const everything = ns.watch({ all: true });
      const root = client.watch({ prefix: p });
      await Promise.all([inside.ready(), everything.ready(), root.ready()]);
      await client.put(`${p}outside`, 'no');
      await client.put(`${p}ns`, 'the prefix itself is outside');
      const r1 = (await ns.put('a1', 'x')).header.revision;
      const r2 = (await client.put(`${p}ns/a1`, 'y')).header.revision;
      const r3 = (await ns.put('b', 'z')).header.revision;
      expect(describeEvents(await takeEvents(inside[Symbol.asyncIterator](), 2))).toEqual([
        `${r1} put a1=x`,
        `${r2} put a1=y`,
      ]);
      const all = await takeEvents(everything[Symbol.asyncIterator](), 3);
      expect(describeEvents(all)).toEqual([`${r1} put a1=x`, `${r2} put a1=y`, `${r3} put b=z`]);
      expect(all[1]!.events[0]!.kv.key).toEqual(bytes('a1'));
      expect(describeEvents(await takeEvents(root[Symbol.asyncIterator](), 5)).slice(2)).toEqual([
        `${r1} put ${p}ns/a1=x`,
        `${r2} put ${p}ns/a1=y`,
        `${r3} put ${p}ns/b=z`,
      ]);
      expect(log.opened).toBe(1);
      await Promise.all([inside.close(), everything.close(), root.close()]);
    } finally {
      await client.close();
    }
  });

  it('compaction of the start revision ends the watcher with WatchCompactedError and the compact revision', async () => {
    const p = prefix();
    const r1 = (await etcd.put(`${p}k`, '1')).header.revision;
    await etcd.put(`${p}k`, '2');
    const r3 = (await etcd.put(`${p}k`, '3')).header.revision;
    await etcd.compact(r3);
    const errors: EtcdError[] = [];
    let ended = false;
    const watcher = etcd.watch({ key: `${p}k`, startRevision: r1 + 1n });
    watcher.on('error', (e) => errors.push(e));
    watcher.on('end', () => {
      ended = true;
    });
    const failure = await nextWithin(watcher[Symbol.asyncIterator](), 10_000).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(WatchCompactedError);
    expect(failure).toBeInstanceOf(CompactedError);
    expect(failure).toMatchObject({
      code: 'COMPACTED',
      name: 'WatchCompactedError',
      compactRevision: r3,
      startRevision: r1 + 1n,
    });
    expect(errors).toEqual([failure]);
    expect(ended).toBe(true);
    expect(watcher.closed).toBe(true);
    // At the compaction revision itself the history is still there.
    const at = etcd.watch({ key: `${p}k`, startRevision: r3 });
    try {
      expect(describeEvents(await takeEvents(at[Symbol.asyncIterator](), 1))).toEqual([
        `${r3} put ${p}k=3`,
      ]);
    } finally {
      await at.close();
    }
  });

  it('emits put, delete and batch events; end removes every listener', async () => {
    const p = prefix();
    const seen: string[] = [];
    const watcher = etcd.watch({ prefix: p });
    watcher.on('batch', (batch) => seen.push(`batch ${batch.events.length}`));
    watcher.on('put', (event, batch) => seen.push(`put ${event.kv.keyText()} ${batch.revision}`));
    watcher.on('delete', (event) => seen.push(`delete ${event.kv.keyText()}`));
    watcher.on('end', () => seen.push('end'));
    await watcher.ready();
    const r1 = (await etcd.put(`${p}a`, '1')).header.revision;
    await etcd.delete(`${p}a`);
    await waitFor(() => seen.length === 4, 10_000, 'two batches');
    expect(seen).toEqual([`batch 1`, `put ${p}a ${r1}`, 'batch 1', `delete ${p}a`]);
    // A watcher consumed through events holds nothing for an iterator.
    expect(watcher.bufferedEvents).toBe(0);
    await watcher.close();
    expect(seen.at(-1)).toBe('end');
    expect(watcher.eventNames()).toEqual([]);
  });

  it('close() ends iteration; with idleStreamMs 0 the stream closes with the last watcher and reopens for the next', async () => {
    const p = prefix();
    const log = streamLog();
    const client = new Etcd({
      endpoints: backend().endpoints,
      watch: { idleStreamMs: 0, hooks: log.hooks },
    });
    try {
      const first = client.watch({ key: `${p}a` });
      const second = client.watch({ key: `${p}b` });
      await Promise.all([first.ready(), second.ready()]);
      const iterator = first[Symbol.asyncIterator]();
      const pending = iterator.next();
      await first.close();
      expect(await pending).toEqual({ done: true, value: undefined });
      expect(await iterator.next()).toEqual({ done: true, value: undefined });
      expect(log.open()).toBe(1);
      await second.close();
      await waitFor(() => log.closed === 1, 5_000, 'the stream to close');
      expect(log.reasons).toEqual(['idle']);
      const third = client.watch({ key: `${p}c` });
      await third.ready();
      expect(log.opened).toBe(2);
      const r = (await client.put(`${p}c`, 'again')).header.revision;
      expect(describeEvents(await takeEvents(third[Symbol.asyncIterator](), 1))).toEqual([
        `${r} put ${p}c=again`,
      ]);
      // Leaving a for-await loop closes the watcher (the last one: the stream closes too).
      await third.close();
      const fourth = client.watch({ key: `${p}d` });
      await fourth.ready();
      await client.put(`${p}d`, 'x');
      for await (const batch of fourth) {
        expect(batch.events[0]!.kv.text()).toBe('x');
        break;
      }
      expect(fourth.closed).toBe(true);
      await waitFor(() => log.closed === 3, 5_000, 'the stream to close again');
      expect(log.opened).toBe(3);
      expect(log.reasons).toEqual(['idle', 'idle', 'idle']);
    } finally {
      await client.close();
    }
  });

  it('by default the stream lingers after its last watcher: the next watcher reuses it', async () => {
    const p = prefix();
    const log = streamLog();
    const client = new Etcd({ endpoints: backend().endpoints, watch: { hooks: log.hooks } });
    try {
      const first = client.watch({ key: `${p}a` });
      await first.ready();
      await first.close();
      const second = client.watch({ key: `${p}b` });
      const created = await second.ready();
      const r1 = (await client.put(`${p}b`, 'one')).header.revision;
      const r2 = (await client.put(`${p}b`, 'two')).header.revision;
      expect(created).toBe(r1 - 1n);
      expect(describeEvents(await takeEvents(second[Symbol.asyncIterator](), 2))).toEqual([
        `${r1} put ${p}b=one`,
        `${r2} put ${p}b=two`,
      ]);
      expect(log.opened).toBe(1);
      expect(log.closed).toBe(0);
      await second.close();
    } finally {
      await client.close();
    }
  });

  it('a lingering stream closes with reason idle after idleStreamMs', async () => {
    const p = prefix();
    const log = streamLog();
    const client = new Etcd({
      endpoints: backend().endpoints,
      watch: { idleStreamMs: 50, hooks: log.hooks },
    });
    try {
      const watcher = client.watch({ key: `${p}a` });
      await watcher.ready();
      await watcher.close();
      await waitFor(() => log.closed === 1, 5_000, 'the lingering stream to close');
      expect(log.opened).toBe(1);
      expect(log.reasons).toEqual(['idle']);
      const next = client.watch({ key: `${p}b` });
      await next.ready();
      expect(log.opened).toBe(2);
      await next.close();
    } finally {
      await client.close();
    }
  });

  it('client.close() during the linger closes the stream at once with reason closed', async () => {
    const p = prefix();
    const log = streamLog();
    const client = new Etcd({
      endpoints: backend().endpoints,
      watch: { idleStreamMs: 60_000, hooks: log.hooks },
    });
    const watcher = client.watch({ key: `${p}a` });
    await watcher.ready();
    await watcher.close();
    expect(log.open()).toBe(1);
    await client.close();
    await waitFor(() => log.closed === 1, 5_000, 'the stream to close');
    expect(log.opened).toBe(1);
    expect(log.reasons).toEqual(['closed']);
  });

  it('after close nothing is left: no stream, no watch timer, no listener', async () => {
    const p = prefix();
    const log = streamLog();
    const made: Array<{ timer: NodeJS.Timeout; stack: string }> = [];
    const realSetTimeout = globalThis.setTimeout;
    const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((
      callback: () => void,
      ms?: number,
    ) => {
      const timer = realSetTimeout(callback, ms);
      made.push({ timer, stack: new Error().stack ?? '' });
      return timer;
    }) as typeof setTimeout);
    // Timers of the client's watch module still pending (neither fired nor cleared); an in-process
    // embedded server has a watch module of its own.
    const pending = () =>
      made.filter(
        ({ timer, stack }) =>
          stack.includes('/client/src/watch/') &&
          !(timer as unknown as { _destroyed: boolean })._destroyed,
      ).length;
    const client = new Etcd({
      endpoints: backend().endpoints,
      watch: { progressIntervalMs: 50, stallTimeoutMs: 5_000, hooks: log.hooks },
    });
    try {
      const controller = new AbortController();
      const watcher = client.watch({ prefix: p, signal: controller.signal });
      watcher.on('put', () => {});
      watcher.on('progress', () => {});
      await watcher.ready();
      // Long enough for the liveness probe to run.
      await new Promise((resolve) => realSetTimeout(resolve, 200));
      expect(pending()).toBe(1);
      controller.abort();
      expect(watcher.eventNames()).toEqual([]);
      await waitFor(() => log.open() === 0, 5_000, 'the stream to close');
      expect(pending()).toBe(0);
    } finally {
      spy.mockRestore();
      await client.close();
    }
  });

  it('an abort signal ends iteration cleanly; ready() rejects with AbortedError when not yet created', async () => {
    const p = prefix();
    const controller = new AbortController();
    const watcher = etcd.watch({ key: `${p}a`, signal: controller.signal });
    await watcher.ready();
    const iterator = watcher[Symbol.asyncIterator]();
    const pending = iterator.next();
    controller.abort(new Error('stop'));
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(watcher.closed).toBe(true);

    const early = new AbortController();
    const unborn = etcd.watch({ key: `${p}b`, signal: early.signal });
    early.abort();
    const error = await unborn.ready().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortedError);

    const dead = etcd.watch({ key: `${p}c`, signal: AbortSignal.abort() });
    expect(dead.closed).toBe(true);
    expect(await dead[Symbol.asyncIterator]().next()).toEqual({ done: true, value: undefined });
    await expect(dead.ready()).rejects.toBeInstanceOf(AbortedError);
  });

  it('rejects bad requests at once with InvalidArgumentError or EmptyKeyError', () => {
    expect(() => etcd.watch({} as never)).toThrow(/one of key, prefix, fromKey or all/);
    expect(() => etcd.watch({ key: 'a', prefix: 'b' } as never)).toThrow(EtcdError);
    expect(() => etcd.watch({ key: 'a', startRevision: 1 as never })).toThrow(/bigint/);
    expect(() => etcd.watch({ key: 'a', filters: ['noGet' as never] })).toThrow(/noPut/);
    expect(() => etcd.watch({ key: 'a', maxBufferedEvents: 0 })).toThrow(/maxBufferedEvents/);
    expect(() => etcd.watch({ key: '' })).toThrow(expect.objectContaining({ code: 'EMPTY_KEY' }));
    expect(() => etcd.watch({ key: 'a', bogus: true } as never)).toThrow(/unknown watch option/);
  });

  it('creations are pipelined: each is sent before any earlier one is answered', async () => {
    const p = prefix();
    const client = new Etcd({ endpoints: backend().endpoints });
    // The KV API over the same connection, with Watch streams that record what crosses them.
    const { rpc, wire } = recordingRpc(client.connection);
    const writes = wire.log;
    const kv = new KV(rpc);
    try {
      const first = kv.watch({ key: `${p}0` });
      await first.ready();
      writes.length = 0;
      const watchers = Array.from({ length: 50 }, (_, i) => kv.watch({ key: `${p}${i + 1}` }));
      // Sent synchronously, all of them, before a single answer could be read.
      expect(writes).toEqual(Array.from({ length: 50 }, () => 'create'));
      await Promise.all(watchers.map((w) => w.ready()));
      // Answers are matched by order: each watcher sees its own key.
      const r = (await client.put(`${p}37`, 'x')).header.revision;
      expect(describeEvents(await takeEvents(watchers[36]![Symbol.asyncIterator](), 1))).toEqual([
        `${r} put ${p}37=x`,
      ]);
      for (const [i, w] of watchers.entries()) if (i !== 36) expect(w.bufferedEvents).toBe(0);
      await Promise.all([first, ...watchers].map((w) => w.close()));
    } finally {
      await client.close();
    }
  });

  it('an iterator that is not consumed pauses its watch (bounded memory) and loses nothing', async () => {
    const p = prefix();
    const log = streamLog();
    const pauses: boolean[] = [];
    const client = new Etcd({
      endpoints: backend().endpoints,
      watch: {
        hooks: { ...log.hooks, onBackpressure: (event) => pauses.push(event.paused) },
      },
    });
    try {
      const slow = client.watch({ prefix: `${p}k`, maxBufferedEvents: 10 });
      const other = client.watch({ prefix: `${p}k` });
      const iterator = slow[Symbol.asyncIterator]();
      const otherIterator = other[Symbol.asyncIterator]();
      await Promise.all([slow.ready(), other.ready()]);
      const written: string[] = [];
      let maxBuffered = 0;
      for (let i = 0; i < 60; i++) {
        const r = (await client.put(`${p}k${i % 7}`, `${i}`)).header.revision;
        written.push(`${r} put ${p}k${i % 7}=${i}`);
        maxBuffered = Math.max(maxBuffered, slow.bufferedEvents);
      }
      // The other watcher on the same stream is not held back.
      expect(describeEvents(await takeEvents(otherIterator, 60))).toEqual(written);
      expect(pauses[0]).toBe(true);
      // Held events stay near the bound (a few more may be in flight when the pause is sent).
      expect(maxBuffered).toBeLessThan(30);
      const got = describeEvents(await takeEvents(iterator, 60));
      expect(got).toEqual(written);
      expect(pauses.filter((paused) => !paused).length).toBeGreaterThanOrEqual(1);
      expect(log.opened).toBe(1);
      await Promise.all([slow.close(), other.close()]);
    } finally {
      await client.close();
    }
  });

  it('require-leader: the watch stream is opened with hasleader metadata', async () => {
    const p = prefix();
    const metadata: Array<Readonly<Record<string, string>> | undefined> = [];
    const grpc = new GrpcJsTransport();
    const transport: Transport = {
      name: 'recording',
      open(options) {
        const channel = grpc.open(options);
        const recorded: Channel = {
          target: channel.target,
          state: () => channel.state(),
          ready: (deadline, signal) => channel.ready(deadline, signal),
          unary: (method, request, o) => channel.unary(method, request, o),
          serverStream: (method, request, o) => channel.serverStream(method, request, o),
          bidiStream: (method, o) => {
            if (method.path === '/etcdserverpb.Watch/Watch') metadata.push(o.metadata);
            return channel.bidiStream(method, o);
          },
          close: () => channel.close(),
        };
        return recorded;
      },
    };
    const client = new Etcd({ endpoints: backend().endpoints, requireLeader: true, transport });
    try {
      const watcher = client.watch({ key: `${p}a` });
      await watcher.ready();
      const r = (await client.put(`${p}a`, 'v')).header.revision;
      expect(describeEvents(await takeEvents(watcher[Symbol.asyncIterator](), 1))).toEqual([
        `${r} put ${p}a=v`,
      ]);
      expect(metadata).toEqual([{ hasleader: 'true' }]);
      await watcher.close();
    } finally {
      await client.close();
    }
  });
});

describeEachBackend('watch: many watchers', ({ backend, prefix }) => {
  const count = envCount('ETCDKIT_WATCH_MANY', 10_000);

  it(`${count} watchers on one client share one stream`, async () => {
    const p = prefix();
    const log = streamLog();
    const etcd = new Etcd({
      endpoints: backend().endpoints,
      watch: { idleStreamMs: 0, hooks: log.hooks },
    });
    try {
      const received = new Map<number, string>();
      const watchers = Array.from({ length: count }, (_, i) => {
        const watcher = etcd.watch({ key: `${p}${i}` });
        watcher.on('put', (event) => received.set(i, event.kv.text()));
        return watcher;
      });
      const created = await Promise.all(watchers.map((w) => w.ready()));
      expect(log.opened).toBe(1);
      expect(new Set(created).size).toBe(1);
      const picks = [0, 1, Math.floor(count / 2), count - 1];
      for (const i of picks) await etcd.put(`${p}${i}`, `v${i}`);
      await waitFor(() => received.size === picks.length, 10_000, 'the picked watchers');
      expect([...received.entries()].sort(([a], [b]) => a - b)).toEqual(
        picks.map((i) => [i, `v${i}`]),
      );
      await Promise.all(watchers.map((w) => w.close()));
      await waitFor(() => log.closed === 1, 10_000, 'the stream to close');
      expect(log.opened).toBe(1);
      expect(log.reasons).toEqual(['idle']);
    } finally {
      await etcd.close();
    }
  }, 120_000);
});
