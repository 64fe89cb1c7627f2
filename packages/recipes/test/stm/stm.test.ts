// runStm: isolation levels and their anomalies, conflicts and retries, prefetch, limits, aborts.
import { AbortedError, EmptyKeyError, Etcd, TooManyTxnOpsError } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { StmConflictError, StmTooManyOpsError } from '../../src/stm/errors.js';
import type { StmIsolation } from '../../src/stm/isolation.js';
import { runStm, type StmOptions } from '../../src/stm/stm.js';
import type { Stm } from '../../src/stm/view.js';
import { deferred, rejection } from '../recipes-support.js';

const validating: StmIsolation[] = ['serializable-snapshot', 'serializable', 'repeatable-reads'];

describeEachBackend('STM', ({ backend, prefix }) => {
  // `etcd` counts its RPCs; `other` plays the concurrent writer, uncounted.
  let etcd: Etcd;
  let other: Etcd;
  const calls: string[] = [];
  const k = (name: string) => `${prefix()}${name}`;
  const value = async (name: string) => (await other.get(k(name)))?.text();

  beforeAll(() => {
    const { endpoints } = backend();
    etcd = new Etcd({ endpoints, hooks: { onCall: (event) => calls.push(event.method) } });
    other = new Etcd({ endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
    await other?.close();
  });
  beforeEach(() => {
    calls.length = 0;
  });

  describe('reads and writes', () => {
    it('reads missing keys as undefined, reads its own writes, and the last write wins', async () => {
      await other.put(k('a'), '1');
      const seen: unknown[] = [];
      const result = await runStm(etcd, async (stm) => {
        seen.push(await stm.get(k('a')), await stm.get(k('missing')), await stm.rev(k('missing')));
        stm.put(k('b'), 'first');
        stm.put(k('b'), 'second');
        seen.push(await stm.get(k('b')));
        stm.put(k('c'), 'gone soon');
        stm.del(k('c'));
        seen.push(await stm.get(k('c')));
        stm.del(k('a'));
        stm.put(k('a'), new Uint8Array([0x7a]));
        seen.push(await stm.getBytes(k('a')));
        return 'done';
      });
      expect(seen).toEqual(['1', undefined, 0n, 'second', undefined, new Uint8Array([0x7a])]);
      expect(result.value).toBe('done');
      expect(result.attempts).toBe(1);
      expect(await value('a')).toBe('z');
      expect(await value('b')).toBe('second');
      expect(await value('c')).toBeUndefined();
      // All writes share the commit's revision, reported in its header.
      const b = await other.get(k('b'));
      expect(b?.modRevision).toBe(result.header.revision);
      expect((await other.get(k('a')))?.modRevision).toBe(result.header.revision);
    });

    it('rev returns the mod revision read, not changed by buffered writes', async () => {
      const put = await other.put(k('a'), 'x');
      const revs = await runStm(etcd, async (stm) => {
        const before = await stm.rev(k('a'));
        stm.put(k('a'), 'y');
        return [before, await stm.rev(k('a'))];
      });
      expect(revs.value).toEqual([put.header.revision, put.header.revision]);
    });

    it('puts with a lease attach the key to it', async () => {
      const lease = await other.lease.grant(30);
      try {
        await runStm(etcd, (stm) => stm.put(k('leased'), 'v', { lease }));
        expect((await other.get(k('leased')))?.lease).toBe(lease.id);
      } finally {
        await lease.revoke();
      }
    });

    it('works through a namespace: keys are relative to it', async () => {
      const ns = etcd.namespace(prefix());
      await other.put(k('n'), '5');
      await runStm(ns, async (stm) => {
        stm.put('n', String(Number(await stm.get('n')) + 1));
      });
      expect(await value('n')).toBe('6');
    });

    it('a transaction that only reads commits nothing and returns the current revision', async () => {
      const put = await other.put(k('a'), 'x');
      const result = await runStm(etcd, (stm) => stm.get(k('a')));
      expect(result.value).toBe('x');
      expect(result.header.revision).toBe(put.header.revision);
    });

    it('the Stm of an attempt cannot be used after apply returned', async () => {
      let kept: Stm | undefined;
      await runStm(etcd, (stm) => {
        kept = stm;
      });
      expect(() => kept?.put(k('late'), 'x')).toThrow(/attempt has ended/);
      await expect(kept?.get(k('late'))).rejects.toThrow(/attempt has ended/);
      expect(await value('late')).toBeUndefined();
    });
  });

  describe('bank transfers: the total is constant under concurrency, except at read-committed', () => {
    const ACCOUNTS = 5;
    const INITIAL = 100;
    const WORKERS = 4;
    const TRANSFERS = 50;

    async function runBank(isolation: StmIsolation): Promise<{ total: number; attempts: number }> {
      const accounts = Array.from({ length: ACCOUNTS }, (_, i) => k(`acct/${i}`));
      for (const account of accounts) await other.put(account, String(INITIAL));
      const options: StmOptions = { isolation, maxRetries: 200 };
      let attempts = 0;
      const worker = async () => {
        for (let t = 0; t < TRANSFERS; t++) {
          const from = Math.floor(Math.random() * ACCOUNTS);
          const to = (from + 1 + Math.floor(Math.random() * (ACCOUNTS - 1))) % ACCOUNTS;
          const amount = 1 + Math.floor(Math.random() * 10);
          const result = await runStm(
            etcd,
            async (stm) => {
              const a = Number(await stm.get(accounts[from]!));
              const b = Number(await stm.get(accounts[to]!));
              const moved = Math.min(a, amount);
              stm.put(accounts[from]!, String(a - moved));
              stm.put(accounts[to]!, String(b + moved));
            },
            options,
          );
          attempts += result.attempts;
        }
      };
      await Promise.all(Array.from({ length: WORKERS }, worker));
      const { kvs } = await other.range({ prefix: k('acct/') });
      expect(kvs).toHaveLength(ACCOUNTS);
      for (const kv of kvs) expect(Number(kv.text())).toBeGreaterThanOrEqual(0);
      return { total: kvs.reduce((sum, kv) => sum + Number(kv.text()), 0), attempts };
    }

    it.each(['serializable-snapshot', 'serializable'] as const)('at %s', async (isolation) => {
      const { total, attempts } = await runBank(isolation);
      expect(total).toBe(ACCOUNTS * INITIAL);
      // The workers really contended: some transfers conflicted and ran again.
      expect(attempts).toBeGreaterThan(WORKERS * TRANSFERS);
    });

    /**
     * Two transfers that share an account, forced to interleave: 10 from a to b and 5 from b to c,
     * both reading before either commits; the first commits before the second does. Returns the
     * balances and each transfer's attempts.
     */
    async function overlappingTransfers(isolation: StmIsolation) {
      for (const name of ['a', 'b', 'c']) await other.put(k(`pair/${name}`), '100');
      const bothRead = deferred();
      const firstCommitted = deferred();
      let firstReads = 0;
      const transfer = (from: string, to: string, amount: number, second: boolean) => {
        let attempt = 0;
        return runStm(
          etcd,
          async (stm) => {
            attempt++;
            const a = Number(await stm.get(k(`pair/${from}`)));
            const b = Number(await stm.get(k(`pair/${to}`)));
            if (attempt === 1) {
              if (++firstReads === 2) bothRead.resolve();
              await bothRead.promise;
              if (second) await firstCommitted.promise;
            }
            stm.put(k(`pair/${from}`), String(a - amount));
            stm.put(k(`pair/${to}`), String(b + amount));
          },
          { isolation },
        );
      };
      const first = transfer('a', 'b', 10, false).then((result) => {
        firstCommitted.resolve();
        return result;
      });
      const results = await Promise.all([first, transfer('b', 'c', 5, true)]);
      const balances = await Promise.all(['a', 'b', 'c'].map((name) => value(`pair/${name}`)));
      return { balances, attempts: results.map((r) => r.attempts) };
    }

    it.each(validating)('%s: overlapping transfers keep the total', async (isolation) => {
      expect(await overlappingTransfers(isolation)).toEqual({
        balances: ['90', '105', '105'],
        attempts: [1, 2],
      });
    });

    it('read-committed: overlapping transfers overwrite b, and the total drifts (the anomaly)', async () => {
      // The second transfer wrote b from its stale read (100 - 5), erasing the first's +10.
      expect(await overlappingTransfers('read-committed')).toEqual({
        balances: ['90', '95', '105'],
        attempts: [1, 1],
      });
    });
  });

  describe('conflicts', () => {
    /**
     * Two increments of one counter, forced to interleave: both read before either commits. Returns
     * the final counter and each increment's attempts.
     */
    async function racingIncrements(isolation: StmIsolation) {
      await other.put(k('counter'), '0');
      const bothRead = deferred();
      let firstReads = 0;
      const increment = () => {
        let attempt = 0;
        return runStm(
          etcd,
          async (stm) => {
            attempt++;
            const n = Number(await stm.get(k('counter')));
            if (attempt === 1) {
              if (++firstReads === 2) bothRead.resolve();
              await bothRead.promise;
            }
            stm.put(k('counter'), String(n + 1));
          },
          { isolation },
        );
      };
      const results = await Promise.all([increment(), increment()]);
      return {
        counter: await value('counter'),
        attempts: results.map((r) => r.attempts).sort(),
      };
    }

    it.each(validating)('%s: a read-modify-write race retries the loser', async (isolation) => {
      expect(await racingIncrements(isolation)).toEqual({ counter: '2', attempts: [1, 2] });
    });

    it('read-committed: the same race loses an update (the anomaly)', async () => {
      expect(await racingIncrements('read-committed')).toEqual({
        counter: '1',
        attempts: [1, 1],
      });
    });

    it.each([
      ['serializable-snapshot', ['a0', 'b0'], 2],
      ['serializable', ['a0', 'b0'], 2],
      ['repeatable-reads', ['a0', 'b1'], 1],
    ] as const)(
      '%s: reads of one attempt come from one revision',
      async (isolation, firstView, attempts) => {
        await other.put(k('a'), 'a0');
        await other.put(k('b'), 'b0');
        const views: (string | undefined)[][] = [];
        const result = await runStm(
          etcd,
          async (stm) => {
            const a = await stm.get(k('a'));
            // Another client changes b between the two reads of the first attempt.
            if (views.length === 0) await other.put(k('b'), 'b1');
            const b = await stm.get(k('b'));
            views.push([a, b]);
            stm.put(k('copy'), `${a}+${b}`);
          },
          { isolation },
        );
        expect(views[0]).toEqual(firstView);
        expect(result.attempts).toBe(attempts);
        // At the snapshot levels the first attempt saw a stale b, so it could not commit.
        expect(await value('copy')).toBe('a0+b1');
      },
    );

    it('concurrent reads in one attempt share the snapshot of the first', async () => {
      await other.put(k('a'), 'a0');
      await other.put(k('b'), 'b0');
      const views: (string | undefined)[][] = [];
      await runStm(etcd, async (stm) => {
        const first = stm.get(k('a'));
        const second = stm.get(k('b'));
        views.push(await Promise.all([first, second]));
        if (views.length === 1) {
          await other.put(k('b'), 'b1');
          // Read again at the snapshot: unchanged, though etcd now holds b1.
          views.push([await stm.get(k('a')), await stm.get(k('b'))]);
          stm.put(k('x'), 'x');
        }
      });
      expect(views.slice(0, 2)).toEqual([
        ['a0', 'b0'],
        ['a0', 'b0'],
      ]);
    });

    it.each([
      ['serializable-snapshot', 2],
      ['serializable', 1],
    ] as const)(
      '%s: a key written but not read, changed after the snapshot: attempts %i',
      async (isolation, attempts) => {
        await other.put(k('a'), 'a');
        await other.put(k('early'), 'before the snapshot');
        let runs = 0;
        const result = await runStm(
          etcd,
          async (stm) => {
            await stm.get(k('a'));
            if (++runs === 1) await other.put(k('c'), 'theirs');
            stm.put(k('c'), 'mine');
            // Changed before the snapshot: never a conflict, even at serializable-snapshot.
            stm.put(k('early'), 'mine');
          },
          { isolation },
        );
        expect(result.attempts).toBe(attempts);
        expect(await value('c')).toBe('mine');
        expect(await value('early')).toBe('mine');
      },
    );

    it.each([
      ['serializable-snapshot', 2, 'created'],
      ['serializable', 2, 'created'],
      ['repeatable-reads', 2, 'created'],
      ['read-committed', 1, 'none'],
    ] as const)(
      '%s: a key read as missing and created concurrently: attempts %i',
      async (isolation, attempts, copied) => {
        let runs = 0;
        const result = await runStm(
          etcd,
          async (stm) => {
            const x = await stm.get(k('x'));
            if (++runs === 1) await other.put(k('x'), 'created');
            stm.put(k('y'), x ?? 'none');
          },
          { isolation },
        );
        expect(result.attempts).toBe(attempts);
        expect(await value('y')).toBe(copied);
      },
    );

    it('gives up with StmConflictError after maxRetries, having written nothing', async () => {
      let runs = 0;
      const error = await rejection(
        runStm(
          etcd,
          async (stm) => {
            runs++;
            await stm.get(k('hot'));
            await other.put(k('hot'), `theirs ${runs}`);
            stm.put(k('mine'), 'never');
          },
          { maxRetries: 2, backoff: { minDelayMs: 1, maxDelayMs: 2 } },
        ),
      );
      expect(error).toBeInstanceOf(StmConflictError);
      expect(error).toMatchObject({ code: 'STM_CONFLICT', attempts: 3 });
      expect(runs).toBe(3);
      expect(await value('mine')).toBeUndefined();
    });

    it('a snapshot compacted under a running attempt makes it run again', async () => {
      await other.put(k('a'), 'a0');
      await other.put(k('b'), 'b0');
      let runs = 0;
      const result = await runStm(etcd, async (stm) => {
        await stm.get(k('a'));
        if (++runs === 1) {
          const put = await other.put(k('b'), 'b1');
          await other.compact(put.header.revision);
        }
        stm.put(k('copy'), (await stm.get(k('b'))) ?? 'none');
      });
      expect(result.attempts).toBe(2);
      expect(await value('copy')).toBe('b1');
    });
  });

  describe('errors and aborts', () => {
    it('an error thrown by apply is rethrown as is and nothing is committed', async () => {
      const boom = new Error('boom');
      const error = await rejection(
        runStm(etcd, async (stm) => {
          await stm.get(k('a'));
          stm.put(k('a'), 'written?');
          throw boom;
        }),
      );
      expect(error).toBe(boom);
      expect(calls).toEqual(['/etcdserverpb.KV/Range']);
      expect(await value('a')).toBeUndefined();
    });

    it('a failed read that apply swallowed still prevents the commit', async () => {
      const error = await rejection(
        runStm(etcd, async (stm) => {
          const guess = await stm.get('').catch(() => 'guessed');
          stm.put(k('a'), guess ?? 'none');
        }),
      );
      expect(error).toBeInstanceOf(EmptyKeyError);
      expect(await value('a')).toBeUndefined();
    });

    it('an already aborted signal rejects at once; nothing is sent', async () => {
      const controller = new AbortController();
      controller.abort('stop');
      const error = await rejection(
        runStm(etcd, (stm) => stm.put(k('a'), 'x'), { signal: controller.signal }),
      );
      expect(error).toBeInstanceOf(AbortedError);
      expect(error).toMatchObject({ cause: 'stop' });
      expect(calls).toEqual([]);
    });

    it('an abort while apply runs fails its reads and prevents the commit', async () => {
      const controller = new AbortController();
      let readError: unknown;
      const error = await rejection(
        runStm(
          etcd,
          async (stm) => {
            stm.put(k('a'), 'x');
            controller.abort('stop');
            readError = await rejection(stm.get(k('b')));
            return 'swallowed';
          },
          { signal: controller.signal },
        ),
      );
      expect(readError).toBeInstanceOf(AbortedError);
      expect(error).toBe(readError);
      expect(calls).toEqual([]);
      expect(await value('a')).toBeUndefined();
    });

    it('an abort after apply returned prevents the commit', async () => {
      const controller = new AbortController();
      const error = await rejection(
        runStm(
          etcd,
          (stm) => {
            stm.put(k('a'), 'x');
            controller.abort();
          },
          { signal: controller.signal },
        ),
      );
      expect(error).toBeInstanceOf(AbortedError);
      expect(calls).toEqual([]);
      expect(await value('a')).toBeUndefined();
    });

    it('an abort between attempts stops the retries at once', async () => {
      // The pause is pinned (jitter 0.5 of a 29_998 ms ceiling: 14_999 ms) and the abort comes as
      // soon as its timer is armed: the run must reject with no further attempt and the pause's
      // timer cleared, not left to run out.
      const controller = new AbortController();
      const pauses: ReturnType<typeof setTimeout>[] = [];
      let runs = 0;
      let runsAtAbort: number | undefined;
      const realSetTimeout = globalThis.setTimeout;
      const random = vi.spyOn(Math, 'random').mockReturnValue(0.5);
      const setTimer = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((
        callback: (...args: unknown[]) => void,
        ms?: number,
        ...args: unknown[]
      ) => {
        const timer = realSetTimeout(callback, ms, ...args);
        if (ms === 14_999) {
          pauses.push(timer);
          queueMicrotask(() => {
            runsAtAbort = runs;
            controller.abort();
          });
        }
        return timer;
      }) as typeof setTimeout);
      const clearTimer = vi.spyOn(globalThis, 'clearTimeout');
      try {
        const run = runStm(
          etcd,
          async (stm) => {
            runs++;
            await stm.get(k('hot'));
            await other.put(k('hot'), `theirs ${runs}`);
            stm.put(k('mine'), 'never');
          },
          {
            signal: controller.signal,
            maxRetries: 1000,
            backoff: { minDelayMs: 29_998, maxDelayMs: 29_998 },
          },
        );
        expect(await rejection(run)).toBeInstanceOf(AbortedError);
        // The attempts before the first pause (the local queue retries once without one), none
        // after the abort.
        expect(runsAtAbort).toBeGreaterThanOrEqual(1);
        expect(runs).toBe(runsAtAbort);
        expect(pauses).toHaveLength(1);
        expect(clearTimer).toHaveBeenCalledWith(pauses[0]);
      } finally {
        random.mockRestore();
        setTimer.mockRestore();
        clearTimer.mockRestore();
      }
      expect(await value('mine')).toBeUndefined();
    });
  });

  describe('prefetch', () => {
    it('reads the prefetched keys in one round trip and serves the reads from it', async () => {
      await other.put(k('a'), '1');
      await other.put(k('b'), '2');
      const result = await runStm(
        etcd,
        async (stm) => {
          const sum =
            Number(await stm.get(k('a'))) +
            Number(await stm.get(k('b'))) +
            Number((await stm.get(k('c'))) ?? '0');
          stm.put(k('sum'), String(sum));
          return sum;
        },
        { prefetch: [k('a'), k('b'), k('c')] },
      );
      expect(result.value).toBe(3);
      expect(calls).toEqual(['/etcdserverpb.KV/Txn', '/etcdserverpb.KV/Txn']);
      expect(await value('sum')).toBe('3');
    });

    it.each(['serializable-snapshot', 'repeatable-reads'] as const)(
      '%s: after a conflict the failed commit brings the fresh values: no extra read',
      async (isolation) => {
        await other.put(k('a'), '1');
        const seen: (string | undefined)[] = [];
        const result = await runStm(
          etcd,
          async (stm) => {
            seen.push(await stm.get(k('a')));
            if (seen.length === 1) await other.put(k('a'), '10');
            stm.put(k('double'), String(2 * Number(seen.at(-1))));
          },
          { prefetch: [k('a')], isolation },
        );
        expect(result.attempts).toBe(2);
        expect(seen).toEqual(['1', '10']);
        expect(await value('double')).toBe('20');
        // Prefetch, failed commit (its else branch re-read a), successful commit: no Range.
        expect(calls).toEqual([
          '/etcdserverpb.KV/Txn',
          '/etcdserverpb.KV/Txn',
          '/etcdserverpb.KV/Txn',
        ]);
      },
    );
  });

  describe('the 128-op limit, checked before sending', () => {
    const keys = (n: number, name: string) =>
      Array.from({ length: n }, (_, i) => k(`${name}/${i}`));

    it('128 writes commit', async () => {
      await runStm(etcd, (stm) => {
        for (const key of keys(128, 'w')) stm.put(key, 'v');
      });
      expect(await other.count({ prefix: k('w/') })).toBe(128n);
    });

    it('129 writes fail with StmTooManyOpsError and nothing is sent', async () => {
      const error = await rejection(
        runStm(
          etcd,
          (stm) => {
            for (const key of keys(129, 'w')) stm.put(key, 'v');
          },
          { isolation: 'read-committed' },
        ),
      );
      expect(error).toBeInstanceOf(StmTooManyOpsError);
      expect(error).toBeInstanceOf(TooManyTxnOpsError);
      expect(error).toMatchObject({
        code: 'TOO_MANY_TXN_OPS',
        writes: 129,
        compares: 0,
        limit: 128,
      });
      expect(calls).toEqual([]);
      expect(await other.count({ prefix: k('w/') })).toBe(0n);
    });

    it('more than 128 compares fail the same way: keys read plus keys written unread', async () => {
      const apply = async (stm: Stm) => {
        for (const key of keys(100, 'r')) await stm.get(key);
        for (const key of keys(29, 'w')) stm.put(key, 'v');
      };
      const error = await rejection(runStm(etcd, apply));
      expect(error).toMatchObject({ code: 'TOO_MANY_TXN_OPS', writes: 29, compares: 129 });
      expect(calls.filter((m) => m === '/etcdserverpb.KV/Txn')).toEqual([]);
      // serializable validates only the reads: 100 compares fit.
      await runStm(etcd, apply, { isolation: 'serializable' });
      expect(await other.count({ prefix: k('w/') })).toBe(29n);
    });

    it('a lower maxTxnOps is honoured', async () => {
      const error = await rejection(runStm(etcd, (stm) => stm.put(k('a'), 'v'), { maxTxnOps: 0 }));
      expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' });
      const small = await rejection(
        runStm(
          etcd,
          (stm) => {
            stm.put(k('a'), 'v');
            stm.put(k('b'), 'v');
          },
          { maxTxnOps: 1 },
        ),
      );
      expect(small).toMatchObject({ code: 'TOO_MANY_TXN_OPS', writes: 2, limit: 1 });
    });
  });

  it('rejects bad options before sending anything', async () => {
    const bad = (options: StmOptions) => rejection(runStm(etcd, () => {}, options));
    expect(await bad({ isolation: 'snapshot' as StmIsolation })).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(await bad({ maxRetries: -1 })).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await bad({ prefetch: [1 as unknown as string] })).toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    expect(calls).toEqual([]);
  });
});
