// RWMutex (Go's read/write key layout, shared readers, exclusive and fair writers) and Semaphore
// (N holders, FIFO, any release admits the next waiter), all cancellable without leaks.
import { AbortedError, InvalidArgumentError } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { describe, expect, it } from 'vitest';
import { LockedError, SessionExpiredError } from '../../src/errors.js';
import type { Lock } from '../../src/lock/mutex.js';
import { RWMutex } from '../../src/lock/rwmutex.js';
import { type Permit, Semaphore } from '../../src/lock/semaphore.js';
import {
  eventually,
  type Fixture,
  rejection,
  sleep,
  stillPending,
  suiteClients,
} from '../recipes-support.js';

describeEachBackend('RWMutex and Semaphore', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  const keys = async (p: string) =>
    (await admin().range({ prefix: p, sort: { target: 'create', order: 'ascend' } })).kvs.map(
      (kv) => kv.keyText(),
    );

  /** Starts an acquisition and resolves once its key is in the queue. */
  async function queued<T>(p: string, start: () => Promise<T>): Promise<{ done: Promise<T> }> {
    const before = (await keys(p)).length;
    const done = start();
    done.catch(() => {});
    await eventually(async () => (await keys(p)).length > before);
    return { done };
  }

  describe('RWMutex', () => {
    it("uses Go's layout: name/read/<decimal> and name/write/<decimal>, on the session lease", async () => {
      const name = `${prefix()}rw`;
      const session = await fixture.session();
      const rw = new RWMutex(session, name);
      const read = await rw.readLock();
      expect(read.key).toMatch(new RegExp(`^${name}/read/\\d+$`));
      await read.unlock();
      const write = await rw.writeLock();
      expect(write.key).toMatch(new RegExp(`^${name}/write/\\d+$`));
      expect((await admin().get(write.key))?.lease).toBe(session.leaseId);
      expect(write.fencingToken).toBe((await admin().get(write.key))?.createRevision);
      await write.unlock();
      expect(await keys(`${name}/`)).toEqual([]);
    });

    it('readers share the lock; a writer waits for every earlier reader', async () => {
      const name = `${prefix()}rw`;
      const a = new RWMutex(await fixture.session(), name);
      const b = new RWMutex(await fixture.session(), name);
      const w = new RWMutex(await fixture.session(), name);
      const r1 = await a.readLock();
      const r2 = await b.readLock();
      const writer = await queued(`${name}/`, () => w.writeLock());
      expect(await stillPending(writer.done, 100)).toBe(true);
      await r2.unlock();
      expect(await stillPending(writer.done, 100)).toBe(true);
      await r1.unlock();
      const write = await writer.done;
      // Held at a revision where neither reader's key was left.
      const at = { revision: write.header.revision };
      expect(await admin().get(r1.key, at)).toBeUndefined();
      expect(await admin().get(r2.key, at)).toBeUndefined();
      expect((await admin().get(write.key, at))?.createRevision).toBe(write.fencingToken);
      await write.unlock();
    });

    it('a writer excludes everyone, and readers that came after a waiting writer wait (fair)', async () => {
      const name = `${prefix()}rw`;
      const rws = await Promise.all(
        [1, 2, 3, 4].map(async () => new RWMutex(await fixture.session(), name)),
      );
      const firstReader = await rws[0]!.readLock();
      const writer = await queued(`${name}/`, () => rws[1]!.writeLock());
      const lateReader = await queued(`${name}/`, () => rws[2]!.readLock());
      expect(await stillPending(writer.done, 100)).toBe(true);
      expect(await stillPending(lateReader.done, 10)).toBe(true);
      await firstReader.unlock();
      const write = await writer.done;
      const lateWriter = await queued(`${name}/`, () => rws[3]!.writeLock());
      expect(await stillPending(lateReader.done, 100)).toBe(true);
      await write.unlock();
      const read = await lateReader.done;
      expect(await stillPending(lateWriter.done, 100)).toBe(true);
      await read.unlock();
      await (await lateWriter.done).unlock();
    });

    it('concurrent readers and writers never overlap a writer with anyone', async () => {
      const name = `${prefix()}rw`;
      let readers = 0;
      let writers = 0;
      let violations = 0;
      const worker = async (write: boolean) => {
        const rw = new RWMutex(await fixture.session(), name);
        for (let i = 0; i < 4; i++) {
          const lock: Lock = write ? await rw.writeLock() : await rw.readLock();
          if (write) writers++;
          else readers++;
          if (writers > 1 || (writers === 1 && readers > 0)) violations++;
          await sleep(5);
          if (write) writers--;
          else readers--;
          await lock.unlock();
        }
      };
      await Promise.all([worker(true), worker(true), worker(false), worker(false), worker(false)]);
      expect(violations).toBe(0);
      expect(await keys(`${name}/`)).toEqual([]);
    });

    it('an aborted wait leaves no key; a lost own key fails the wait', async () => {
      const name = `${prefix()}rw`;
      const write = await new RWMutex(await fixture.session(), name).writeLock();
      const controller = new AbortController();
      const session = await fixture.session();
      const reader = await queued(`${name}/`, () =>
        new RWMutex(session, name).readLock({ signal: controller.signal }),
      );
      controller.abort();
      expect(await rejection(reader.done)).toBeInstanceOf(AbortedError);
      expect(await keys(`${name}/`)).toEqual([write.key]);

      const other = await queued(`${name}/`, () => new RWMutex(session, name).writeLock());
      await admin().lease.revoke(session.leaseId);
      expect(await rejection(other.done)).toBeInstanceOf(SessionExpiredError);
      expect(await keys(`${name}/`)).toEqual([write.key]);
      await write.unlock();
    });
  });

  describe('Semaphore', () => {
    it('admits N holders at once, in FIFO order', async () => {
      const name = `${prefix()}sem`;
      const sems = await Promise.all(
        [1, 2, 3, 4].map(async () => new Semaphore(await fixture.session(), name, 2)),
      );
      const p1 = await sems[0]!.acquire();
      const p2 = await sems[1]!.acquire();
      expect(p1.key).toMatch(new RegExp(`^${name}/\\d+$`));
      const third = await queued(`${name}/`, () => sems[2]!.acquire());
      const fourth = await queued(`${name}/`, () => sems[3]!.acquire());
      expect(await stillPending(third.done, 100)).toBe(true);
      await p2.release();
      const p3 = await third.done;
      expect(await stillPending(fourth.done, 100)).toBe(true);
      await p1.release();
      const p4 = await fourth.done;
      expect([p1, p2, p3, p4].map((p) => p.fencingToken)).toEqual(
        [p1, p2, p3, p4].map((p) => p.fencingToken).sort((a, b) => (a < b ? -1 : 1)),
      );
      await p3.release();
      await p4.release();
      expect(await keys(`${name}/`)).toEqual([]);
    });

    it('the release of an older holder (not the newest one ahead) admits the waiter', async () => {
      const name = `${prefix()}sem`;
      const sem = (s: Awaited<ReturnType<Fixture['session']>>) => new Semaphore(s, name, 2);
      const oldest = await sem(await fixture.session()).acquire();
      const newer = await sem(await fixture.session()).acquire();
      const waiter = await queued(`${name}/`, async () => sem(await fixture.session()).acquire());
      expect(await stillPending(waiter.done, 100)).toBe(true);
      await oldest.release();
      const admitted = await waiter.done;
      expect(await keys(`${name}/`)).toEqual([newer.key, admitted.key]);
      // Admitted at a revision where the oldest was gone and the newer one still held.
      const at = { revision: admitted.header.revision };
      expect(await admin().get(oldest.key, at)).toBeUndefined();
      expect((await admin().get(newer.key, at))?.createRevision).toBe(newer.fencingToken);
    });

    it('never admits more than N under contention', async () => {
      const name = `${prefix()}sem`;
      let holders = 0;
      let most = 0;
      const worker = async () => {
        const semaphore = new Semaphore(await fixture.session(), name, 3);
        for (let i = 0; i < 3; i++) {
          const permit: Permit = await semaphore.acquire();
          holders++;
          most = Math.max(most, holders);
          await sleep(20);
          holders--;
          await permit.release();
        }
      };
      await Promise.all([1, 2, 3, 4, 5, 6, 7].map(worker));
      // Never more than N; more than one at once (exactly N depends on timing: see the FIFO test).
      expect(most).toBeLessThanOrEqual(3);
      expect(most).toBeGreaterThan(1);
      expect(await keys(`${name}/`)).toEqual([]);
    });

    it('refuses a permit count that is not a positive integer with InvalidArgumentError', async () => {
      const session = await fixture.session();
      for (const permits of [0, -1, 1.5, Number.NaN]) {
        expect(() => new Semaphore(session, `${prefix()}sem`, permits)).toThrow(
          InvalidArgumentError,
        );
      }
      expect(await keys(`${prefix()}sem/`)).toEqual([]);
    });

    it('tryAcquire fails with LockedError and leaves no key; an abort leaves no key', async () => {
      const name = `${prefix()}sem`;
      const session = await fixture.session();
      const holder = await new Semaphore(session, name, 1).acquire();
      const other = await fixture.session();
      const error = await rejection(new Semaphore(other, name, 1).tryAcquire());
      expect(error).toBeInstanceOf(LockedError);
      expect(await keys(`${name}/`)).toEqual([holder.key]);
      const free = await new Semaphore(other, name, 2).tryAcquire();
      expect(await keys(`${name}/`)).toEqual([holder.key, free.key]);
      await free.release();

      const timedOut = await rejection(
        new Semaphore(other, name, 1).acquire({ signal: AbortSignal.timeout(150) }),
      );
      expect(timedOut).toBeInstanceOf(AbortedError);
      expect(await keys(`${name}/`)).toEqual([holder.key]);
      await holder.release();
      await holder[Symbol.asyncDispose]();
      expect(holder.signal.aborted).toBe(true);
    });
  });
});
