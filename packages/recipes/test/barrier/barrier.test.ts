// Barrier and DoubleBarrier: Go's key layouts, blocking until released or complete, no lost wakeup,
// too many clients, and aborts or session loss that leave no key and no watch.
import { AbortedError, Etcd, InvalidArgumentError } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Barrier } from '../../src/barrier/barrier.js';
import { DoubleBarrier, TooManyClientsError } from '../../src/barrier/double-barrier.js';
import { SessionExpiredError } from '../../src/errors.js';
import { Session } from '../../src/session/session.js';
import { rejection, sleep, stillPending, withHookAfterRange } from '../recipes-support.js';
import { StreamCounter } from '../watch-streams.js';

describeEachBackend('Barrier', ({ backend, prefix }) => {
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

  it('hold creates the key without a lease only if absent; release deletes it', async () => {
    const barrier = new Barrier(etcd, `${prefix()}b`);
    expect(await barrier.hold()).toBe(true);
    const held = await etcd.get(`${prefix()}b`);
    expect(held?.lease).toBe(0n);
    expect(held?.text()).toBe('');
    expect(await barrier.hold()).toBe(false);
    expect((await etcd.get(`${prefix()}b`))?.modRevision).toBe(held?.modRevision);
    expect(await barrier.release()).toBe(true);
    expect(await etcd.get(`${prefix()}b`)).toBeUndefined();
    expect(await barrier.release()).toBe(false);
  });

  it('wait returns at once when the barrier is not held', async () => {
    await new Barrier(etcd, `${prefix()}b`).wait();
  });

  it('waiters block while held and all return on release', async () => {
    const barrier = new Barrier(etcd, `${prefix()}b`);
    await barrier.hold();
    // Other processes' views of the same barrier: the barrier is the key.
    const waits = [1, 2, 3].map(() => new Barrier(etcd, `${prefix()}b`).wait());
    expect(await Promise.all(waits.map((w) => stillPending(w, 200)))).toEqual([true, true, true]);
    await barrier.release();
    await Promise.all(waits);
    await streams.expectAllClosed();
  });

  it('a release between the read and the watch is not missed, even if held again', async () => {
    const barrier = new Barrier(etcd, `${prefix()}b`);
    await barrier.hold();
    // The waiter reads the key (held); before its watch starts, the barrier is released and held
    // again: the key exists when the watch starts, but the release must still wake the waiter.
    const racing = withHookAfterRange(etcd, async () => {
      await barrier.release();
      await barrier.hold();
    });
    await new Barrier(racing, `${prefix()}b`).wait();
    expect(await etcd.get(`${prefix()}b`)).toBeDefined();
  });

  it('an aborted wait rejects, leaves the barrier held and no watch', async () => {
    const barrier = new Barrier(etcd, `${prefix()}b`);
    await barrier.hold();
    const controller = new AbortController();
    const waiting = barrier.wait({ signal: controller.signal });
    await sleep(100);
    controller.abort('stop');
    expect(await rejection(waiting)).toBeInstanceOf(AbortedError);
    await streams.expectAllClosed();
    expect(await etcd.get(`${prefix()}b`)).toBeDefined();
  });
});

describeEachBackend('DoubleBarrier', ({ backend, prefix }) => {
  let etcd: Etcd;
  const streams = new StreamCounter();
  const sessions: Session[] = [];

  beforeAll(() => {
    etcd = new Etcd({
      endpoints: backend().endpoints,
      watch: { idleStreamMs: 0, hooks: streams.hooks },
    });
  });
  afterAll(async () => {
    await etcd?.close();
  });
  afterEach(async () => {
    await Promise.all(sessions.splice(0).map((session) => session.close().catch(() => {})));
  });

  /** A participant: its own session and its view of the barrier. */
  async function participant(count: number): Promise<DoubleBarrier> {
    const session = await Session.create(etcd, { ttl: 30 });
    sessions.push(session);
    return new DoubleBarrier(session, `${prefix()}db`, count);
  }
  const waiterKeys = async () =>
    (await etcd.range({ prefix: `${prefix()}db/waiters/` })).kvs.map((kv) => kv.keyText());
  const everything = async () =>
    (await etcd.range({ prefix: `${prefix()}db` })).kvs.map((kv) => kv.keyText());

  it('enter blocks until count processes entered; keys are Go-compatible', async () => {
    const [a, b, c] = await Promise.all([participant(3), participant(3), participant(3)]);
    const first = [a!.enter(), b!.enter()];
    expect(await Promise.all(first.map((p) => stillPending(p, 200)))).toEqual([true, true]);
    expect(await etcd.get(`${prefix()}db/ready`)).toBeUndefined();
    await c!.enter();
    await Promise.all(first);
    const waiters = (await etcd.range({ prefix: `${prefix()}db/waiters/` })).kvs;
    expect(waiters).toHaveLength(3);
    for (const kv of waiters) expect(kv.keyText()).toMatch(/\/db\/waiters\/\d{19}$/);
    expect(new Set(waiters.map((kv) => kv.lease))).toEqual(
      new Set(sessions.map((session) => session.leaseId)),
    );
    expect((await etcd.get(`${prefix()}db/ready`))?.lease).toBe(0n);
    expect([a!.waiterKey, b!.waiterKey, c!.waiterKey].sort()).toEqual(
      waiters.map((kv) => kv.keyText()),
    );
    await streams.expectAllClosed();
  });

  it('a 4th process on a barrier of 3 fails with TooManyClientsError and leaves no key', async () => {
    const members = await Promise.all([1, 2, 3].map(() => participant(3)));
    await Promise.all(members.map((m) => m.enter()));
    const before = await waiterKeys();
    const fourth = await participant(3);
    const error = await rejection(fourth.enter());
    expect(error).toBeInstanceOf(TooManyClientsError);
    expect(error).toMatchObject({ code: 'TOO_MANY_CLIENTS', count: 3 });
    expect(await waiterKeys()).toEqual(before);
    expect(fourth.waiterKey).toBeUndefined();
  });

  it('of 3 processes racing into a barrier of 2, exactly 2 enter', async () => {
    const racers = await Promise.all([1, 2, 3].map(() => participant(2)));
    const results = await Promise.allSettled(racers.map((r) => r.enter()));
    const refused = results.filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(1);
    expect((refused[0] as PromiseRejectedResult).reason).toBeInstanceOf(TooManyClientsError);
    expect(await waiterKeys()).toHaveLength(2);
    await streams.expectAllClosed();
  });

  it('leave blocks until every process left; the last one out removes every key', async () => {
    const members = await Promise.all([1, 2, 3].map(() => participant(3)));
    await Promise.all(members.map((m) => m.enter()));
    const [x, y, z] = members;
    const leaving = [x!.leave(), y!.leave()];
    expect(await Promise.all(leaving.map((p) => stillPending(p, 300)))).toEqual([true, true]);
    await z!.leave();
    await Promise.all(leaving);
    expect(await everything()).toEqual([]);
    expect(members.map((m) => m.waiterKey)).toEqual([undefined, undefined, undefined]);
    await streams.expectAllClosed();
  });

  it('can be used again after everyone left', async () => {
    const members = await Promise.all([1, 2].map(() => participant(2)));
    for (let round = 0; round < 2; round++) {
      await Promise.all(members.map((m) => m.enter()));
      await Promise.all(members.map((m) => m.leave()));
    }
    expect(await everything()).toEqual([]);
  });

  it('an aborted enter rejects and deletes its waiter key; no watch is left', async () => {
    const member = await participant(3);
    const controller = new AbortController();
    const entering = member.enter({ signal: controller.signal });
    await expect.poll(waiterKeys).toHaveLength(1);
    controller.abort('stop');
    expect(await rejection(entering)).toBeInstanceOf(AbortedError);
    expect(await everything()).toEqual([]);
    expect(member.waiterKey).toBeUndefined();
    await streams.expectAllClosed();
  });

  it('an aborted leave deletes its key; the last one then removes the ready flag', async () => {
    const [a, b] = await Promise.all([participant(2), participant(2)]);
    await Promise.all([a!.enter(), b!.enter()]);
    const controller = new AbortController();
    const leaving = a!.leave({ signal: controller.signal });
    await sleep(100);
    controller.abort();
    expect(await rejection(leaving)).toBeInstanceOf(AbortedError);
    await b!.leave();
    expect(await everything()).toEqual([]);
    await streams.expectAllClosed();
  });

  it('enter fails with SessionExpiredError when the session ends while waiting', async () => {
    const member = await participant(3);
    const entering = rejection(member.enter());
    await expect.poll(waiterKeys).toHaveLength(1);
    await sessions[0]!.close();
    const error = await entering;
    expect(error).toBeInstanceOf(SessionExpiredError);
    expect(await everything()).toEqual([]);
    await streams.expectAllClosed();
  });

  describe('misuse', () => {
    it('leave without enter, a second enter and a bad count are refused', async () => {
      const member = await participant(1);
      expect(await rejection(member.leave())).toBeInstanceOf(InvalidArgumentError);
      await member.enter();
      expect(await rejection(member.enter())).toBeInstanceOf(InvalidArgumentError);
      await member.leave();
      expect(await everything()).toEqual([]);
      expect(() => new DoubleBarrier(sessions[0]!, 'x', 0)).toThrow(InvalidArgumentError);
    });
  });
});
