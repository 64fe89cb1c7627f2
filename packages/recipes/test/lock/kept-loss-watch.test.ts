// A session's holds of one Mutex share one watch of its key (line/kept-loss-watch.ts): no watch
// created and cancelled per hold, yet every hold learns of its key's loss, and the last unlock's
// delete is not the next hold's loss.
import type { WatchRequest } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import { LockLostError, LockNotHeldError } from '../../src/errors.js';
import { type Lock, Mutex } from '../../src/lock/mutex.js';
import {
  eventually,
  rejection,
  sleep,
  stillPending,
  suiteClients,
  keyText as text,
  watching,
} from '../recipes-support.js';

/** True when the request watches exactly `key` (its range is the key alone). */
function ofKeyAlone(request: WatchRequest, key: string): boolean {
  const range = request.range;
  return range !== undefined && text(range.start) === key && text(range.end) === `${key}\u0000`;
}

describeEachBackend('Mutex: one kept loss watch per session key', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  it('three lock/unlock cycles create one watch and cancel none; each unlock is no loss of the next hold; it closes with the session', async () => {
    const name = `${prefix()}lock`;
    const { etcd, watches } = watching(fixture.client());
    const session = await fixture.session({}, etcd);
    const mutex = new Mutex(session, name);
    const locks: Lock[] = [];
    for (let cycle = 0; cycle < 3; cycle += 1) {
      const lock = await mutex.lock();
      locks.push(lock);
      await lock.unlock();
    }
    // The third hold again, held while the last unlock's delete reaches the watch.
    const held = await mutex.lock();
    await sleep(100);
    expect(held.signal.aborted).toBe(false);
    const tokens = [...locks, held].map((lock) => lock.fencingToken);
    expect(tokens).toEqual([...tokens].sort((a, b) => (a < b ? -1 : 1)));
    expect(new Set(tokens).size).toBe(4);
    for (const lock of locks) expect(lock.signal.reason).toBeInstanceOf(LockNotHeldError);
    expect(watches).toHaveLength(1);
    expect(ofKeyAlone(watches[0]!.request, mutex.key)).toBe(true);
    expect(watches[0]?.watcher.closed).toBe(false);
    await held.unlock();
    // Kept after the unlock (idle), cancelled with the session.
    expect(watches[0]?.watcher.closed).toBe(false);
    await session.close();
    await eventually(() => watches[0]?.watcher.closed === true);
    expect(watches).toHaveLength(1);
  });

  it("a delete of the key by another client is the hold's loss, at its revision, in every cycle on the one watch", async () => {
    const name = `${prefix()}lock`;
    const { etcd, watches } = watching(fixture.client());
    const session = await fixture.session({}, etcd);
    const mutex = new Mutex(session, name);
    for (let cycle = 0; cycle < 2; cycle += 1) {
      const lock = await mutex.lock();
      const deleted = await admin().delete(lock.key);
      await eventually(() => lock.signal.aborted);
      const reason = lock.signal.reason as LockLostError;
      expect(reason).toBeInstanceOf(LockLostError);
      expect(reason.message).toContain(`deleted at revision ${deleted.header.revision}`);
      expect(await rejection(lock.unlock())).toBeInstanceOf(LockLostError);
    }
    expect(watches).toHaveLength(1);
    expect(watches[0]?.watcher.closed).toBe(false);
  });

  it("a waiter in a long line whose session held the key before creates one watch in the cycle, of the key ahead alone, kept once held; its own key's watch is the kept one", async () => {
    const name = `${prefix()}lock`;
    const { etcd, watches } = watching(fixture.client());
    const waiter = await fixture.session({}, etcd);
    const mutex = new Mutex(waiter, name);
    // A first cycle alone: the kept watch of the waiter's key.
    await (await mutex.lock()).unlock();
    expect(watches).toHaveLength(1);
    const holder = await fixture.session();
    const holderLock = await new Mutex(holder, name).lock();
    const second = await fixture.session();
    const secondMutex = new Mutex(second, name);
    const secondLocked = secondMutex.lock();
    await eventually(async () => (await admin().get(secondMutex.key)) !== undefined);
    const locked = mutex.lock();
    locked.catch(() => {});
    // Two keys ahead: a long line. Only the key just ahead (the second's) is watched for the turn,
    // from now.
    await eventually(() => watches.length === 2);
    const turn = watches[1];
    expect(turn?.request.startRevision ?? 0n).toBe(0n);
    expect(ofKeyAlone(turn!.request, secondMutex.key)).toBe(true);
    await holderLock.unlock();
    const secondLock = await secondLocked;
    expect(await stillPending(locked, 100)).toBe(true);
    await secondLock.unlock();
    const held = await locked;
    expect(held.key).toBe(mutex.key);
    // The turn watch is kept too, for the next wait behind the same key.
    expect(turn?.watcher.closed).toBe(false);
    // No other watch of the waiter's own key was made; the kept one goes on for the hold.
    expect(watches.filter((w) => ofKeyAlone(w.request, mutex.key))).toHaveLength(1);
    expect(watches[0]?.watcher.closed).toBe(false);
    const deleted = await admin().delete(held.key);
    await eventually(() => held.signal.aborted);
    expect((held.signal.reason as LockLostError).message).toContain(
      `deleted at revision ${deleted.header.revision}`,
    );
    await waiter.close();
    await eventually(() => watches.every((w) => w.watcher.closed));
  });
});
