// A Mutex waiter in a long line (two or more keys ahead) watches the key just ahead from now, and
// reads the line once more only when the store moved between its read and that watch's creation:
// a watch from its read's revision would wait for etcd 3.4's 100 ms catch-up loop, and needed a
// second watch, from now, and a read beside it.
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import { SessionExpiredError } from '../../src/errors.js';
import { type Lock, Mutex } from '../../src/lock/mutex.js';
import {
  eventually,
  watchedRange as rangeOf,
  rejection,
  suiteClients,
  watching,
  withHookAfterCommit,
} from '../recipes-support.js';

const alone = (key: string) => ({ start: key, end: `${key}\0` });

describeEachBackend('Mutex: a waiter in a long line', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  async function queue(mutex: Mutex, signal?: AbortSignal): Promise<{ locked: Promise<Lock> }> {
    const locked = mutex.lock({ signal });
    locked.catch(() => {});
    await eventually(async () => (await admin().get(mutex.key)) !== undefined);
    return { locked };
  }

  it('with the store unmoved since its acquire txn: two watches (its own key from the txn, the key ahead from now), no read until the turn, one confirming read', async () => {
    const name = `${prefix()}lock`;
    const holder = await new Mutex(await fixture.session(), name).lock();
    const secondMutex = new Mutex(await fixture.session(), name);
    const { locked: second } = await queue(secondMutex);
    let commits = 0;
    const counted = withHookAfterCommit(fixture.client(), async (commit) => {
      commits = commit;
    });
    const { etcd, watches } = watching(counted);
    const mutex = new Mutex(await fixture.session({}, etcd), name);
    const locked = mutex.lock({ signal: AbortSignal.timeout(10_000) });
    locked.catch(() => {});
    await eventually(() => watches.length === 2);
    await watches[1]?.watcher.ready();
    await holder.unlock();
    await (await second).unlock();
    const lock = await locked;
    // The acquire txn and the read that confirmed the turn, nothing else.
    expect(commits).toBe(2);
    expect(watches.map((w) => w.request.startRevision ?? 0n)).toEqual([lock.fencingToken + 1n, 0n]);
    expect(watches.map((w) => rangeOf(w.request))).toEqual([
      alone(mutex.key),
      alone(secondMutex.key),
    ]);
    // Held: both watches are kept by the session for its next waits (the own key's goes on as
    // the hold's loss watch); they close with it.
    expect(watches.map((w) => w.watcher.closed)).toEqual([false, false]);
    await lock.unlock();
    expect(commits).toBe(3);
    await mutex.session.close();
    await eventually(() => watches.every((w) => w.watcher.closed));
  });

  it('behind the same key again: the watch of it is the one the last wait made, and a delete it saw before the wait began is not missed', async () => {
    const name = `${prefix()}lock`;
    const first = new Mutex(await fixture.session(), name);
    const secondMutex = new Mutex(await fixture.session(), name);
    let commits = 0;
    let deletedAt = 0n;
    const { etcd, watches } = watching(
      withHookAfterCommit(fixture.client(), async (commit) => {
        commits = commit;
        if (commit !== 4) return;
        // The second cycle's acquire txn answered: the key ahead goes, and the kept watch of it
        // sees the delete before the wait begins.
        const seen = new Promise<void>((resolve) =>
          watches[1]?.watcher.on('batch', () => resolve()),
        );
        deletedAt = (await admin().delete(secondMutex.key)).header.revision;
        await seen;
      }),
    );
    const mutex = new Mutex(await fixture.session({}, etcd), name);
    const cycle = async () => {
      const holder = await first.lock();
      const { locked: second } = await queue(secondMutex);
      const locked = mutex.lock({ signal: AbortSignal.timeout(10_000) });
      locked.catch(() => {});
      await eventually(() => watches.length === 2);
      return { holder, second, locked };
    };
    const one = await cycle();
    await one.holder.unlock();
    await (await one.second).unlock();
    await (await one.locked).unlock();
    expect(commits).toBe(3);
    const two = await cycle();
    // The second's key deleted under it: its wait fails; the waiter's read then finds the holder,
    // the only key ahead: one range over it and the own key, from now.
    expect(await rejection(two.second)).toBeInstanceOf(SessionExpiredError);
    await eventually(() => watches.length === 3);
    await watches[2]?.watcher.ready();
    await two.holder.unlock();
    const lock = await two.locked;
    expect(lock.header.revision).toBeGreaterThan(deletedAt);
    // Acquire, then the read the seen delete asked for: the holder alone ahead then (and one more
    // read when the store moved before the range watch's creation: not here).
    expect(commits).toBe(5);
    expect(watches.map((w) => rangeOf(w.request))[1]).toEqual(alone(secondMutex.key));
    await lock.unlock();
    expect(commits).toBe(6);
  });

  it('behind another key in the next cycle: the watch of the last key ahead is closed, the new one kept', async () => {
    const name = `${prefix()}lock`;
    const x = new Mutex(await fixture.session(), name);
    const y = new Mutex(await fixture.session(), name);
    const { etcd, watches } = watching(fixture.client());
    const mutex = new Mutex(await fixture.session({}, etcd), name);
    const cycle = async (first: Mutex, ahead: Mutex) => {
      const holder = await first.lock();
      const { locked: second } = await queue(ahead);
      const { locked } = await queue(mutex);
      await holder.unlock();
      await (await second).unlock();
      await (await locked).unlock();
    };
    await cycle(x, y);
    await cycle(y, x);
    expect(watches.map((w) => rangeOf(w.request))).toEqual([
      alone(mutex.key),
      alone(y.key),
      alone(x.key),
    ]);
    // Closed by the second cycle's own requests at the latest, not by the idle timer.
    expect(watches.map((w) => w.watcher.closed)).toEqual([false, true, false]);
  });

  it('whose key ahead goes between its acquire txn and its turn watch: one read finds the key then ahead, and the wait goes on over it', async () => {
    const name = `${prefix()}lock`;
    const holder = await new Mutex(await fixture.session(), name).lock();
    const secondMutex = new Mutex(await fixture.session(), name);
    const { locked: second } = await queue(secondMutex);
    let commits = 0;
    let deletedAt = 0n;
    // The key ahead (the second's) is deleted right after the acquire txn answered, before the
    // waiter's watch of it is created: only the read that follows the watch's creation sees it.
    const racy = withHookAfterCommit(fixture.client(), async (commit) => {
      commits = commit;
      if (commit === 1) deletedAt = (await admin().delete(secondMutex.key)).header.revision;
    });
    const { etcd, watches } = watching(racy);
    const mutex = new Mutex(await fixture.session({}, etcd), name);
    const locked = mutex.lock({ signal: AbortSignal.timeout(10_000) });
    locked.catch(() => {});
    expect(await rejection(second)).toBeInstanceOf(SessionExpiredError);
    await eventually(() => watches.length === 3);
    await watches[2]?.watcher.ready();
    await holder.unlock();
    const lock = await locked;
    expect(deletedAt).toBe(lock.fencingToken + 1n);
    // The acquire txn and the read after the turn watch's creation; the holder's delete then was
    // the turn (the read had the whole line left: one range over it and the own key, from now,
    // created at that read's revision: no read more).
    expect(commits).toBe(2);
    expect(watches.map((w) => w.request.startRevision ?? 0n)).toEqual([
      lock.fencingToken + 1n,
      0n,
      0n,
    ]);
    const ends = [holder.key, mutex.key].sort();
    const both = { start: ends[0], end: `${ends[1]}\0` };
    expect(watches.map((w) => rangeOf(w.request))).toEqual([
      alone(mutex.key),
      alone(secondMutex.key),
      both,
    ]);
    expect(lock.header.revision).toBeGreaterThan(deletedAt);
    await lock.unlock();
    expect(commits).toBe(3);
  });
});
