// A Mutex waiter just behind the holder watches one range over the holder's key and its own (the
// turn and the loss in revision order, in one watch), through a watch its session keeps across
// waits: two sessions taking turns make one such watch each and cancel none, a delete the kept
// watch saw before the wait began is its turn, and a hold found at the head by its acquire txn
// watches its loss through the same range.
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import { LockLostError, SessionExpiredError } from '../../src/errors.js';
import { type Lock, Mutex } from '../../src/lock/mutex.js';
import {
  eventually,
  watchedRange as rangeOf,
  rejection,
  stillPending,
  suiteClients,
  watching,
  withHookAfterCommit,
} from '../recipes-support.js';

describeEachBackend('Mutex: the wait just behind the holder', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  /** A session whose client's txns and watches are counted. */
  async function counted() {
    const txns = { commits: 0 };
    const { etcd, watches } = watching(
      withHookAfterCommit(fixture.client(), async (commit) => {
        txns.commits = commit;
      }),
    );
    return { session: await fixture.session({}, etcd), txns, watches };
  }

  /** Starts lock() once its key is queued and its client made `count` watches. */
  async function waitBehind(mutex: Mutex, watches: readonly unknown[], count: number) {
    const locked = mutex.lock({ signal: AbortSignal.timeout(10_000) });
    locked.catch(() => {});
    await eventually(async () => (await admin().get(mutex.key)) !== undefined);
    await eventually(() => watches.length === count);
    return { locked };
  }

  it('two sessions taking turns: one range watch each, kept across their waits and holds, none cancelled; an acquire txn and an unlock per cycle, no read', async () => {
    const name = `${prefix()}lock`;
    const a = await counted();
    const b = await counted();
    const ma = new Mutex(a.session, name);
    const mb = new Mutex(b.session, name);
    const ends = [ma.key, mb.key].sort();
    const both = { start: ends[0], end: `${ends[1]}\0` };
    let held: Lock = await ma.lock();
    // b waits behind a: its range watch, from now.
    let waiting = (await waitBehind(mb, b.watches, 1)).locked;
    await b.watches[0]?.watcher.ready();
    const rounds = 3;
    for (let round = 0; round < rounds; round++) {
      expect(await stillPending(waiting, 50)).toBe(true);
      await held.unlock();
      held = await waiting;
      expect(held.key).toBe(mb.key);
      // a waits behind b: its range watch is made in the first round, then kept.
      waiting = (await waitBehind(ma, a.watches, 2)).locked;
      await a.watches[1]?.watcher.ready();
      await held.unlock();
      held = await waiting;
      expect(held.key).toBe(ma.key);
      waiting = (await waitBehind(mb, b.watches, 1)).locked;
    }
    await held.unlock();
    const last = await waiting;
    await last.unlock();
    // a's first hold found the lock free (its own key's watch, from its txn); then one range over
    // both keys each, from now. Nothing cancelled: the watches are the sessions' for their next
    // waits (they close with the sessions, or after a second unused).
    expect(a.watches.map((w) => rangeOf(w.request))).toEqual([
      { start: ma.key, end: `${ma.key}\0` },
      both,
    ]);
    expect(a.watches[0]?.request.startRevision).toBeGreaterThan(0n);
    expect(a.watches[1]?.request.startRevision ?? 0n).toBe(0n);
    expect(b.watches.map((w) => rangeOf(w.request))).toEqual([both]);
    expect(b.watches.map((w) => w.request.startRevision ?? 0n)).toEqual([0n]);
    expect([...a.watches, ...b.watches].slice(1).map((w) => w.watcher.closed)).toEqual([
      false,
      false,
    ]);
    // Per lock: its acquire txn and its unlock, no read of the line (each watch was created at its
    // wait's acquire revision, nothing committed between).
    expect(a.txns.commits).toBe(2 * (rounds + 1));
    expect(b.txns.commits).toBe(2 * (rounds + 1));
    await a.session.close();
    await b.session.close();
    await eventually(() => [...a.watches, ...b.watches].every((w) => w.watcher.closed));
  });

  it('the holder deleted after the acquire txn answered and before the wait began: the kept watch saw it, and it is the turn at its revision, with no read', async () => {
    const name = `${prefix()}lock`;
    const holderMutex = new Mutex(await fixture.session(), name);
    let holder: Lock | undefined;
    let deletedAt = 0n;
    const txns = { commits: 0 };
    const { etcd, watches } = watching(
      withHookAfterCommit(fixture.client(), async (commit) => {
        txns.commits = commit;
        // The second cycle's acquire txn answered: the holder's key goes, and the kept range
        // watch sees the delete before the wait subscribes to it.
        if (commit !== 3 || holder === undefined) return;
        const seen = new Promise<void>((resolve) =>
          watches[0]?.watcher.on('batch', () => resolve()),
        );
        deletedAt = (await admin().delete(holder.key)).header.revision;
        await seen;
      }),
    );
    const mutex = new Mutex(await fixture.session({}, etcd), name);
    // Cycle one: behind the holder, its range watch made (and then kept).
    holder = await holderMutex.lock();
    const first = (await waitBehind(mutex, watches, 1)).locked;
    await watches[0]?.watcher.ready();
    await holder.unlock();
    await (await first).unlock();
    expect(txns.commits).toBe(2);
    // Cycle two: the holder's unlock lands between the acquire txn and the wait.
    holder = await holderMutex.lock();
    const lock = await mutex.lock({ signal: AbortSignal.timeout(10_000) });
    // Held at the revision of the holder's delete (the acquire txn's revision + 1), with no read.
    expect(deletedAt).toBe(lock.fencingToken + 1n);
    expect(lock.header.revision).toBe(deletedAt);
    expect(txns.commits).toBe(3);
    expect(watches).toHaveLength(1);
    await lock.unlock();
  });

  it('its own key deleted, then the holder unlocks: the kept watch gives the two in order, and the wait fails, never holds', async () => {
    const name = `${prefix()}lock`;
    const holderMutex = new Mutex(await fixture.session(), name);
    const { session, watches } = await counted();
    const mutex = new Mutex(session, name);
    // Cycle one makes the range watch.
    let holder = await holderMutex.lock();
    const first = (await waitBehind(mutex, watches, 1)).locked;
    await holder.unlock();
    await (await first).unlock();
    // Cycle two waits through the kept watch.
    holder = await holderMutex.lock();
    const waiting = (await waitBehind(mutex, watches, 1)).locked;
    await admin().delete(mutex.key);
    await holder.unlock();
    const error = await rejection(waiting);
    expect(error).toBeInstanceOf(SessionExpiredError);
    expect((error as SessionExpiredError).key).toBe(mutex.key);
    expect(watches).toHaveLength(1);
  });

  it('a hold found at the head by its acquire txn watches its loss through the kept range over its key: no watch more, its loss at its revision', async () => {
    const name = `${prefix()}lock`;
    const holderMutex = new Mutex(await fixture.session(), name);
    const { session, watches } = await counted();
    const mutex = new Mutex(session, name);
    const holder = await holderMutex.lock();
    const first = (await waitBehind(mutex, watches, 1)).locked;
    await holder.unlock();
    await (await first).unlock();
    // Nobody ahead now: held at once, through the same range watch.
    const lock = await mutex.lock();
    expect(lock.header.revision).toBe(lock.fencingToken);
    expect(watches).toHaveLength(1);
    const deleted = await admin().delete(lock.key);
    await eventually(() => lock.signal.aborted);
    const reason = lock.signal.reason as LockLostError;
    expect(reason).toBeInstanceOf(LockLostError);
    expect(reason.message).toContain(`deleted at revision ${deleted.header.revision}`);
    expect(await rejection(lock.unlock())).toBeInstanceOf(LockLostError);
    expect(watches).toHaveLength(1);
  });
});
