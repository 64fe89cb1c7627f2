// One rule on every path a hold ends by: a lock or leadership lost while held is reported with the
// same error by its signal, unlock(), withLock and the end of an `await using` block; a lock()
// nested in its own withLock, or on a Mutex object whose own lock() still holds or acquires, fails
// at once instead of waiting on itself.
import { op } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { describe, expect, it } from 'vitest';
import { Election } from '../../src/election/election.js';
import { LeadershipLostError, LockLostError, NestedLockError } from '../../src/errors.js';
import { type Lock, Mutex } from '../../src/lock/mutex.js';
import { Semaphore } from '../../src/lock/semaphore.js';
import { eventually, rejection, sleep, suiteClients } from '../recipes-support.js';

/** The error a block ending with `dispose` throws, the block's own failure being `thrown`. */
async function blockEnd(held: AsyncDisposable, thrown?: Error): Promise<unknown> {
  try {
    await using _held = held;
    if (thrown) throw thrown;
  } catch (error) {
    return error;
  }
  return undefined;
}

describeEachBackend('how a hold ends', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  /** A lock whose key another client deleted; resolves once its signal says so. */
  async function lostLock(mutex: Mutex): Promise<Lock> {
    const lock = await mutex.lock();
    await admin().delete(lock.key);
    await eventually(() => lock.signal.aborted);
    return lock;
  }

  describe('a lost lock', () => {
    it('is LockLostError from its signal, unlock(), withLock and the end of await using', async () => {
      const mutex = new Mutex(await fixture.session(), `${prefix()}lock`);

      const signalled = await lostLock(mutex);
      expect(signalled.signal.reason).toBeInstanceOf(LockLostError);
      expect(await rejection(signalled.unlock())).toBeInstanceOf(LockLostError);

      const disposed = await blockEnd(await lostLock(mutex));
      expect(disposed).toBeInstanceOf(LockLostError);
      expect(disposed).toMatchObject({ code: 'LOCK_LOST' });

      const viaWithLock = await rejection(
        mutex.withLock(async (lock) => {
          await admin().delete(lock.key);
          await eventually(() => lock.signal.aborted);
          return 'done';
        }),
      );
      expect(viaWithLock).toBeInstanceOf(LockLostError);
      expect(viaWithLock).toMatchObject({ key: mutex.key });
      expect(await admin().get(mutex.key)).toBeUndefined();
    });

    it('when the body failed too, both paths report both: SuppressedError(loss, body error)', async () => {
      const mutex = new Mutex(await fixture.session(), `${prefix()}lock`);
      const bodyError = new Error('the work failed');

      const disposed = await blockEnd(await lostLock(mutex), bodyError);
      expect(disposed).toMatchObject({ name: 'SuppressedError', suppressed: bodyError });
      expect((disposed as { error: unknown }).error).toBeInstanceOf(LockLostError);

      const viaWithLock = await rejection(
        mutex.withLock(async (lock) => {
          await admin().delete(lock.key);
          await eventually(() => lock.signal.aborted);
          throw bodyError;
        }),
      );
      expect(viaWithLock).toMatchObject({ name: 'SuppressedError', suppressed: bodyError });
      expect((viaWithLock as { error: unknown }).error).toBeInstanceOf(LockLostError);
    });

    it('a lock held to the end is no error on any path, and the body error alone is reported', async () => {
      const mutex = new Mutex(await fixture.session(), `${prefix()}lock`);
      expect(await blockEnd(await mutex.lock())).toBeUndefined();
      expect(await mutex.withLock(() => 'done')).toBe('done');
      const bodyError = new Error('the work failed');
      expect(await blockEnd(await mutex.lock(), bodyError)).toBe(bodyError);
      expect(await rejection(mutex.withLock(() => Promise.reject(bodyError)))).toBe(bodyError);
      expect(await admin().get(mutex.key)).toBeUndefined();
    });
  });

  describe('a semaphore permit', () => {
    it('follows the lock rule: LockLostError from release() and await using when lost; ended by its session, nothing more', async () => {
      const session = await fixture.session();
      const semaphore = new Semaphore(session, `${prefix()}permits`, 2);
      const lost = async () => {
        const permit = await semaphore.acquire();
        await admin().delete(permit.key);
        await eventually(() => permit.signal.aborted);
        return permit;
      };
      expect(await rejection((await lost()).release())).toBeInstanceOf(LockLostError);
      expect(await blockEnd(await lost())).toBeInstanceOf(LockLostError);
      expect(await blockEnd(await semaphore.acquire())).toBeUndefined();

      const kept = await semaphore.acquire();
      await session.close();
      // The session's close released it: disposing it then does nothing.
      expect(await blockEnd(kept)).toBeUndefined();
      expect(await admin().count({ prefix: `${prefix()}permits/` })).toBe(0n);
    });
  });

  describe('a lost leadership', () => {
    it('is LeadershipLostError from its signal, a guarded txn and the end of await using; resign is no error', async () => {
      const election = new Election(await fixture.session(), `${prefix()}election`);
      const lose = async () => {
        const leadership = await election.campaign('a');
        await admin().delete(leadership.key);
        await eventually(() => leadership.signal.aborted);
        return leadership;
      };

      const signalled = await lose();
      expect(signalled.signal.reason).toBeInstanceOf(LeadershipLostError);
      expect(signalled.signal.reason).toMatchObject({ code: 'LEADERSHIP_LOST' });
      const txn = await rejection(
        signalled
          .txn()
          .then(op.put(`${prefix()}x`, 'v'))
          .commit(),
      );
      expect(txn).toBeInstanceOf(LeadershipLostError);
      expect(txn).toMatchObject({ key: signalled.key, epoch: signalled.epoch });
      await signalled.resign();

      const disposed = await blockEnd(await lose());
      expect(disposed).toBeInstanceOf(LeadershipLostError);
      expect(await blockEnd(await election.campaign('b'))).toBeUndefined();
      expect(await admin().get(election.key)).toBeUndefined();
    });
  });

  describe('a lock() nested in its own withLock', () => {
    it('fails at once with NestedLockError, through any Mutex object of the session and name', async () => {
      const session = await fixture.session();
      const name = `${prefix()}lock`;
      const mutex = new Mutex(session, name);
      const seen = await mutex.withLock(async (outer) => {
        const errors = [
          await rejection(mutex.lock()),
          await rejection(new Mutex(session, name).tryLock()),
          // Across timers and awaits: the async context follows.
          await new Promise<unknown>((resolve) =>
            setTimeout(() => void rejection(mutex.withLock(() => 'inner')).then(resolve), 1),
          ),
        ];
        expect(outer.signal.aborted).toBe(false);
        return errors;
      });
      for (const error of seen) {
        expect(error).toBeInstanceOf(NestedLockError);
        expect(error).toMatchObject({ code: 'NESTED_LOCK', key: mutex.key });
      }
      expect(await admin().get(mutex.key)).toBeUndefined();
    });

    it('another lock, or the same one once unlocked inside, is taken as usual', async () => {
      const session = await fixture.session();
      const mutex = new Mutex(session, `${prefix()}lock`);
      const other = new Mutex(session, `${prefix()}other`);
      const tokens = await mutex.withLock(async (outer) => {
        const inner = await other.withLock((lock) => lock.fencingToken);
        await outer.unlock();
        const again = await mutex.lock({ signal: AbortSignal.timeout(10_000) });
        await again.unlock();
        return [outer.fencingToken, inner, again.fencingToken];
      });
      expect(tokens[2]).toBeGreaterThan(tokens[1] as bigint);
      expect(tokens[1]).toBeGreaterThan(tokens[0] as bigint);
    });

    it('a lock() of the session outside withLock still waits its turn (another caller, not a nested one)', async () => {
      const session = await fixture.session();
      const mutex = new Mutex(session, `${prefix()}lock`);
      const order: string[] = [];
      let release!: () => void;
      const first = mutex.withLock(
        () =>
          new Promise<void>((resolve) => {
            order.push('first holds');
            release = resolve;
          }),
      );
      await eventually(() => order.length === 1);
      const second = mutex.lock().then(async (lock) => {
        order.push('second holds');
        await lock.unlock();
      });
      await sleep(100);
      expect(order).toEqual(['first holds']);
      release();
      await Promise.all([first, second]);
      expect(order).toEqual(['first holds', 'second holds']);
    });
  });

  describe('a lock() on a Mutex object whose own lock() holds or acquires', () => {
    it('fails at once with NestedLockError and sends nothing, while held and while acquiring', async () => {
      const session = await fixture.session();
      const name = `${prefix()}lock`;
      const mutex = new Mutex(session, name);
      const held = await mutex.lock();
      const whileHeld = [
        await rejection(mutex.lock()),
        await rejection(mutex.tryLock()),
        await rejection(mutex.withLock(() => 'never')),
      ];
      // Nothing was queued: the one key is the hold's, never rewritten.
      const keys = (await admin().range({ prefix: `${name}/` })).kvs;
      expect(keys.map((kv) => [kv.keyText(), kv.modRevision])).toEqual([
        [held.key, held.fencingToken],
      ]);
      expect(held.signal.aborted).toBe(false);

      // Another session holds now; this object's lock() is waiting behind it.
      await held.unlock();
      const other = await new Mutex(await fixture.session(), name).lock();
      const waiting = mutex.lock();
      await eventually(async () => (await admin().get(mutex.key)) !== undefined);
      const whileAcquiring = await rejection(mutex.lock());
      await other.unlock();
      const again = await waiting;
      expect(again.fencingToken).toBeGreaterThan(other.fencingToken);
      for (const error of [...whileHeld, whileAcquiring]) {
        expect(error).toBeInstanceOf(NestedLockError);
        expect(error).toMatchObject({ code: 'NESTED_LOCK', key: mutex.key });
      }
      await again.unlock();
    });

    it('takes the lock again once the hold ended: unlocked, lost, or its acquisition failed', async () => {
      const session = await fixture.session();
      const name = `${prefix()}lock`;
      const mutex = new Mutex(session, name);
      const first = await mutex.lock();
      await first.unlock();
      const lost = await lostLock(mutex);
      expect(lost.signal.reason).toBeInstanceOf(LockLostError);
      const other = await new Mutex(await fixture.session(), name).lock();
      expect(await rejection(mutex.tryLock())).toMatchObject({ code: 'LOCKED' });
      const aborted = new AbortController();
      const waiting = mutex.lock({ signal: aborted.signal });
      aborted.abort();
      expect(await rejection(waiting)).toMatchObject({ code: 'ABORTED' });
      await other.unlock();
      const last = await mutex.lock();
      expect(last.fencingToken).toBeGreaterThan(other.fencingToken);
      await last.unlock();
      expect(await admin().get(mutex.key)).toBeUndefined();
    });

    it('concurrent withLock calls on one object, and lock() of other objects, take turns', async () => {
      const session = await fixture.session();
      const name = `${prefix()}lock`;
      const mutex = new Mutex(session, name);
      const order: number[] = [];
      const tokens = await Promise.all(
        [0, 1, 2].map((i) =>
          mutex.withLock(async (lock) => {
            order.push(i);
            await sleep(20);
            return lock.fencingToken;
          }),
        ),
      );
      expect(order).toEqual([0, 1, 2]);
      expect(tokens[1]).toBeGreaterThan(tokens[0] as bigint);
      expect(tokens[2]).toBeGreaterThan(tokens[1] as bigint);
      const held = await mutex.lock();
      const second = new Mutex(session, name).lock();
      await held.unlock();
      const next = await second;
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
      await next.unlock();
    });
  });
});
