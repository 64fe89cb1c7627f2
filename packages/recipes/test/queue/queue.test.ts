// Queue and PriorityQueue: Go's key layouts, order, waiting, exactly-once delivery under
// concurrent producers and consumers, and aborts that take nothing and leave no watch.
import { AbortedError, Etcd, InvalidArgumentError, type KV } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Dequeued } from '../../src/queue/claim.js';
import { PriorityQueue } from '../../src/queue/priority-queue.js';
import { Queue } from '../../src/queue/queue.js';
import { rejection, sleep, stillPending } from '../recipes-support.js';
import { StreamCounter } from '../watch-streams.js';

/** Dequeues until `total` items were taken by all consumers together. */
async function consumeAll(
  consumers: number,
  total: number,
  dequeue: (signal: AbortSignal) => Promise<Dequeued>,
): Promise<Dequeued[][]> {
  const taken: Dequeued[] = [];
  const done = new AbortController();
  const consumer = async () => {
    const mine: Dequeued[] = [];
    while (!done.signal.aborted) {
      try {
        const item = await dequeue(done.signal);
        mine.push(item);
        taken.push(item);
        if (taken.length === total) done.abort();
      } catch (error) {
        if (!(error instanceof AbortedError)) throw error;
      }
    }
    return mine;
  };
  return Promise.all(Array.from({ length: consumers }, consumer));
}

describeEachBackend('Queue', ({ backend, prefix }) => {
  let etcd: Etcd;
  const streams = new StreamCounter();

  beforeAll(() => {
    etcd = new Etcd({
      endpoints: backend().endpoints,
      watch: { idleStreamMs: 0, hooks: streams.hooks },
    });
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('enqueues at prefix/<unix nanoseconds> without a lease; dequeues oldest first', async () => {
    const queue = new Queue(etcd, `${prefix()}jobs`);
    const added = [await queue.enqueue('a'), await queue.enqueue('b'), await queue.enqueue('c')];
    for (const { key } of added) expect(key).toMatch(new RegExp(`^${prefix()}jobs/\\d{19}$`));
    const stored = await etcd.range({ prefix: `${prefix()}jobs/` });
    expect(stored.kvs.map((kv) => [kv.text(), kv.lease])).toEqual([
      ['a', 0n],
      ['b', 0n],
      ['c', 0n],
    ]);
    expect(stored.kvs.map((kv) => kv.modRevision)).toEqual(added.map((a) => a.header.revision));
    const taken = [await queue.dequeue(), await queue.dequeue(), await queue.dequeue()];
    expect(taken.map((t) => t.kv.text())).toEqual(['a', 'b', 'c']);
    expect(taken.map((t) => t.kv.keyText())).toEqual(added.map((a) => a.key));
    expect(await etcd.count({ prefix: `${prefix()}jobs/` })).toBe(0n);
  });

  it('serves by revision, not key name: an item written by another producer first is first', async () => {
    // What a Go producer writes: the same layout, its own clock.
    await etcd.put(`${prefix()}jobs/9999`, 'older');
    const queue = new Queue(etcd, `${prefix()}jobs`);
    await queue.enqueue('newer');
    expect((await queue.dequeue()).kv.text()).toBe('older');
    expect((await queue.dequeue()).kv.text()).toBe('newer');
  });

  it('only takes keys under prefix + "/"', async () => {
    await etcd.put(`${prefix()}jobs2/1`, 'another queue');
    const queue = new Queue(etcd, `${prefix()}jobs`);
    await queue.enqueue('mine');
    expect((await queue.dequeue()).kv.text()).toBe('mine');
    expect(await etcd.count({ prefix: `${prefix()}jobs2/` })).toBe(1n);
  });

  it('dequeue on an empty queue waits for the next item', async () => {
    const queue = new Queue(etcd, `${prefix()}jobs`);
    const waiting = queue.dequeue();
    expect(await stillPending(waiting, 200)).toBe(true);
    const added = await queue.enqueue('late');
    const taken = await waiting;
    expect(taken.kv.text()).toBe('late');
    expect(taken.header.revision).toBe(added.header.revision + 1n);
    await streams.expectAllClosed();
  });

  it('an abort while waiting rejects, takes nothing and leaves no watch', async () => {
    const queue = new Queue(etcd, `${prefix()}jobs`);
    const controller = new AbortController();
    const waiting = queue.dequeue({ signal: controller.signal });
    await sleep(100);
    controller.abort('enough');
    const error = await rejection(waiting);
    expect(error).toBeInstanceOf(AbortedError);
    await streams.expectAllClosed();
    await queue.enqueue('kept');
    expect(await etcd.count({ prefix: `${prefix()}jobs/` })).toBe(1n);
    expect(await rejection(queue.enqueue('x', { signal: controller.signal }))).toBeInstanceOf(
      AbortedError,
    );
    expect(await etcd.count({ prefix: `${prefix()}jobs/` })).toBe(1n);
  });

  it('3 producers x 30 items, 3 consumers: each item exactly once, claims in FIFO order', async () => {
    const PRODUCERS = 3;
    const ITEMS = 30;
    const queue = new Queue(etcd, `${prefix()}jobs`);
    const consuming = consumeAll(3, PRODUCERS * ITEMS, (signal) => queue.dequeue({ signal }));
    await Promise.all(
      Array.from({ length: PRODUCERS }, async (_, p) => {
        for (let n = 0; n < ITEMS; n++) await queue.enqueue(`${p}:${n}`);
      }),
    );
    const perConsumer = await consuming;
    const all = perConsumer.flat();
    const expected = Array.from({ length: PRODUCERS * ITEMS }, (_, i) => {
      return `${Math.floor(i / ITEMS)}:${i % ITEMS}`;
    });
    expect(all.map((t) => t.kv.text()).sort()).toEqual(expected.sort());
    // In the order the claims were applied, items come oldest first...
    const byClaim = [...all].sort((a, b) => Number(a.header.revision - b.header.revision));
    const itemRevisions = byClaim.map((t) => t.kv.modRevision);
    expect(itemRevisions).toEqual([...itemRevisions].sort((a, b) => Number(a - b)));
    // ...so each producer's items come out in the order it enqueued them.
    for (let p = 0; p < PRODUCERS; p++) {
      const seq = byClaim.map((t) => t.kv.text()).filter((v) => v.startsWith(`${p}:`));
      expect(seq).toEqual(Array.from({ length: ITEMS }, (_, n) => `${p}:${n}`));
    }
    // The work was shared.
    expect(perConsumer.filter((items) => items.length > 0).length).toBeGreaterThan(1);
    expect(await etcd.count({ prefix: `${prefix()}jobs/` })).toBe(0n);
    await streams.expectAllClosed();
  });
});

describeEachBackend('PriorityQueue', ({ backend, prefix }) => {
  let etcd: Etcd;
  let ns: KV;
  const streams = new StreamCounter();

  beforeAll(() => {
    etcd = new Etcd({
      endpoints: backend().endpoints,
      watch: { idleStreamMs: 0, hooks: streams.hooks },
    });
  });
  afterAll(async () => {
    await etcd?.close();
  });
  const queue = () => {
    // In a namespace, so the bookkeeping keys (`__` + prefix) stay inside the test's prefix too.
    ns = etcd.namespace(prefix());
    return new PriorityQueue(ns, 'pq');
  };

  it('uses Go keys: prefix/%05d/%016d, and the bookkeeping key __prefix/%05d', async () => {
    const q = queue();
    const first = await q.enqueue('a', 5);
    const second = await q.enqueue('b', 5);
    const other = await q.enqueue('c', 65535);
    expect([first.key, second.key, other.key]).toEqual([
      'pq/00005/0000000000000000',
      'pq/00005/0000000000000001',
      'pq/65535/0000000000000000',
    ]);
    const { kvs } = await ns.range({ all: true });
    expect(kvs.map((kv) => [kv.keyText(), kv.text(), kv.lease])).toEqual([
      ['__pq/00005', '', 0n],
      ['__pq/65535', '', 0n],
      ['pq/00005/0000000000000000', 'a', 0n],
      ['pq/00005/0000000000000001', 'b', 0n],
      ['pq/65535/0000000000000000', 'c', 0n],
    ]);
    // The bookkeeping key is rewritten with every allocation of its priority.
    expect(kvs[0]?.modRevision).toBe(second.header.revision);
  });

  it('serves the lowest priority number first, FIFO within a priority', async () => {
    const q = queue();
    const items: [string, number][] = [
      ['e1', 5],
      ['u1', 1],
      ['e2', 5],
      ['z', 0],
      ['u2', 1],
      ['last', 65535],
    ];
    for (const [value, priority] of items) await q.enqueue(value, priority);
    const out: string[] = [];
    for (let i = 0; i < items.length; i++) out.push((await q.dequeue()).kv.text());
    expect(out).toEqual(['z', 'u1', 'u2', 'e1', 'e2', 'last']);
    expect(await ns.count({ prefix: 'pq/' })).toBe(0n);
  });

  it('continues the sequence after the last item, also after dequeues', async () => {
    const q = queue();
    await q.enqueue('a', 3);
    await q.enqueue('b', 3);
    await q.dequeue();
    expect((await q.enqueue('c', 3)).key).toBe('pq/00003/0000000000000002');
  });

  it('refuses priorities outside 0..65535 and writes nothing', async () => {
    const q = queue();
    for (const bad of [-1, 65536, 1.5, Number.NaN]) {
      expect(await rejection(q.enqueue('x', bad))).toBeInstanceOf(InvalidArgumentError);
    }
    expect(await ns.count({ all: true })).toBe(0n);
  });

  it('concurrent producers of one priority get distinct sequential keys, in their order', async () => {
    const q = queue();
    const PRODUCERS = 4;
    const ITEMS = 10;
    await Promise.all(
      Array.from({ length: PRODUCERS }, async (_, p) => {
        for (let n = 0; n < ITEMS; n++) await q.enqueue(`${p}:${n}`, 7);
      }),
    );
    const { kvs } = await ns.range({ prefix: 'pq/00007/' });
    expect(kvs.map((kv) => kv.keyText())).toEqual(
      Array.from(
        { length: PRODUCERS * ITEMS },
        (_, i) => `pq/00007/${String(i).padStart(16, '0')}`,
      ),
    );
    for (let p = 0; p < PRODUCERS; p++) {
      const seq = kvs.map((kv) => kv.text()).filter((v) => v.startsWith(`${p}:`));
      expect(seq).toEqual(Array.from({ length: ITEMS }, (_, n) => `${p}:${n}`));
    }
  });

  it('3 consumers: each item exactly once, claimed in key order', async () => {
    const q = queue();
    const values: string[] = [];
    for (let i = 0; i < 30; i++) {
      values.push(`v${i}`);
      await q.enqueue(`v${i}`, i % 3);
    }
    const all = (await consumeAll(3, 30, (signal) => q.dequeue({ signal }))).flat();
    expect(all.map((t) => t.kv.text()).sort()).toEqual([...values].sort());
    const byClaim = [...all].sort((a, b) => Number(a.header.revision - b.header.revision));
    const keys = byClaim.map((t) => t.kv.keyText());
    expect(keys).toEqual([...keys].sort());
    await streams.expectAllClosed();
  });

  it('dequeue waits for an item; an abort takes nothing and leaves no watch', async () => {
    const q = queue();
    const waiting = q.dequeue();
    await sleep(100);
    await q.enqueue('x', 2);
    expect((await waiting).kv.text()).toBe('x');
    const controller = new AbortController();
    const aborted = q.dequeue({ signal: controller.signal });
    await sleep(100);
    controller.abort();
    expect(await rejection(aborted)).toBeInstanceOf(AbortedError);
    await streams.expectAllClosed();
    await q.enqueue('y', 2);
    expect(await ns.count({ prefix: 'pq/' })).toBe(1n);
  });
});
