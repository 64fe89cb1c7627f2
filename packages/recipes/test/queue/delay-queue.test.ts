// DelayQueue: items taken exactly once, each not before its visibility time, in visibility order;
// a waiting dequeue wakes at the due time or for an earlier item.
import { AbortedError, InvalidArgumentError } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import { DelayQueue } from '../../src/queue/delay-queue.js';
import { Queue } from '../../src/queue/queue.js';
import { rejection, stillPending, suiteClients } from '../recipes-support.js';

describeEachBackend('DelayQueue', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  it('serves items by visibility time, never before it', async () => {
    const queue = new DelayQueue(admin(), `${prefix()}delayed`);
    const now = Date.now();
    await queue.enqueue('late', { visibleAt: now + 800 });
    await queue.enqueue('due', { visibleAt: new Date(now - 10) });
    await queue.enqueue('soon', { delayMs: 300 });
    // 'soon' counts its 300 ms from its own enqueue: under load it can come after 'late', so the
    // expected order is the stored visibility times' ('due' is first either way).
    const stored = (await admin().range({ prefix: `${queue.prefix}/` })).kvs;
    const byVisibility = [...stored]
      .sort((a, b) => queue.visibleAt(a) - queue.visibleAt(b))
      .map((kv) => kv.text());
    expect(byVisibility[0]).toBe('due');
    const taken: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { kv } = await queue.dequeue({ signal: AbortSignal.timeout(10_000) });
      expect(Date.now()).toBeGreaterThanOrEqual(queue.visibleAt(kv));
      taken.push(kv.text());
    }
    expect(taken).toEqual(byVisibility);
    expect((await admin().range({ prefix: `${queue.prefix}/` })).kvs).toEqual([]);
  });

  it('a waiting dequeue takes an earlier item put while it waits for a later one', async () => {
    const queue = new DelayQueue(admin(), `${prefix()}delayed`);
    await queue.enqueue('later', { delayMs: 60_000 });
    const waiting = queue.dequeue({ signal: AbortSignal.timeout(10_000) });
    expect(await stillPending(waiting, 200)).toBe(true);
    await queue.enqueue('now');
    expect((await waiting).kv.text()).toBe('now');
    const left = await admin().range({ prefix: `${queue.prefix}/` });
    expect(left.kvs.map((kv) => kv.text())).toEqual(['later']);
    expect(await rejection(queue.dequeue({ signal: AbortSignal.timeout(200) }))).toBeInstanceOf(
      AbortedError,
    );
  });

  it('gives each item to exactly one of several consumers', async () => {
    const name = `${prefix()}delayed`;
    const producer = new DelayQueue(admin(), name);
    const start = Date.now();
    for (let i = 0; i < 12; i++)
      await producer.enqueue(`item-${i}`, { visibleAt: start + 200 + 20 * (i % 4) });
    const consumers = [1, 2, 3].map(() => new DelayQueue(fixture.client(), name));
    const got = await Promise.all(
      consumers.map(async (consumer) => {
        const mine: string[] = [];
        for (let i = 0; i < 4; i++) {
          const { kv } = await consumer.dequeue({ signal: AbortSignal.timeout(10_000) });
          expect(Date.now()).toBeGreaterThanOrEqual(consumer.visibleAt(kv));
          mine.push(kv.text());
        }
        return mine;
      }),
    );
    expect(got.flat().sort()).toEqual(Array.from({ length: 12 }, (_, i) => `item-${i}`).sort());
  });

  it('refuses a visibility time given twice or before 1970, and leaves the plain Queue as it was', async () => {
    const queue = new DelayQueue(admin(), `${prefix()}delayed`);
    await expect(queue.enqueue('x', { visibleAt: 1, delayMs: 1 })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    await expect(queue.enqueue('x', { visibleAt: -5 })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
    // The plain queue's claim is unchanged: FIFO by revision, waits for the next put.
    const plain = new Queue(admin(), `${prefix()}plain`);
    const waiting = plain.dequeue({ signal: AbortSignal.timeout(10_000) });
    await plain.enqueue('a');
    await plain.enqueue('b');
    expect((await waiting).kv.text()).toBe('a');
    expect((await plain.dequeue()).kv.text()).toBe('b');
  });
});
