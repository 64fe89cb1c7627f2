// MultiLock: all-or-nothing over several names in one global order (no deadlock between
// overlapping multi-locks given in opposite orders), one fencing token per name, and nothing left
// behind by a failure part-way.
import { AbortedError, InvalidArgumentError } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import { LockedError, LockLostError } from '../../src/errors.js';
import { MultiLock } from '../../src/lock/multi-lock.js';
import { Mutex } from '../../src/lock/mutex.js';
import { eventually, rejection, suiteClients } from '../recipes-support.js';

describeEachBackend('MultiLock', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  const keysUnder = async (name: string) =>
    (await admin().range({ prefix: `${name}/`, keysOnly: true })).kvs.map((kv) => kv.keyText());

  it('takes every name as a Go-layout mutex key, each with its own fencing token', async () => {
    const base = prefix();
    const session = await fixture.session();
    const multi = new MultiLock(session, [`${base}c`, `${base}a`, `${base}b`]);
    expect(multi.names).toEqual([`${base}a`, `${base}b`, `${base}c`]);
    const held = await multi.lock();
    const tokens: bigint[] = [];
    for (const name of multi.names) {
      const key = `${name}/${session.leaseId.toString(16)}`;
      const kv = await admin().get(key);
      expect(kv?.lease).toBe(session.leaseId);
      expect(held.fencingToken(name)).toBe(kv?.createRevision);
      expect(held.locks.get(name)?.key).toBe(key);
      tokens.push(held.fencingToken(name));
    }
    // Taken in order, one after the other: increasing tokens.
    expect([...tokens].sort((x, y) => Number(x - y))).toEqual(tokens);
    expect(new Set(tokens).size).toBe(3);
    expect(() => held.fencingToken(`${base}d`)).toThrow(InvalidArgumentError);
    const guarded = await admin()
      .txn()
      .if(...held.isOwner())
      .commit();
    expect(guarded.succeeded).toBe(true);
    await held.unlock();
    expect(held.signal.aborted).toBe(true);
    for (const name of multi.names) expect(await keysUnder(name)).toEqual([]);
    expect(await rejection(held.unlock())).toMatchObject({ code: 'LOCK_NOT_HELD' });
  });

  it('never deadlocks: overlapping multi-locks given in opposite orders take turns, one holder at a time', async () => {
    const base = prefix();
    const names = [`${base}x`, `${base}y`, `${base}z`];
    const forward = new MultiLock(await fixture.session(), names);
    const backward = new MultiLock(await fixture.session(), [...names].reverse());
    const inside = new MultiLock(await fixture.session(), [`${base}z`, `${base}y`]);
    let holders = 0;
    let most = 0;
    const rounds = async (multi: MultiLock) => {
      const tokens: bigint[] = [];
      for (let i = 0; i < 5; i++) {
        // A deadlock would end here with AbortedError.
        const held = await multi.lock({ signal: AbortSignal.timeout(30_000) });
        holders++;
        most = Math.max(most, holders);
        tokens.push(held.fencingToken(`${base}y`));
        await new Promise((resolve) => setTimeout(resolve, 5));
        holders--;
        await held.unlock();
      }
      return tokens;
    };
    const all = await Promise.all([rounds(forward), rounds(backward), rounds(inside)]);
    expect(most).toBe(1);
    const tokens = all.flat();
    expect(tokens).toHaveLength(15);
    expect(new Set(tokens).size).toBe(15);
    for (const name of names) expect(await keysUnder(name)).toEqual([]);
  });

  it('queues opposite orders on the same first name, so neither holds a name the other waits for', async () => {
    const base = prefix();
    const [x, y, z] = [`${base}x`, `${base}y`, `${base}z`];
    const blocker = await new Mutex(await fixture.session(), y).lock();
    const forward = new MultiLock(await fixture.session(), [x, y, z]);
    const backward = new MultiLock(await fixture.session(), [z, y, x]);
    const first = forward.lock({ signal: AbortSignal.timeout(30_000) });
    await eventually(async () => (await keysUnder(y)).length === 2);
    const second = backward.lock({ signal: AbortSignal.timeout(30_000) });
    // Taken in the given orders, backward would now hold z and wait for y, forward would then
    // wait for z: a cycle. In the global order backward waits for x, holding nothing.
    await eventually(async () => (await keysUnder(x)).length === 2);
    expect(await keysUnder(z)).toEqual([]);
    expect(await keysUnder(y)).toHaveLength(2);
    await blocker.unlock();
    const a = await first;
    expect(await keysUnder(z)).toEqual([a.locks.get(z)?.key]);
    await a.unlock();
    const b = await second;
    expect(b.fencingToken(x)).toBeGreaterThan(a.fencingToken(x));
    await b.unlock();
  });

  it('releases what it took when a later name fails: tryLock, abort, and leaves no key', async () => {
    const base = prefix();
    const other = await new Mutex(await fixture.session(), `${base}b`).lock();
    const multi = new MultiLock(await fixture.session(), [`${base}b`, `${base}a`]);

    const locked = await rejection(multi.tryLock());
    expect(locked).toBeInstanceOf(LockedError);
    expect(await keysUnder(`${base}a`)).toEqual([]);
    expect(await keysUnder(`${base}b`)).toEqual([other.key]);

    const waiting = multi.lock({ signal: AbortSignal.timeout(300) });
    await eventually(async () => (await keysUnder(`${base}b`)).length === 2);
    expect(await keysUnder(`${base}a`)).toHaveLength(1);
    expect(await rejection(waiting)).toBeInstanceOf(AbortedError);
    expect(await keysUnder(`${base}a`)).toEqual([]);
    expect(await keysUnder(`${base}b`)).toEqual([other.key]);

    await other.unlock();
    const held = await multi.lock();
    expect(held.fencingToken(`${base}b`)).toBeGreaterThan(other.fencingToken);
    await held.unlock();
  });

  it('signals the loss of any name, and refuses bad name lists', async () => {
    const base = prefix();
    const session = await fixture.session();
    const held = await new MultiLock(session, [`${base}a`, `${base}b`]).lock();
    await admin().delete(held.locks.get(`${base}b`)?.key ?? '');
    await eventually(() => held.signal.aborted);
    expect(held.signal.reason).toBeInstanceOf(LockLostError);
    expect(held.signal.reason).toMatchObject({ key: held.locks.get(`${base}b`)?.key });
    const failed = await rejection(held.unlock());
    expect(failed).toBeInstanceOf(LockLostError);
    expect(await keysUnder(`${base}a`)).toEqual([]);
    // Disposal reports the loss the same way, after releasing the names still held.
    const again = await new MultiLock(session, [`${base}a`, `${base}b`]).lock();
    await admin().delete(again.locks.get(`${base}a`)?.key ?? '');
    await eventually(() => again.signal.aborted);
    expect(await rejection(again[Symbol.asyncDispose]())).toBeInstanceOf(LockLostError);
    expect(await keysUnder(`${base}b`)).toEqual([]);
    expect(() => new MultiLock(session, [])).toThrow(InvalidArgumentError);
    expect(() => new MultiLock(session, [`${base}a`, `${base}a`])).toThrow(InvalidArgumentError);
  });
});
