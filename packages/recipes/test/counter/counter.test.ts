// SharedCounter: exact values and revisions, no lost update under contention, compare-and-set.
import { InvalidArgumentError } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import { CounterValueError, SharedCounter } from '../../src/counter/counter.js';
import { rejection, suiteClients } from '../recipes-support.js';

describeEachBackend('SharedCounter', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  it('reads 0 while missing, and an add writes the sum at the revision it reports', async () => {
    const counter = new SharedCounter(admin(), `${prefix()}count`);
    const empty = await counter.get();
    expect([empty.value, empty.revision]).toEqual([0n, 0n]);
    const first = await counter.add(5n);
    expect([first.previous, first.value]).toEqual([0n, 5n]);
    const second = await counter.add(-7n);
    expect([second.previous, second.value]).toEqual([5n, -2n]);
    const kv = await admin().get(counter.key);
    expect(kv?.text()).toBe('-2');
    expect(kv?.modRevision).toBe(second.revision);
    expect(second.revision).toBeGreaterThan(first.revision);
    expect(kv?.lease).toBe(0n);
    const read = await counter.get();
    expect([read.value, read.revision]).toEqual([-2n, second.revision]);
  });

  it('loses no update: 8 clients adding 10 times each at once end at exactly 80', async () => {
    const key = `${prefix()}count`;
    const clients = [1, 2, 3, 4, 5, 6, 7, 8].map(() => fixture.client());
    const changes = await Promise.all(
      clients.map(async (etcd) => {
        const counter = new SharedCounter(etcd, key);
        const mine = [];
        for (let i = 0; i < 10; i++) mine.push(await counter.add(1n));
        return mine;
      }),
    );
    const all = changes.flat();
    expect((await new SharedCounter(admin(), key).get()).value).toBe(80n);
    // Every add produced its own value, once: 1..80, each one more than the value it started from.
    expect(all.map((c) => c.value).sort((a, b) => Number(a - b))).toEqual(
      Array.from({ length: 80 }, (_, i) => BigInt(i + 1)),
    );
    expect(all.every((c) => c.value === c.previous + 1n)).toBe(true);
    // Revisions order the values: a higher value was written at a higher revision.
    const byRevision = [...all].sort((a, b) => Number(a.revision - b.revision));
    expect(byRevision.map((c) => c.value)).toEqual(byRevision.map((_, i) => BigInt(i + 1)));
  });

  it('compare-and-set writes only over the expected value, and reports what it found', async () => {
    const counter = new SharedCounter(admin(), `${prefix()}count`);
    const created = await counter.compareAndSet(0n, 10n);
    expect([created.succeeded, created.value]).toEqual([true, 10n]);
    expect((await admin().get(counter.key))?.modRevision).toBe(created.revision);
    const refused = await counter.compareAndSet(0n, 99n);
    expect([refused.succeeded, refused.value, refused.revision]).toEqual([
      false,
      10n,
      created.revision,
    ]);
    const swapped = await counter.compareAndSet(10n, 11n);
    expect([swapped.succeeded, swapped.value]).toEqual([true, 11n]);
    // Of two compare-and-sets from the same value, exactly one wins.
    const [a, b] = await Promise.all([
      new SharedCounter(fixture.client(), counter.key).compareAndSet(11n, 20n),
      new SharedCounter(fixture.client(), counter.key).compareAndSet(11n, 30n),
    ]);
    expect([a.succeeded, b.succeeded].filter(Boolean)).toHaveLength(1);
    const winner = a.succeeded ? a : b;
    const loser = a.succeeded ? b : a;
    expect([loser.value, loser.revision]).toEqual([winner.value, winner.revision]);
    expect((await counter.get()).value).toBe(winner.value);
  });

  it('refuses a key that holds no decimal integer, and arguments that are not bigints', async () => {
    const counter = new SharedCounter(admin(), `${prefix()}count`);
    await admin().put(counter.key, '12abc');
    const error = await rejection(counter.add(1n));
    expect(error).toBeInstanceOf(CounterValueError);
    expect(error).toMatchObject({ code: 'COUNTER_VALUE', key: counter.key });
    expect((await admin().get(counter.key))?.text()).toBe('12abc');
    await expect(counter.add(1 as unknown as bigint)).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(() => new SharedCounter(admin(), '')).toThrow(InvalidArgumentError);
  });
});
