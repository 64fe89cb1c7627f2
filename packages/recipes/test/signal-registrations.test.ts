// Waits on a long-lived session or caller signal leave nothing on it once they end, whichever way
// they end: AbortSignal.any() used to leave one registration per wait on each source until that
// source aborted (nodejs/node#55351), so a session that lived long grew without bound.
import { AbortedError, Etcd } from '@etcdkit/client';
import { abortRegistrations, describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { DoubleBarrier } from '../src/barrier/double-barrier.js';
import { SessionExpiredError } from '../src/errors.js';
import { waitForPredecessors } from '../src/line/predecessors.js';
import { type Lock, Mutex } from '../src/lock/mutex.js';
import { eventually, Fixture, rejection } from './recipes-support.js';

/** Waits per test: each used to leave at least one registration behind. */
const ROUNDS = 25;

// The count is taken on the client's signals, so one backend is enough.
describeEachBackend(
  'signal registrations of finished waits',
  ({ backend, prefix }) => {
    const fixture = new Fixture(() => backend().endpoints);
    let admin: Etcd;
    beforeAll(() => {
      admin = new Etcd({ endpoints: backend().endpoints });
    });
    afterEach(() => fixture.close());
    afterAll(() => admin?.close());

    /** Starts `mutex.lock()` and resolves once its key is queued behind the holder's. */
    async function queued(mutex: Mutex, signal: AbortSignal): Promise<{ locked: Promise<Lock> }> {
      const locked = mutex.lock({ signal });
      locked.catch(() => {});
      await eventually(async () => (await admin.get(mutex.key)) !== undefined);
      return { locked };
    }

    it('contended Mutex.lock() calls, granted, aborted or failed, leave the session and caller signals as they were', async () => {
      const name = `${prefix()}lock`;
      const holder = await fixture.session();
      const session = await fixture.session();
      const caller = new AbortController();
      const before = [abortRegistrations(session.signal), abortRegistrations(caller.signal)];
      for (let round = 0; round < ROUNDS; round++) {
        // Granted after a wait.
        let held = await new Mutex(holder, name).lock();
        const mutex = new Mutex(session, name);
        const granted = await queued(mutex, caller.signal);
        await held.unlock();
        await (await granted.locked).unlock();
        // Aborted while waiting, by a signal of its own.
        held = await new Mutex(holder, name).lock();
        const abort = new AbortController();
        const aborted = await queued(mutex, abort.signal);
        abort.abort();
        expect(await rejection(aborted.locked)).toBeInstanceOf(AbortedError);
        // Failed while waiting: its own key was deleted.
        const lost = await queued(mutex, caller.signal);
        await admin.delete(mutex.key);
        expect(await rejection(lost.locked)).toBeInstanceOf(SessionExpiredError);
        await held.unlock();
      }
      // The range watch the session keeps just behind the holder across waits (line/
      // kept-ahead-watch.ts) listens to the session's signal until it idles closed; then nothing
      // of the 75 waits is left.
      expect(abortRegistrations(caller.signal)).toBe(before[1]);
      await eventually(() => abortRegistrations(session.signal) === before[0]);
      expect([abortRegistrations(session.signal), abortRegistrations(caller.signal)]).toEqual(
        before,
      );
    });

    it('many holds and waits on one session listen to its signal without a MaxListenersExceededWarning', async () => {
      const names = Array.from({ length: 12 }, (_, i) => `${prefix()}lock-${i}`);
      const holder = await fixture.session();
      const session = await fixture.session();
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on('warning', onWarning);
      try {
        const held = await Promise.all(names.map((name) => new Mutex(holder, name).lock()));
        const mutexes = names.map((name) => new Mutex(session, name));
        const waiting = mutexes.map((mutex) => mutex.lock());
        for (const wait of waiting) wait.catch(() => {});
        await eventually(
          async () =>
            (await admin.range({ prefix: prefix(), countOnly: true })).count ===
            BigInt(2 * names.length),
        );
        for (const lock of held) await lock.unlock();
        for (const lock of await Promise.all(waiting)) await lock.unlock();
        // process.emitWarning reports on a later tick.
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.off('warning', onWarning);
      }
      expect(warnings.map((warning) => warning.name)).toEqual([]);
    });

    it('DoubleBarrier enter() and leave() rounds leave the session and caller signals as they were', async () => {
      const key = `${prefix()}barrier`;
      const session = await fixture.session();
      const other = await fixture.session();
      const caller = new AbortController();
      const before = [abortRegistrations(session.signal), abortRegistrations(caller.signal)];
      for (let round = 0; round < ROUNDS; round++) {
        const mine = new DoubleBarrier(session, key, 2);
        const theirs = new DoubleBarrier(other, key, 2);
        // Entering first, this one waits for the ready flag; leaving with the oldest key, it waits
        // for the other's key to go.
        const entering = mine.enter({ signal: caller.signal });
        await eventually(
          async () =>
            (await admin.range({ prefix: `${key}/waiters/`, countOnly: true })).count > 0n,
        );
        await theirs.enter();
        await entering;
        await Promise.all([mine.leave({ signal: caller.signal }), theirs.leave()]);
      }
      expect([abortRegistrations(session.signal), abortRegistrations(caller.signal)]).toEqual(
        before,
      );
    });

    it('waitForPredecessors() calls leave the caller signal as it was', async () => {
      const queue = `${prefix()}queue/`;
      const etcd = fixture.client();
      const caller = new AbortController();
      const before = abortRegistrations(caller.signal);
      for (let round = 0; round < ROUNDS; round++) {
        await etcd.put(`${queue}a`, '');
        const own = await etcd.put(`${queue}b`, '');
        const waiting = waitForPredecessors(etcd, {
          prefix: queue,
          createRevision: own.header.revision,
          signal: caller.signal,
        });
        await etcd.delete(`${queue}a`);
        await waiting;
        await etcd.delete(`${queue}b`);
      }
      expect(abortRegistrations(caller.signal)).toBe(before);
    });
  },
  { only: ['embedded'] },
);
