// Mutex: Go's key layout, FIFO by create revision, one watched key per waiter, no lost wakeup,
// never success after the own lease expired, no leaked key, guarded unlock, fencing compare.
import { AbortedError, cmp, Etcd, op, type WatchRequest } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  LockedError,
  LockLostError,
  LockNotHeldError,
  SessionExpiredError,
} from '../../src/errors.js';
import { type Lock, Mutex } from '../../src/lock/mutex.js';
import { Session } from '../../src/session/session.js';
import {
  eventually,
  Fixture,
  recording,
  rejection,
  sleep,
  stillPending,
  watching,
  withHookAfterCommit,
} from '../recipes-support.js';

const text = (bytes: string | Uint8Array | undefined) =>
  typeof bytes === 'string' ? bytes : new TextDecoder().decode(bytes);

describeEachBackend('Mutex', ({ backend, prefix }) => {
  const fixture = new Fixture(() => backend().endpoints);
  let admin: Etcd;
  beforeAll(() => {
    admin = new Etcd({ endpoints: backend().endpoints });
  });
  afterEach(() => fixture.close());
  afterAll(() => admin?.close());

  const keysUnder = async (name: string) =>
    (await admin.range({ prefix: `${name}/`, sort: { target: 'create', order: 'ascend' } })).kvs;

  /** Starts lock() and resolves once its key is in the queue (so queue order is known). */
  async function queue(mutex: Mutex, signal?: AbortSignal): Promise<{ locked: Promise<Lock> }> {
    const locked = mutex.lock({ signal });
    locked.catch(() => {});
    await eventually(async () => (await admin.get(mutex.key)) !== undefined);
    return { locked };
  }

  describe('keys and acquisition', () => {
    it("uses Go's key: name/<lease id in lowercase hex>, empty, on the session lease", async () => {
      const name = `${prefix()}lock`;
      const session = await fixture.session();
      const lock = await new Mutex(session, name).lock();
      expect(lock.key).toBe(`${name}/${session.leaseId.toString(16)}`);
      expect(lock.key).toMatch(/\/[0-9a-f]+$/);
      const kv = await admin.get(lock.key);
      expect(kv?.value).toEqual(new Uint8Array(0));
      expect(kv?.lease).toBe(session.leaseId);
      expect(lock.fencingToken).toBe(kv?.createRevision);
      // Uncontended: one txn, whose revision created the key.
      expect(lock.header.revision).toBe(lock.fencingToken);
    });

    it('grants the lock in create-revision order, one holder at a time, with increasing tokens', async () => {
      const name = `${prefix()}lock`;
      const sessions = await Promise.all([1, 2, 3, 4, 5].map(() => fixture.session()));
      const first = await new Mutex(sessions[0]!, name).lock();
      const waiting: Promise<Lock>[] = [];
      for (const session of sessions.slice(1)) {
        waiting.push((await queue(new Mutex(session, name))).locked);
      }
      const order: bigint[] = [first.fencingToken];
      let holders = 1;
      let maxHolders = 1;
      let current: Lock = first;
      const settled = waiting.map((p, i) =>
        p.then((lock) => {
          holders++;
          maxHolders = Math.max(maxHolders, holders);
          order.push(lock.fencingToken);
          return { lock, i };
        }),
      );
      for (let i = 0; i < waiting.length; i++) {
        expect(await stillPending(waiting[i]!, 100)).toBe(true);
        holders--;
        await current.unlock();
        const { lock, i: index } = await settled[i]!;
        expect(index).toBe(i);
        current = lock;
      }
      await current.unlock();
      expect(maxHolders).toBe(1);
      const tokens = [...order];
      expect(tokens).toEqual([...tokens].sort((a, b) => (a < b ? -1 : 1)));
      expect(new Set(tokens).size).toBe(5);
      expect(await keysUnder(name)).toEqual([]);
    });

    it('a waiter behind the holder alone watches one range to its own key; in a longer line, the key ahead and its own apart', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      const secondRecorded = recording(fixture.client());
      const second = await Session.create(secondRecorded.etcd, {});
      const secondQueued = await queue(new Mutex(second, name));
      const { etcd, watches } = recording(fixture.client());
      const third = await Session.create(etcd, {});
      try {
        const mutex = new Mutex(third, name);
        const thirdQueued = mutex.lock();
        thirdQueued.catch(() => {});
        await eventually(() => watches.length >= 2);
        const rangeOf = (w: WatchRequest) => ({
          start: text(w.range?.start),
          end: text(w.range?.end),
        });
        const alone = (key: string) => ({ start: key, end: `${key}\0` });
        // The second's read had the whole line: one range over the holder's key and its own,
        // from now (the session's, kept for its next waits behind the same key).
        const ends = [new Mutex(holder, name).key, new Mutex(second, name).key].sort();
        expect(secondRecorded.watches.map((w) => w.startRevision ?? 0n)).toEqual([0n]);
        expect(secondRecorded.watches.map(rangeOf)).toEqual([
          { start: ends[0], end: `${ends[1]}\0` },
        ]);
        // The third's was cut short: its own key alone, from just after the txn that queued it,
        // and the newest key ahead alone (the holder's is not watched for), from now.
        const fromRead = () => watches.filter((w) => (w.startRevision ?? 0n) > 0n);
        const fromNow = () => watches.filter((w) => (w.startRevision ?? 0n) === 0n);
        expect(fromRead().map(rangeOf)).toEqual([alone(mutex.key)]);
        expect(fromNow().map(rangeOf)).toEqual([alone(new Mutex(second, name).key)]);
        await lock.unlock();
        const secondLock = await secondQueued.locked;
        expect(await stillPending(thirdQueued, 100)).toBe(true);
        await secondLock.unlock();
        const thirdLock = await thirdQueued;
        expect(thirdLock.key).toBe(mutex.key);
        // No watch more: the own key's watch goes on as the held key's.
        expect(fromRead()).toHaveLength(1);
        expect(fromNow()).toHaveLength(1);
        await thirdLock.unlock();
        expect(thirdLock.signal.reason).toBeInstanceOf(LockNotHeldError);
      } finally {
        await third.close();
        await second.close();
      }
    });

    it("a waiter behind the holder alone watches the range over both keys from now, as its session's: no read when the store did not move, the watch kept after the unlock", async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      let commits = 0;
      const counted = withHookAfterCommit(fixture.client(), async (commit) => {
        commits = commit;
      });
      const { etcd, watches: watchers } = watching(counted);
      const waiter = await Session.create(etcd, {});
      try {
        const queued = new Mutex(waiter, name).lock({ signal: AbortSignal.timeout(10_000) });
        queued.catch(() => {});
        await eventually(() => watchers.length >= 1);
        const created = await watchers[0]?.watcher.ready();
        expect(await stillPending(queued, 100)).toBe(true);
        await lock.unlock();
        const next = await queued;
        expect(watchers.map((w) => w.request.startRevision ?? 0n)).toEqual([0n]);
        // Created at the acquire txn's revision (nothing committed between): the holder's delete
        // was the turn, with no read; otherwise one read covered the revisions in between.
        expect(commits).toBe(created === next.fencingToken ? 1 : 2);
        await next.unlock();
        // Kept for the session's next wait behind the same key; it closes with the session.
        expect(watchers[0]?.watcher.closed).toBe(false);
        await waiter.close();
        await eventually(() => watchers.every((w) => w.watcher.closed));
      } finally {
        await waiter.close();
      }
    });

    it("a waiter with two keys ahead keeps its own key's watch as the hold's: keys between its key and the one ahead are not watched, its loss is seen", async () => {
      const name = `${prefix()}lock`;
      // Leases with chosen ids, so the keys sort second < later < holder < waiter: a range from
      // the second's key to the waiter's would cover the others.
      const base = BigInt(Math.floor(Math.random() * 2 ** 40) + 2 ** 40) << 12n;
      const leased = async (offset: bigint, etcd?: Etcd) => {
        const id = base + offset;
        await admin.lease.grant(60, { id });
        return fixture.session({ lease: id }, etcd);
      };
      const holder = await leased(0x400n);
      const lock = await new Mutex(holder, name).lock();
      const second = await leased(0x100n);
      const secondQueued = await queue(new Mutex(second, name));
      const { etcd, watches } = recording(fixture.client());
      const waiter = await leased(0x500n, etcd);
      const mutex = new Mutex(waiter, name);
      const { locked } = await queue(mutex);
      // Its own key from just after its acquire txn, the key ahead alone from now.
      await eventually(() => watches.length >= 2);
      // The holder's delete: not the turn (the second's key is still ahead).
      await lock.unlock();
      const secondLock = await secondQueued.locked;
      expect(await stillPending(locked, 100)).toBe(true);
      // A later waiter between the keys, coming and going, is not the turn either.
      const early = await leased(0x300n);
      const { locked: gone } = await queue(new Mutex(early, name));
      await early.close();
      expect(await rejection(gone)).toBeInstanceOf(SessionExpiredError);
      expect(await stillPending(locked, 100)).toBe(true);
      await secondLock.unlock();
      const held = await locked;
      expect(held.key).toBe(mutex.key);
      // Held at the read that confirmed the turn, after the second's delete.
      expect(held.header.revision).toBeGreaterThan(held.fencingToken);
      expect(watches.map((w) => w.startRevision ?? 0n)).toEqual([held.fencingToken + 1n, 0n]);
      // Held: a later waiter between the keys coming and going is no loss.
      const later = await leased(0x200n);
      const { locked: third } = await queue(new Mutex(later, name));
      await later.close();
      expect(await rejection(third)).toBeInstanceOf(SessionExpiredError);
      // Its delete has reached the watch by now.
      await sleep(100);
      expect(held.signal.aborted).toBe(false);
      // Our key deleted while held: the signal says lost, with the revision of the delete.
      const deleted = await admin.delete(held.key);
      await eventually(() => held.signal.aborted);
      const reason = held.signal.reason as LockLostError;
      expect(reason).toBeInstanceOf(LockLostError);
      expect(reason.message).toContain(`deleted at revision ${deleted.header.revision}`);
      expect(await rejection(held.unlock())).toBeInstanceOf(LockLostError);
      expect(watches).toHaveLength(2);
      await waiter.close();
    });

    it('with two keys ahead, its own key deleted while waiting fails the wait at once, never success', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      const second = await fixture.session();
      const { locked: secondLocked } = await queue(new Mutex(second, name));
      const waiter = await fixture.session();
      const mutex = new Mutex(waiter, name);
      const { locked } = await queue(mutex);
      await sleep(50);
      await admin.delete(mutex.key);
      const error = await rejection(locked);
      expect(error).toBeInstanceOf(SessionExpiredError);
      expect((error as SessionExpiredError).key).toBe(mutex.key);
      // The line goes on without it.
      await lock.unlock();
      await (await secondLocked).unlock();
      expect(await keysUnder(name)).toEqual([]);
    });

    it('with two keys ahead, its own key deleted right after the read that confirms the turn: a failed wait or a lost lock, never a lock still held', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      const second = await fixture.session();
      const { locked: secondLocked } = await queue(new Mutex(second, name));
      let armed = false;
      let mine = '';
      const racy = withHookAfterCommit(fixture.client(), async () => {
        if (!armed) return;
        armed = false;
        await admin.delete(mine);
      });
      const waiter = await fixture.session({}, racy);
      const mutex = new Mutex(waiter, name);
      mine = mutex.key;
      const { locked } = await queue(mutex);
      await lock.unlock();
      const secondLock = await secondLocked;
      await sleep(50);
      // The waiter's next txn is the read after the second's delete.
      armed = true;
      await secondLock.unlock();
      const outcome = await locked.then(
        (held) => held,
        (error: unknown) => error,
      );
      if (outcome instanceof SessionExpiredError) {
        expect(outcome.key).toBe(mine);
      } else {
        const held = outcome as Lock;
        await eventually(() => held.signal.aborted);
        expect(held.signal.reason).toBeInstanceOf(LockLostError);
      }
      expect(armed).toBe(false);
      expect(await keysUnder(name)).toEqual([]);
    });

    it('handoffs down a line of three: each unlock is no loss, in FIFO order', async () => {
      const name = `${prefix()}lock`;
      const sessions = [await fixture.session(), await fixture.session(), await fixture.session()];
      let held = await new Mutex(sessions[0]!, name).lock();
      const line: Array<{ key: string; locked: Promise<Lock> }> = [];
      for (const session of sessions.slice(1)) {
        const mutex = new Mutex(session, name);
        line.push({ key: mutex.key, ...(await queue(mutex)) });
      }
      for (let i = 3; i <= 9; i++) {
        // The one queued next has two keys ahead of it.
        const mutex = new Mutex(sessions[i % 3]!, name);
        const next = line.shift()!;
        await held.unlock();
        expect(held.signal.reason).toBeInstanceOf(LockNotHeldError);
        held = await next.locked;
        expect(held.key).toBe(next.key);
        expect(held.signal.aborted).toBe(false);
        line.push({ key: mutex.key, ...(await queue(mutex)) });
      }
      for (const next of line) {
        await held.unlock();
        expect(held.signal.reason).toBeInstanceOf(LockNotHeldError);
        held = await next.locked;
        expect(held.key).toBe(next.key);
      }
      await held.unlock();
      expect(held.signal.reason).toBeInstanceOf(LockNotHeldError);
      expect(await keysUnder(name)).toEqual([]);
    });

    it('a second lock() on the same session waits for the first hold, then holds with a new token', async () => {
      const name = `${prefix()}lock`;
      const session = await fixture.session();
      const a = await new Mutex(session, name).lock();
      const second = new Mutex(session, name).lock();
      expect(await stillPending(second, 150)).toBe(true);
      // Still the one key, and still a's incarnation: the second call has not queued in etcd.
      expect((await keysUnder(name)).map((kv) => kv.createRevision)).toEqual([a.fencingToken]);
      await a.unlock();
      const b = await second;
      expect(b.key).toBe(a.key);
      expect(b.fencingToken).toBeGreaterThan(a.fencingToken);
      expect(a.signal.reason).toBeInstanceOf(LockNotHeldError);
      expect(b.signal.aborted).toBe(false);
      expect((await keysUnder(name)).map((kv) => kv.createRevision)).toEqual([b.fencingToken]);
      await b.unlock();
      expect(await keysUnder(name)).toEqual([]);
    });

    it('calls of one session take turns in call order, and an aborted one leaves the line', async () => {
      const name = `${prefix()}lock`;
      const session = await fixture.session();
      const first = await new Mutex(session, name).lock();
      const order: string[] = [];
      const controller = new AbortController();
      // A Mutex object each: one object gives out one hold at a time (hold-end.test.ts).
      const calls = ['b', 'c', 'd'].map((label) => {
        const mutex = new Mutex(session, name);
        const call = mutex.lock(label === 'c' ? { signal: controller.signal } : {});
        return call.then(
          (lock) => {
            order.push(label);
            return lock;
          },
          (error: unknown) => {
            order.push(`${label} failed`);
            throw error;
          },
        );
      });
      controller.abort();
      expect(await rejection(calls[1]!)).toBeInstanceOf(AbortedError);
      expect(await stillPending(calls[0]!, 100)).toBe(true);
      await first.unlock();
      const b = await calls[0]!;
      expect(await stillPending(calls[2]!, 100)).toBe(true);
      await b.unlock();
      const d = await calls[2]!;
      expect(order).toEqual(['c failed', 'b', 'd']);
      expect(d.fencingToken).toBeGreaterThan(b.fencingToken);
      expect(b.fencingToken).toBeGreaterThan(first.fencingToken);
      await d.unlock();
      expect(await keysUnder(name)).toEqual([]);
    });

    it('a lost hold passes the turn to the next call of its session, which fails if the session ended', async () => {
      const name = `${prefix()}lock`;
      const session = await fixture.session();
      const a = await new Mutex(session, name).lock();
      const second = new Mutex(session, name).lock();
      expect(await stillPending(second, 100)).toBe(true);
      // Deleted under the holder: a's signal fires, and the second call queues afresh and holds.
      await admin.delete(a.key);
      const b = await second;
      expect(a.signal.reason).toBeInstanceOf(LockLostError);
      expect(b.fencingToken).toBeGreaterThan(a.fencingToken);
      const third = new Mutex(session, name).lock();
      expect(await stillPending(third, 100)).toBe(true);
      await admin.lease.revoke(session.leaseId);
      expect(await rejection(third)).toBeInstanceOf(SessionExpiredError);
      expect(await keysUnder(name)).toEqual([]);
    });

    it('tryLock fails at once while another call of the session holds or waits', async () => {
      const name = `${prefix()}lock`;
      const session = await fixture.session();
      const held = await new Mutex(session, name).lock();
      const refused = await rejection(new Mutex(session, name).tryLock());
      expect(refused).toBeInstanceOf(LockedError);
      expect((refused as LockedError).holderKey).toBe(held.key);
      expect((await keysUnder(name)).map((kv) => kv.createRevision)).toEqual([held.fencingToken]);
      await held.unlock();
      const again = await new Mutex(session, name).tryLock();
      expect(again.fencingToken).toBeGreaterThan(held.fencingToken);
      await again.unlock();
    });

    it('withLock runs the function under the lock and unlocks, also when it throws', async () => {
      const name = `${prefix()}lock`;
      const session = await fixture.session();
      const mutex = new Mutex(session, name);
      const result = await mutex.withLock(async (lock) => {
        expect((await keysUnder(name)).map((kv) => kv.keyText())).toEqual([lock.key]);
        return 42;
      });
      expect(result).toBe(42);
      expect(await keysUnder(name)).toEqual([]);
      const failure = new Error('boom');
      expect(await rejection(mutex.withLock(() => Promise.reject(failure)))).toBe(failure);
      expect(await keysUnder(name)).toEqual([]);
    });

    it('await using unlocks', async () => {
      const name = `${prefix()}lock`;
      const session = await fixture.session();
      {
        await using lock = await new Mutex(session, name).lock();
        expect(lock.signal.aborted).toBe(false);
      }
      expect(await keysUnder(name)).toEqual([]);
    });
  });

  describe('no lost wakeup', () => {
    it('wakes when the holder unlocks, is revoked, or its key is deleted', async () => {
      const name = `${prefix()}lock`;
      for (const release of ['unlock', 'revoke', 'delete'] as const) {
        const holder = await fixture.session();
        const lock = await new Mutex(holder, name).lock();
        const waiter = await fixture.session();
        const { locked } = await queue(new Mutex(waiter, name));
        if (release === 'unlock') await lock.unlock();
        if (release === 'revoke') await admin.lease.revoke(holder.leaseId);
        if (release === 'delete') await admin.delete(lock.key);
        const next = await locked;
        expect(next.key).toBe(new Mutex(waiter, name).key);
        await next.unlock();
      }
    });

    it('wakes when the holder lease expires (orphaned session)', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session({ ttl: 1 });
      const held = await new Mutex(holder, name).lock();
      const waiter = await fixture.session();
      const { locked } = await queue(new Mutex(waiter, name));
      holder.orphan();
      // Only the expiry's deletion of the holder's key can wake the waiter (its own lease has 60 s):
      // a missed wakeup hangs until the test's timeout, however loaded the machine.
      const next = await locked;
      expect(await admin.get(held.key)).toBeUndefined();
      expect((await admin.lease.timeToLive(holder.leaseId)).ttl).toBe(-1n);
      await next.unlock();
    });

    it('sees a predecessor deleted between its read (the acquire txn) and its watch', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      // The acquire txn reads the holder's key as the one to wait for; the holder's key is deleted
      // after that txn answered and before the waiter's watch exists: the watch, from just after
      // the txn's revision, still sees the delete.
      let commits = 0;
      const racy = withHookAfterCommit(fixture.client(), async (commit) => {
        commits = commit;
        if (commit === 1) await admin.delete(lock.key);
      });
      const waiter = await fixture.session({}, racy);
      const next = await new Mutex(waiter, name).lock({ signal: AbortSignal.timeout(5_000) });
      expect(next.key).toBe(new Mutex(waiter, name).key);
      // The acquire txn; the holder was the only key ahead, so the watch's delete event is the
      // turn. A read is made only when the watch started behind the store (the delete came first):
      // then etcd would replay it from its 100 ms catch-up loop, and a read tells sooner.
      expect(commits).toBeGreaterThanOrEqual(1);
      expect(commits).toBeLessThanOrEqual(2);
      expect(next.header.revision).toBeGreaterThan(next.fencingToken);
      await next.unlock();
    });

    it('sees its own key deleted between its read (the acquire txn) and its watch: no success', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      // The waiter's own key goes right after the txn that queued it, then the holder's: the watch,
      // from just after the txn, sees its own delete first (or a read finds the key gone).
      let mine = '';
      const racy = withHookAfterCommit(fixture.client(), async (commit) => {
        if (commit === 1) {
          await admin.delete(mine);
          await lock.unlock();
        }
      });
      const waiter = await fixture.session({}, racy);
      const mutex = new Mutex(waiter, name);
      mine = mutex.key;
      const error = await rejection(mutex.lock({ signal: AbortSignal.timeout(5_000) }));
      expect(error).toBeInstanceOf(SessionExpiredError);
      expect((error as SessionExpiredError).key).toBe(mine);
      expect(await keysUnder(name)).toEqual([]);
    });

    it('sees the next predecessor deleted between its confirming read and its watch', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      const quitter = new AbortController();
      const { locked: quitting } = await queue(
        new Mutex(await fixture.session(), name),
        quitter.signal,
      );
      // The last waiter waits for the quitter; when the quitter gives up, its confirming read (its
      // second txn) finds the holder, whose key is deleted before the waiter watches it.
      const racy = withHookAfterCommit(fixture.client(), async (commit) => {
        if (commit === 2) await admin.delete(lock.key);
      });
      const waiter = await fixture.session({}, racy);
      const mutex = new Mutex(waiter, name);
      const { locked } = await queue(mutex);
      quitter.abort();
      expect(await rejection(quitting)).toBeInstanceOf(AbortedError);
      const next = await locked;
      expect(next.key).toBe(mutex.key);
      expect(await keysUnder(name)).toEqual([
        expect.objectContaining({ createRevision: next.fencingToken }),
      ]);
      await next.unlock();
    });
  });

  describe('own key lost while waiting', () => {
    it('fails with SessionExpiredError at once when its lease is revoked, never succeeds', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      const waiter = await fixture.session();
      const { locked } = await queue(new Mutex(waiter, name));
      await admin.lease.revoke(waiter.leaseId);
      // Go bug 11456: the holder leaving right after must not turn this into a success.
      await lock.unlock();
      expect(await rejection(locked)).toBeInstanceOf(SessionExpiredError);
      expect(await keysUnder(name)).toEqual([]);
    });

    it('fails with SessionExpiredError when its key is deleted (etcd issue 19597)', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      const waiter = await fixture.session();
      const mutex = new Mutex(waiter, name);
      const { locked } = await queue(mutex);
      await admin.delete(mutex.key);
      const error = await rejection(locked);
      expect(error).toBeInstanceOf(SessionExpiredError);
      expect((error as SessionExpiredError).key).toBe(mutex.key);
      expect(lock.signal.aborted).toBe(false);
      await lock.unlock();
    });

    it('fails with SessionExpiredError as soon as its session ends (orphaned); the key then expires', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      const waiter = await fixture.session({ ttl: 1 });
      const { locked } = await queue(new Mutex(waiter, name));
      waiter.orphan();
      expect(await rejection(locked)).toBeInstanceOf(SessionExpiredError);
      await eventually(async () => (await keysUnder(name)).length === 1);
      await lock.unlock();
    });
  });

  describe('cleanup', () => {
    it('an abort or a timeout leaves no key', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      const waiter = await fixture.session();
      const controller = new AbortController();
      const { locked } = await queue(new Mutex(waiter, name), controller.signal);
      controller.abort(new Error('no longer needed'));
      const aborted = await rejection(locked);
      expect(aborted).toBeInstanceOf(AbortedError);
      expect((await keysUnder(name)).map((kv) => kv.keyText())).toEqual([lock.key]);

      const timedOut = await rejection(
        new Mutex(waiter, name).lock({ signal: AbortSignal.timeout(200) }),
      );
      expect(timedOut).toBeInstanceOf(AbortedError);
      expect((await keysUnder(name)).map((kv) => kv.keyText())).toEqual([lock.key]);
      await lock.unlock();
    });

    it('an aborted waiter does not delete the key another lock call of its session waits with', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      const waiter = await fixture.session();
      const patient = await queue(new Mutex(waiter, name));
      const controller = new AbortController();
      const impatient = new Mutex(waiter, name).lock({ signal: controller.signal });
      controller.abort();
      expect(await rejection(impatient)).toBeInstanceOf(AbortedError);
      expect((await keysUnder(name)).length).toBe(2);
      await lock.unlock();
      const next = await patient.locked;
      await next.unlock();
    });

    it('compaction during the wait neither breaks the wait nor leaves a key', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      const waiter = await fixture.session();
      const controller = new AbortController();
      const first = await queue(new Mutex(waiter, name), controller.signal);
      for (let i = 0; i < 5; i++) await admin.put(`${prefix()}noise`, String(i));
      const now = (await admin.get(`${prefix()}noise`))?.modRevision ?? 0n;
      await admin.compact(now);
      controller.abort();
      expect(await rejection(first.locked)).toBeInstanceOf(AbortedError);
      expect((await keysUnder(name)).length).toBe(1);

      const second = await queue(new Mutex(waiter, name));
      await admin.put(`${prefix()}noise`, 'more');
      await admin.compact((await admin.get(`${prefix()}noise`))?.modRevision ?? 0n);
      await lock.unlock();
      const next = await second.locked;
      await next.unlock();
      expect(await keysUnder(name)).toEqual([]);
    });
  });

  describe('tryLock and unlock', () => {
    it('tryLock fails with LockedError and leaves no key', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lock = await new Mutex(holder, name).lock();
      const other = await fixture.session();
      const error = await rejection(new Mutex(other, name).tryLock());
      expect(error).toBeInstanceOf(LockedError);
      expect(error).toMatchObject({ code: 'LOCKED', holderKey: lock.key });
      expect((await keysUnder(name)).map((kv) => kv.keyText())).toEqual([lock.key]);
      await lock.unlock();
      const mine = await new Mutex(other, name).tryLock();
      expect(mine.key).toBe(new Mutex(other, name).key);
      await mine.unlock();
    });

    it('after unlock the signal says released, though the key watch sees the delete first', async () => {
      const name = `${prefix()}lock`;
      const session = await fixture.session();
      for (let i = 0; i < 10; i++) {
        const lock = await new Mutex(session, name).lock();
        expect(lock.signal.aborted).toBe(false);
        await lock.unlock();
        expect(lock.signal.aborted).toBe(true);
        expect(lock.signal.reason).toBeInstanceOf(LockNotHeldError);
      }
    });

    it('unlock when not held fails: twice (LockNotHeldError), after loss (LockLostError)', async () => {
      const name = `${prefix()}lock`;
      const session = await fixture.session();
      const lock = await new Mutex(session, name).lock();
      await lock.unlock();
      expect(await rejection(lock.unlock())).toBeInstanceOf(LockNotHeldError);
      const again = await new Mutex(session, name).lock();
      await admin.delete(again.key);
      const error = await rejection(again.unlock());
      expect(error).toBeInstanceOf(LockLostError);
      expect(error).toMatchObject({ key: again.key, fencingToken: again.fencingToken });
    });

    it('a stale unlock never deletes a newer incarnation of the key (etcd issue 22082)', async () => {
      const name = `${prefix()}lock`;
      const session = await fixture.session();
      const old = await new Mutex(session, name).lock();
      await admin.delete(old.key);
      const renewed = await new Mutex(session, name).lock();
      expect(renewed.key).toBe(old.key);
      expect(renewed.fencingToken).toBeGreaterThan(old.fencingToken);
      expect(await rejection(old.unlock())).toBeInstanceOf(LockLostError);
      expect((await admin.get(renewed.key))?.createRevision).toBe(renewed.fencingToken);
      await renewed.unlock();
    });
  });

  describe('ownership', () => {
    it('the isOwner compare fails after expiry, unlock and re-creation (version > 0 would not)', async () => {
      const p = prefix();
      const name = `${p}lock`;
      const guarded = async (lock: Lock) =>
        (
          await admin
            .txn()
            .if(lock.isOwner())
            .then(op.put(`${p}data`, 'x'))
            .commit()
        ).succeeded;

      const expiring = await fixture.session();
      const a = await new Mutex(expiring, name).lock();
      expect(await guarded(a)).toBe(true);
      await admin.lease.revoke(expiring.leaseId);
      expect(await guarded(a)).toBe(false);

      const session = await fixture.session();
      const b = await new Mutex(session, name).lock();
      await b.unlock();
      expect(await guarded(b)).toBe(false);

      const c = await new Mutex(session, name).lock();
      await admin.delete(c.key);
      const d = await new Mutex(session, name).lock();
      expect(await guarded(c)).toBe(false);
      expect(await guarded(d)).toBe(true);
      // The naive guard passes for the stale handle: the same session re-created the key.
      const naive = await admin
        .txn()
        .if(cmp.version(c.key, '>', 0n))
        .then(op.put(`${p}data`, 'y'))
        .commit();
      expect(naive.succeeded).toBe(true);
      await d.unlock();
    });

    it('lock.txn() applies while held and throws LockLostError once lost', async () => {
      const p = prefix();
      const session = await fixture.session();
      const lock = await new Mutex(session, `${p}lock`).lock();
      const written = await lock
        .txn()
        .then(op.put(`${p}data`, '1'))
        .commit();
      expect(written.succeeded).toBe(true);
      expect(written.responses[0]?.kind).toBe('put');
      // Your own compares still pick your branch.
      const cas = await lock
        .txn()
        .if(cmp.value(`${p}data`, '==', 'nope'))
        .then(op.put(`${p}data`, '2'))
        .else(op.get(`${p}data`))
        .commit();
      expect(cas.succeeded).toBe(false);
      if (!cas.succeeded) expect(cas.responses[0].kvs[0]?.text()).toBe('1');
      await admin.delete(lock.key);
      const error = await rejection(
        lock
          .txn()
          .then(op.put(`${p}data`, '3'))
          .commit(),
      );
      expect(error).toBeInstanceOf(LockLostError);
      expect((await admin.get(`${p}data`))?.text()).toBe('1');
    });

    it('the signal fires when the key is deleted, and when the session ends', async () => {
      const name = `${prefix()}lock`;
      const a = await fixture.session();
      const lockA = await new Mutex(a, name).lock();
      await admin.delete(lockA.key);
      await eventually(() => lockA.signal.aborted);
      expect(lockA.signal.reason).toBeInstanceOf(LockLostError);

      // A session ended elsewhere (its lease revoked by another client): lost.
      const b = await fixture.session();
      const lockB = await new Mutex(b, name).lock();
      await admin.lease.revoke(b.leaseId);
      await eventually(() => lockB.signal.aborted);
      expect(lockB.signal.reason).toBeInstanceOf(LockLostError);

      // A session this process ended (orphaned, closed): released, not lost.
      const c = await fixture.session();
      const lockC = await new Mutex(c, name).lock();
      c.orphan();
      expect(lockC.signal.aborted).toBe(true);
      expect(lockC.signal.reason).toBeInstanceOf(LockNotHeldError);
      await admin.lease.revoke(c.leaseId);
    });

    it('a lock taken over from its holder keeps watching with the watch that waited: one watch, its loss seen', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const lockA = await new Mutex(holder, name).lock();
      const { etcd, watches } = recording(fixture.client());
      const waiter = await Session.create(etcd, {});
      try {
        const mutex = new Mutex(waiter, name);
        const { locked } = await queue(mutex);
        await eventually(() => watches.length >= 1);
        await lockA.unlock();
        const lockB = await locked;
        // The only key ahead: one range watch over both keys (the session's, from now), for the
        // wait and then the hold.
        expect(watches.map((w) => w.startRevision ?? 0n)).toEqual([0n]);
        expect(watches.every((w) => w.range !== undefined)).toBe(true);
        // A later waiter (its key may sort between the two) coming and going is no loss.
        const later = await fixture.session();
        const { locked: third } = await queue(new Mutex(later, name));
        await later.close();
        expect(await rejection(third)).toBeInstanceOf(SessionExpiredError);
        expect(lockB.signal.aborted).toBe(false);
        // Our key deleted while held: the signal says lost, with the revision of the delete.
        const deleted = await admin.delete(lockB.key);
        await eventually(() => lockB.signal.aborted);
        const reason = lockB.signal.reason as LockLostError;
        expect(reason).toBeInstanceOf(LockLostError);
        expect(reason.message).toContain(`deleted at revision ${deleted.header.revision}`);
        expect(await rejection(lockB.unlock())).toBeInstanceOf(LockLostError);
      } finally {
        await waiter.close();
      }
    });

    it('an unlock that fails goes on watching the key: its loss is still seen', async () => {
      const name = `${prefix()}lock`;
      let failNext = false;
      const failing = withHookAfterCommit(fixture.client(), async () => {
        if (failNext) {
          failNext = false;
          throw new Error('the unlock call failed');
        }
      });
      const holder = await fixture.session();
      const first = await new Mutex(holder, name).lock();
      const session = await fixture.session({}, failing);
      const { locked } = await queue(new Mutex(session, name));
      await first.unlock();
      const lock = await locked;
      // The call fails after the delete applied (an unknown outcome): the delete its watch saw
      // meanwhile is then the loss.
      failNext = true;
      expect(await rejection(lock.unlock())).toEqual(
        expect.objectContaining({ message: 'the unlock call failed' }),
      );
      await eventually(() => lock.signal.aborted);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      expect(await keysUnder(name)).toEqual([]);
    });

    it('a lock taken over from its holder: unlock releases it, and its own delete is no loss', async () => {
      const name = `${prefix()}lock`;
      const sessions = [await fixture.session(), await fixture.session()];
      let held = await new Mutex(sessions[0]!, name).lock();
      for (let i = 1; i <= 6; i++) {
        const next = new Mutex(sessions[i % 2]!, name);
        const { locked } = await queue(next);
        await held.unlock();
        expect(held.signal.reason).toBeInstanceOf(LockNotHeldError);
        held = await locked;
        expect(held.key).toBe(next.key);
        expect(held.header.revision).toBeGreaterThan(held.fencingToken);
      }
      await held.unlock();
      expect(held.signal.reason).toBeInstanceOf(LockNotHeldError);
      expect(await keysUnder(name)).toEqual([]);
    });

    it('lock() on a session whose lease was revoked elsewhere fails with SessionExpiredError', async () => {
      const session = await fixture.session();
      await admin.lease.revoke(session.leaseId);
      // Usually the keepalive has not heard yet and the server refuses the put on the dead lease;
      // its first refresh may already have answered TTL 0 (then the session is done): either way
      // the lock fails the same. (Asserting the first case raced with that refresh on CI.)
      const error = await rejection(new Mutex(session, `${prefix()}lock`).lock());
      expect(error).toBeInstanceOf(SessionExpiredError);
    });

    it('lock() on an ended session fails at once with SessionExpiredError', async () => {
      const session = await fixture.session();
      await session.close();
      const error = await rejection(new Mutex(session, `${prefix()}lock`).lock());
      expect(error).toBeInstanceOf(SessionExpiredError);
    });
  });
});
