// Fencing: guarded txns and token-checked resources, and the safety test: workers increment a
// counter under a lock while their leases are forced to expire mid-critical-section. With fencing
// the counter is exact; without it updates are lost (asserted, so the test can fail).
import { cmp, Etcd, InvalidArgumentError, op } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  FencedUpdateConflictError,
  LockLostError,
  StaleFencingTokenError,
} from '../../src/errors.js';
import { FencedResource, fencedPut, guardedTxn } from '../../src/lock/fencing.js';
import { Mutex } from '../../src/lock/mutex.js';
import type { Session } from '../../src/session/session.js';
import { waitForDelete } from '../../src/wait.js';
import { eventually, Fixture, rejection } from '../recipes-support.js';

describeEachBackend('Fencing', ({ backend, prefix }) => {
  const fixture = new Fixture(() => backend().endpoints);
  let admin: Etcd;
  beforeAll(() => {
    admin = new Etcd({ endpoints: backend().endpoints });
  });
  afterEach(() => fixture.close());
  afterAll(() => admin?.close());

  describe('FencedResource', () => {
    it('accepts equal or higher tokens and refuses lower ones, storing the highest', async () => {
      const key = `${prefix()}resource`;
      const resource = new FencedResource(admin, key);
      expect(resource.tokenKey).toBe(`${key}.fencing-token`);
      await resource.put(10n, 'a');
      await resource.put(10n, 'b');
      await fencedPut(admin, key, 12n, 'c');
      const error = await rejection(resource.put(11n, 'stale'));
      expect(error).toBeInstanceOf(StaleFencingTokenError);
      expect(error).toMatchObject({ token: 11n, highestToken: 12n, code: 'STALE_FENCING_TOKEN' });
      const read = await resource.read();
      expect(read.kv?.text()).toBe('c');
      expect(read.highestToken).toBe(12n);
      expect((await admin.get(resource.tokenKey))?.text()).toBe('0000000000000000012');
      // Byte order of the stored tokens is numeric order, across digit counts too.
      await resource.put(100n, 'd');
      expect(await rejection(resource.put(99n, 'e'))).toBeInstanceOf(StaleFencingTokenError);
    });

    it('update is a read-modify-write that loses no update and refuses stale tokens', async () => {
      const key = `${prefix()}counter`;
      const resource = new FencedResource(admin, key);
      const increment = (kv: { text(): string } | undefined) =>
        String(Number(kv?.text() ?? '0') + 1);
      await Promise.all(Array.from({ length: 10 }, () => resource.update(5n, increment)));
      expect((await resource.read()).kv?.text()).toBe('10');
      await resource.update(6n, increment);
      const error = await rejection(resource.update(5n, increment));
      expect(error).toBeInstanceOf(StaleFencingTokenError);
      expect((await resource.read()).kv?.text()).toBe('11');
    });

    it('refuses a token outside [0, 10^19 - 1] with InvalidArgumentError, writing nothing', async () => {
      const key = `${prefix()}bounds`;
      const resource = new FencedResource(admin, key);
      for (const token of [-1n, 10n ** 19n]) {
        const put = await rejection(resource.put(token, 'x'));
        expect(put).toBeInstanceOf(InvalidArgumentError);
        expect(put).toMatchObject({ code: 'INVALID_ARGUMENT' });
        expect(await rejection(fencedPut(admin, key, token, 'x'))).toBeInstanceOf(
          InvalidArgumentError,
        );
        expect(await rejection(resource.update(token, () => 'x'))).toBeInstanceOf(
          InvalidArgumentError,
        );
      }
      expect(await admin.count({ prefix: key })).toBe(0n);
    });

    it('update gives up after maxAttempts lost races with FencedUpdateConflictError', async () => {
      const key = `${prefix()}contended`;
      let interlopers = 0;
      let commits = 0;
      // update() alternates a read txn and a guarded write txn. Before each write txn commits,
      // another writer puts the key, so every attempt's read is stale when its write arrives.
      const racingTxn = <T extends object>(txn: T): T =>
        new Proxy(txn, {
          get(target, name) {
            const member: unknown = Reflect.get(target, name, target);
            if (typeof member !== 'function') return member;
            if (name === 'commit') {
              return async (...args: unknown[]) => {
                if (++commits % 2 === 0) await admin.put(key, `interloper ${++interlopers}`);
                return member.apply(target, args);
              };
            }
            return (...args: unknown[]) => racingTxn(member.apply(target, args));
          },
        });
      const racing = new Proxy(admin, {
        get(target, name) {
          if (name === 'txn') return () => racingTxn(target.txn());
          return Reflect.get(target, name, target);
        },
      });
      const resource = new FencedResource(racing, key);
      let calls = 0;
      const error = await rejection(
        resource.update(
          1n,
          () => {
            calls++;
            return 'mine';
          },
          { maxAttempts: 3 },
        ),
      );
      expect(error).toBeInstanceOf(FencedUpdateConflictError);
      expect(error).toMatchObject({
        code: 'FENCED_UPDATE_CONFLICT',
        resource: key,
        attempts: 3,
      });
      expect(calls).toBe(3);
      expect((await admin.get(key))?.text()).toBe('interloper 3');
      expect(await admin.get(resource.tokenKey)).toBeUndefined();
    });
  });

  describe('guardedTxn', () => {
    it('guards any hold, through another client too', async () => {
      const p = prefix();
      const session = await fixture.session();
      const lock = await new Mutex(session, `${p}lock`).lock();
      const result = await guardedTxn(admin, lock)
        .then(op.put(`${p}x`, '1'))
        .commit();
      expect(result.succeeded).toBe(true);
      expect((await admin.get(`${p}x`))?.text()).toBe('1');
      await lock.unlock();
      expect(
        await rejection(
          guardedTxn(admin, lock)
            .then(op.put(`${p}x`, '2'))
            .commit(),
        ),
      ).toBeInstanceOf(LockLostError);
    });

    it('is not a promise: awaiting it without commit rejects', async () => {
      const session = await fixture.session();
      const lock = await new Mutex(session, `${prefix()}lock`).lock();
      const error = await rejection(
        Promise.resolve().then(() => lock.txn() as unknown as Promise<void>),
      );
      expect(error).toBeInstanceOf(InvalidArgumentError);
      expect((error as Error).message).toBe(
        'a GuardedTxn is not a promise: call commit() to run it',
      );
    });

    it('refuses compares and ops not built with cmp and op, as the client Txn does', async () => {
      const session = await fixture.session();
      const lock = await new Mutex(session, `${prefix()}lock`).lock();
      const txn = lock.txn();
      expect(() =>
        txn.if({ target: 'value' } as unknown as ReturnType<typeof cmp.missing>),
      ).toThrow(InvalidArgumentError);
      expect(() => txn.else('put a' as unknown as ReturnType<typeof op.get>)).toThrow(
        InvalidArgumentError,
      );
      await lock.unlock();
    });
  });

  describe('safety under forced lease expiry', () => {
    type Mode = 'unfenced' | 'guarded-txn' | 'fencing-token';
    interface Outcome {
      readonly acknowledged: number;
      readonly refused: number;
      readonly overlaps: number;
      readonly counter: number;
    }

    const WORKERS = 4;
    const INCREMENTS = 6;

    /**
     * WORKERS workers each make INCREMENTS increments of one counter, each under the lock. In one
     * critical section per worker, the worker "pauses" after reading the counter: its lease dies
     * meanwhile (revoked by another client for half of them, left to expire after orphan() for
     * the others), and it resumes only once another holder has written the counter, then writes
     * its stale increment as if it still held the lock.
     */
    async function run(mode: Mode): Promise<Outcome> {
      const p = prefix();
      const name = `${p}${mode}/lock`;
      const counterKey = `${p}${mode}/counter`;
      const resource = new FencedResource(admin, counterKey);
      let acknowledged = 0;
      let refused = 0;
      let overlaps = 0;

      const worker = async (index: number) => {
        const etcd = fixture.client();
        let session: Session = await fixture.session({ ttl: 1 }, etcd);
        for (let i = 0; i < INCREMENTS; i++) {
          if (session.isDone) session = await fixture.session({ ttl: 1 }, etcd);
          const lock = await new Mutex(session, name).lock();
          const read = await etcd.get(counterKey);
          const value = Number(read?.text() ?? '0');
          const pause = i === 1 + (index % (INCREMENTS - 1));
          if (pause) {
            if (index % 2 === 0) {
              await admin.lease.revoke(session.leaseId);
            } else {
              session.orphan();
              await waitForDelete(admin, lock.key, lock.header.revision, {
                createRevision: lock.fencingToken,
              });
            }
            try {
              await eventually(
                async () =>
                  ((await admin.get(counterKey))?.modRevision ?? 0n) > (read?.modRevision ?? 0n),
                4_000,
              );
              overlaps++;
            } catch {
              // Nobody else wrote meanwhile: this pause overlapped no other holder.
            }
          }
          try {
            if (mode === 'unfenced') {
              await etcd.put(counterKey, String(value + 1));
            } else if (mode === 'guarded-txn') {
              const written = await lock
                .txn()
                .if(cmp.modRevision(counterKey, '==', read?.modRevision ?? 0n))
                .then(op.put(counterKey, String(value + 1)))
                .commit();
              if (!written.succeeded) throw new Error('the counter changed under a held lock');
            } else {
              await resource.update(lock.fencingToken, (kv) =>
                String(Number(kv?.text() ?? '0') + 1),
              );
            }
            acknowledged++;
          } catch (error) {
            if (!(error instanceof LockLostError || error instanceof StaleFencingTokenError)) {
              throw error;
            }
            refused++;
          }
          await lock.unlock().catch(() => {});
          // The paused worker's lease is gone even if its keepalive has not heard yet.
          if (pause) session = await fixture.session({ ttl: 1 }, etcd);
        }
      };

      await Promise.all(Array.from({ length: WORKERS }, (_, index) => worker(index)));
      const counter = Number((await admin.get(counterKey))?.text() ?? '0');
      return { acknowledged, refused, overlaps, counter };
    }

    it('with the ownership compare in the write txn, the counter is exact', async () => {
      const outcome = await run('guarded-txn');
      expect(outcome.counter).toBe(outcome.acknowledged);
      expect(outcome.refused).toBe(WORKERS);
      expect(outcome.acknowledged).toBe(WORKERS * INCREMENTS - WORKERS);
    });

    it('with the fencing token checked by the resource, the counter is exact', async () => {
      const outcome = await run('fencing-token');
      expect(outcome.counter).toBe(outcome.acknowledged);
      expect(outcome.refused).toBeGreaterThanOrEqual(outcome.overlaps);
      expect(outcome.overlaps).toBeGreaterThan(0);
    });

    it('without fencing, stale holders overwrite newer values: updates are lost', async () => {
      const outcome = await run('unfenced');
      expect(outcome.refused).toBe(0);
      expect(outcome.acknowledged).toBe(WORKERS * INCREMENTS);
      expect(outcome.overlaps).toBeGreaterThan(0);
      // A stale write overwrote acknowledged increments.
      expect(outcome.counter).toBeLessThan(outcome.acknowledged);
    });
  });
});
