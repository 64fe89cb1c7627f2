// runStm under contention: with the defaults, many concurrent transfers on the same keys all
// commit and conserve the total; runs of one process take turns on the keys (the local queue), and
// a run waiting for its turn can be aborted.
import { AbortedError, Etcd, op } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { stmKeyLocks } from '../../src/lock/stm-key-locks.js';
import { Session } from '../../src/session/session.js';
import { runStm, type StmOptions } from '../../src/stm/stm.js';
import { deferred, rejection } from '../recipes-support.js';

const INITIAL = 1_000;

describeEachBackend('STM under contention', ({ backend, prefix }) => {
  let etcd: Etcd;
  let second: Etcd;
  let other: Etcd;
  const calls: string[] = [];
  const k = (name: string) => `${prefix()}${name}`;
  const balance = async (name: string) => Number((await other.get(k(name)))?.text());

  beforeAll(() => {
    const { endpoints } = backend();
    etcd = new Etcd({ endpoints, hooks: { onCall: (event) => calls.push(event.method) } });
    second = new Etcd({ endpoints });
    other = new Etcd({ endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
    await second?.close();
    await other?.close();
  });
  beforeEach(() => {
    calls.length = 0;
  });

  /**
   * Moves `amount` from `from` to `to`; resolves with the run's attempts. `read` is called in each
   * attempt once both keys are read.
   */
  const transfer = async (
    kv: Etcd,
    from: string,
    to: string,
    amount: number,
    options?: StmOptions,
    read?: () => void,
  ) => {
    const result = await runStm(
      kv,
      async (stm) => {
        const a = Number(await stm.get(k(from)));
        const b = Number(await stm.get(k(to)));
        read?.();
        stm.put(k(from), String(a - amount));
        stm.put(k(to), String(b + amount));
      },
      options,
    );
    return result.attempts;
  };

  async function accounts(...names: string[]) {
    for (const name of names) await other.put(k(name), String(INITIAL));
  }

  it('64 concurrent default transfers between 2 keys: none fails, every one applies once', async () => {
    await accounts('a', 'b');
    // 40 move 1 from a to b, 24 move 2 from b to a: a lost or doubled update changes the result.
    const runs = Array.from({ length: 64 }, (_, i) =>
      i < 40 ? transfer(etcd, 'a', 'b', 1) : transfer(etcd, 'b', 'a', 2),
    );
    const outcomes = await Promise.allSettled(runs);
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    expect([await balance('a'), await balance('b')]).toEqual([
      INITIAL - 40 + 48,
      INITIAL + 40 - 48,
    ]);
    // They really contended: some runs ran more than once.
    const attempts = outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 0));
    expect(Math.max(...attempts)).toBeGreaterThan(1);
  });

  it('64 transfers from two clients (two local queues, conflicting through etcd) on 8 keys', async () => {
    const names = Array.from({ length: 8 }, (_, i) => `acct/${i}`);
    await accounts(...names);
    // Transfer i moves i % 5 + 1 from account i % 8 to account (i + 3) % 8, from either client.
    const runs = Array.from({ length: 64 }, (_, i) =>
      transfer(i % 2 ? etcd : second, names[i % 8]!, names[(i + 3) % 8]!, (i % 5) + 1),
    );
    const outcomes = await Promise.allSettled(runs);
    expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
    const expected = names.map(() => INITIAL);
    for (let i = 0; i < 64; i++) {
      expected[i % 8]! -= (i % 5) + 1;
      expected[(i + 3) % 8]! += (i % 5) + 1;
    }
    expect(await Promise.all(names.map(balance))).toEqual(expected);
  });

  it('the old bounded setting is still available: maxRetries 0 gives up at the first conflict', async () => {
    await accounts('a', 'b');
    const runs = Array.from({ length: 16 }, () =>
      transfer(etcd, 'a', 'b', 1, { maxRetries: 0, localQueue: false }),
    );
    const outcomes = await Promise.allSettled(runs);
    const failed = outcomes.filter((o) => o.status === 'rejected');
    expect(failed.length).toBeGreaterThan(0);
    for (const f of failed) {
      expect((f as PromiseRejectedResult).reason).toMatchObject({
        code: 'STM_CONFLICT',
        attempts: 1,
      });
    }
    // Exactly the runs that resolved were applied.
    const applied = outcomes.length - failed.length;
    expect([await balance('a'), await balance('b')]).toEqual([
      INITIAL - applied,
      INITIAL + applied,
    ]);
  });

  describe('the local queue', () => {
    /** A transaction on `a` and `b` whose first attempt conflicts with a write of `a` by `other`. */
    function conflicting(started: () => void, gate: Promise<void>, options?: StmOptions) {
      let runs = 0;
      return runStm(
        etcd,
        async (stm) => {
          runs++;
          const a = Number(await stm.get(k('a')));
          const b = Number(await stm.get(k('b')));
          if (runs === 1) await other.put(k('a'), String(a + 100));
          else {
            started();
            await gate;
          }
          stm.put(k('a'), String(a - 1));
          stm.put(k('b'), String(b + 1));
        },
        options,
      );
    }

    /** Starts `conflicting`; resolves once its second attempt holds a and b, stopped at a gate. */
    async function holding() {
      await accounts('a', 'b');
      const gate = deferred();
      const held = deferred();
      const first = conflicting(held.resolve, gate.promise);
      await held.promise;
      return { first, release: gate.resolve };
    }

    it('a run that conflicted holds its keys: a local run on them waits its turn, then applies', async () => {
      const { first, release } = await holding();
      // The first run holds a and b in its second attempt. This one would conflict with it: it
      // does not send its commit, waits, then reads the first run's result.
      const secondRead = deferred();
      const second = transfer(etcd, 'a', 'b', 5, {}, secondRead.resolve);
      let secondDone = false;
      void second.then(() => {
        secondDone = true;
      });
      await secondRead.promise;
      // A round trip later its first attempt has returned and found the keys held.
      await other.get(k('a'));
      expect(secondDone).toBe(false);
      calls.length = 0;
      release();
      expect(await first).toMatchObject({ attempts: 2 });
      expect(await second).toBe(2);
      // Two commits and no read: the second run started from what the first one's commit left.
      expect(calls).toEqual(['/etcdserverpb.KV/Txn', '/etcdserverpb.KV/Txn']);
      expect([await balance('a'), await balance('b')]).toEqual([
        INITIAL + 100 - 1 - 5,
        INITIAL + 6,
      ]);
    });

    it('a run waiting for its turn is aborted by its signal; the queue goes on', async () => {
      const { first, release } = await holding();
      const controller = new AbortController();
      const waitingRead = deferred();
      const thirdRead = deferred();
      const waiting = transfer(
        etcd,
        'a',
        'b',
        5,
        { signal: controller.signal },
        waitingRead.resolve,
      );
      const third = transfer(etcd, 'a', 'b', 7, {}, thirdRead.resolve);
      await Promise.all([waitingRead.promise, thirdRead.promise]);
      await other.get(k('a'));
      controller.abort('enough');
      const error = await rejection(waiting);
      expect(error).toBeInstanceOf(AbortedError);
      expect(error).toMatchObject({ cause: 'enough' });
      release();
      await first;
      expect(await third).toBe(2);
      // The aborted run wrote nothing; the others applied once each.
      expect([await balance('a'), await balance('b')]).toEqual([
        INITIAL + 100 - 1 - 7,
        INITIAL + 8,
      ]);
    });

    it('with localQueue false a run does not wait: it conflicts and retries', async () => {
      const { first, release } = await holding();
      // Nothing holds it back: it commits while the first run's attempt waits at the gate.
      expect(await transfer(etcd, 'a', 'b', 5, { localQueue: false })).toBe(1);
      release();
      // The first run's second attempt read a before that commit: it conflicts and runs again.
      expect(await first).toMatchObject({ attempts: 3 });
      expect([await balance('a'), await balance('b')]).toEqual([
        INITIAL + 100 - 5 - 1,
        INITIAL + 6,
      ]);
    });
  });

  it('rejects a bad localQueue and accepts an explicit unbounded maxRetries', async () => {
    const bad = await rejection(
      runStm(etcd, () => {}, { localQueue: 'yes' as unknown as boolean }),
    );
    expect(bad).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(calls).toEqual([]);
    await accounts('a', 'b');
    expect(await transfer(etcd, 'a', 'b', 1, { maxRetries: Number.POSITIVE_INFINITY })).toBe(1);
  });

  it('stmKeyLocks: the holder commit applies while first and leaves the queue; a waiter whose client closes rejects', async () => {
    const key = new TextEncoder().encode(k('q'));
    const locksPrefix = `${prefix()}locks`;
    const firstSession = await Session.create(etcd, { ttl: 30 });
    const closing = new Etcd({ endpoints: backend().endpoints });
    const secondSession = await Session.create(closing, { ttl: 30 });
    try {
      const first = await stmKeyLocks(firstSession, locksPrefix).lock([key]);
      const outcome = rejection(stmKeyLocks(secondSession, locksPrefix).lock([key]));
      // The waiter queued behind the holder: two keys in the queue.
      await expect
        .poll(async () => (await other.range({ prefix: `${locksPrefix}/` })).kvs.length)
        .toBe(2);
      // Its watches end with the client: the wait rejects instead of lasting forever.
      await closing.close();
      expect(await outcome).toMatchObject({ code: 'CLIENT_CLOSED' });
      // The holder is first (its key is the oldest): its commit applies and leaves the queue.
      const commit = await etcd
        .txn()
        .if(...first.first())
        .then(...first.releasing())
        .commit();
      expect(commit.succeeded).toBe(true);
      first.committed();
      // The waiter's key went with its failed wait (or its session): nothing is left queued.
      expect((await other.range({ prefix: `${locksPrefix}/` })).kvs).toEqual([]);
    } finally {
      await firstSession.close();
    }
  });

  it('stmKeyLocks: a turn shows the keys as the run ahead left them, read when it comes', async () => {
    const [a, b] = [k('ta'), k('tb')];
    await other.put(a, '1');
    await other.put(b, '2');
    const keys = [a, b].map((key) => new TextEncoder().encode(key));
    const locksPrefix = `${prefix()}locks`;
    const aheadSession = await Session.create(second, { ttl: 30 });
    const waiterSession = await Session.create(etcd, { ttl: 30 });
    try {
      const ahead = await stmKeyLocks(aheadSession, locksPrefix).lock(keys);
      calls.length = 0;
      const waiting = stmKeyLocks(waiterSession, locksPrefix).lock(keys);
      await expect
        .poll(async () => (await other.range({ prefix: `${locksPrefix}/` })).kvs.length)
        .toBe(4);
      // The run ahead writes a only, and its commit hands the turn over at revision R.
      const commit = await second
        .txn()
        .if(...ahead.first())
        .then(op.put(a, '10'), ...ahead.releasing())
        .commit();
      expect(commit.succeeded).toBe(true);
      ahead.committed();
      const held = await waiting;
      const revisionOfB = (await other.get(b))?.modRevision;
      expect(held.seen.revision).toBeGreaterThanOrEqual(commit.header.revision);
      expect(
        held.seen.keys.map(({ kv }) => [new TextDecoder().decode(kv?.value), kv?.modRevision]),
      ).toEqual([
        ['10', commit.header.revision],
        ['2', revisionOfB],
      ]);
      // The join, then one read of both keys when the turn came (they are not watched).
      expect(calls).toEqual(['/etcdserverpb.KV/Txn', '/etcdserverpb.KV/Txn']);
      await held.release();
      expect((await other.range({ prefix: `${locksPrefix}/` })).kvs).toEqual([]);
    } finally {
      await aheadSession.close();
      await waiterSession.close();
    }
  });

  it('stmKeyLocks: a waiting session watches every queue in one watch of the lock prefix (deletes only) and not the keys, so a commit that leaves two queues is one message to it', async () => {
    const [a, b] = [k('wa'), k('wb')];
    await other.put(a, '1');
    await other.put(b, '2');
    const keys = [a, b].map((key) => new TextEncoder().encode(key));
    const locksPrefix = `${prefix()}locks`;
    const watching = new Etcd({ endpoints: backend().endpoints });
    // What the waiter's client watches, and each batch its watchers get.
    const watched: string[] = [];
    const batches: string[][] = [];
    const watch = watching.watch.bind(watching);
    watching.watch = (request) => {
      const watcher = watch(request);
      const what =
        'prefix' in request
          ? `prefix ${request.prefix}`
          : `key ${Buffer.from(request.key as Uint8Array).toString()}`;
      watched.push(`${what} ${request.filters?.join(',') ?? ''}`);
      watcher.on('batch', (batch) =>
        batches.push([what, ...batch.events.map((e) => `${e.type} ${e.kv.keyText()}`)]),
      );
      return watcher;
    };
    const aheadSession = await Session.create(second, { ttl: 30 });
    const waiterSession = await Session.create(watching, { ttl: 30 });
    try {
      const ahead = await stmKeyLocks(aheadSession, locksPrefix).lock(keys);
      const waiting = stmKeyLocks(waiterSession, locksPrefix).lock(keys);
      // Reported below, or by the closing client if an expectation fails first.
      waiting.catch(() => {});
      await expect
        .poll(async () => (await other.range({ prefix: `${locksPrefix}/` })).kvs.length)
        .toBe(4);
      expect(watched).toEqual([`prefix ${locksPrefix}/ noPut`]);
      // The waiter's own joins are puts: the lock watch shows it nothing of them.
      expect(batches).toEqual([]);
      const commit = await second
        .txn()
        .if(...ahead.first())
        .then(op.put(a, '10'), op.put(b, '20'), ...ahead.releasing())
        .commit();
      expect(commit.succeeded).toBe(true);
      ahead.committed();
      const held = await waiting;
      const queueKey = (key: string) =>
        `${locksPrefix}/${Buffer.from(key).toString('hex')}/${aheadSession.leaseId.toString(16)}`;
      expect(batches).toEqual([
        [`prefix ${locksPrefix}/`, `delete ${queueKey(a)}`, `delete ${queueKey(b)}`],
      ]);
      // It read the keys when its turn came.
      expect(held.seen.keys.map(({ kv }) => new TextDecoder().decode(kv?.value))).toEqual([
        '10',
        '20',
      ]);
      await held.release();
    } finally {
      await aheadSession.close();
      await waiterSession.close();
      await watching.close();
    }
  });

  it('a run on keys whose last turn waited queues without an optimistic commit, until a turn finds no one ahead', async () => {
    await accounts('ha', 'hb');
    const keys = [k('ha'), k('hb')].map((key) => new TextEncoder().encode(key));
    const locksPrefix = `${prefix()}locks`;
    const aheadSession = await Session.create(second, { ttl: 30 });
    const runSession = await Session.create(etcd, { ttl: 30 });
    const contention = { locks: stmKeyLocks(runSession, locksPrefix), afterConflicts: 1 };
    const TXN = '/etcdserverpb.KV/Txn';
    const RANGE = '/etcdserverpb.KV/Range';
    /** A transfer that waits behind a turn held by another session; resolves with its calls. */
    const behindAnother = async () => {
      const ahead = await stmKeyLocks(aheadSession, locksPrefix).lock(keys);
      calls.length = 0;
      const run = transfer(etcd, 'ha', 'hb', 1, { contention });
      await expect
        .poll(async () => (await other.range({ prefix: `${locksPrefix}/` })).kvs.length)
        .toBe(4);
      await ahead.release();
      const attempts = await run;
      return { attempts, calls: [...calls] };
    };
    try {
      // The first run loses its optimistic commit to the queue, joins it, and waits its turn; the
      // turn ahead left without writing, so the keys are read again before the commit.
      expect(await behindAnother()).toEqual({
        attempts: 2,
        calls: [RANGE, RANGE, TXN, TXN, TXN, TXN],
      });
      // The next one on the same keys skips that optimistic commit, and its first attempt reads
      // the keys as the last turn saw them: no Range (that attempt only finds the
      // keys; it is never committed).
      expect(await behindAnother()).toEqual({
        attempts: 2,
        calls: [TXN, TXN, TXN],
      });
      // Alone, it still queues (its turn finds no one ahead): the join and the commit.
      calls.length = 0;
      expect(await transfer(etcd, 'ha', 'hb', 1, { contention })).toBe(2);
      expect(calls).toEqual([TXN, TXN]);
      // The run after it commits at once: its attempt from what the last turn saw would be committed, so
      // apply runs again on reads (still one attempt: the first was never sent).
      calls.length = 0;
      expect(await transfer(etcd, 'ha', 'hb', 1, { contention })).toBe(1);
      expect(calls).toEqual([RANGE, RANGE, TXN]);
      expect([await balance('ha'), await balance('hb')]).toEqual([INITIAL - 4, INITIAL + 4]);
    } finally {
      await aheadSession.close();
      await runSession.close();
    }
  });

  it('a run sharing one key with a turn that waited queues without an optimistic commit too', async () => {
    await accounts('sa', 'sb', 'sc');
    const keys = [k('sa'), k('sb')].map((key) => new TextEncoder().encode(key));
    const locksPrefix = `${prefix()}locks`;
    const aheadSession = await Session.create(second, { ttl: 30 });
    const runSession = await Session.create(etcd, { ttl: 30 });
    const contention = { locks: stmKeyLocks(runSession, locksPrefix), afterConflicts: 1 };
    const TXN = '/etcdserverpb.KV/Txn';
    const RANGE = '/etcdserverpb.KV/Range';
    try {
      // A turn on sa and sb that waits behind another session's.
      const ahead = await stmKeyLocks(aheadSession, locksPrefix).lock(keys);
      const run = transfer(etcd, 'sa', 'sb', 1, { contention });
      await expect
        .poll(async () => (await other.range({ prefix: `${locksPrefix}/` })).kvs.length)
        .toBe(4);
      await ahead.release();
      expect(await run).toBe(2);
      // sb's last turn waited: a run on sb and sc joins the queues after its first apply (sb from
      // what the last turn saw, sc read), then commits in its turn.
      calls.length = 0;
      expect(await transfer(etcd, 'sb', 'sc', 1, { contention })).toBe(2);
      expect(calls).toEqual([RANGE, TXN, TXN]);
      expect([await balance('sa'), await balance('sb'), await balance('sc')]).toEqual([
        INITIAL - 1,
        INITIAL,
        INITIAL + 1,
      ]);
    } finally {
      await aheadSession.close();
      await runSession.close();
    }
  });

  it('a first attempt read from what a recent turn saw is never committed: apply runs again on reads', async () => {
    await accounts('pa');
    const keys = [new TextEncoder().encode(k('pa'))];
    const session = await Session.create(etcd, { ttl: 30 });
    const locks = stmKeyLocks(session, `${prefix()}locks`);
    const contention = { locks, afterConflicts: 1 };
    try {
      // A turn on the key remembers it as it read it; a write after is not seen there.
      await (await locks.lock(keys)).release();
      await other.put(k('pa'), '7');
      expect(new TextDecoder().decode(locks.watched?.(keys[0] as Uint8Array)?.kv?.value)).toBe(
        String(INITIAL),
      );
      // apply fails where it read what the turn saw: it runs again on reads, which commit.
      const seen: string[] = [];
      calls.length = 0;
      const result = await runStm(
        etcd,
        async (stm) => {
          const value = (await stm.get(k('pa'))) ?? '';
          seen.push(value);
          if (seen.length === 1) throw new Error('a view that reads cannot give');
          stm.put(k('pa'), String(Number(value) + 1));
        },
        { contention },
      );
      expect(seen).toEqual([String(INITIAL), '7']);
      expect(result.attempts).toBe(1);
      expect(calls).toEqual(['/etcdserverpb.KV/Range', '/etcdserverpb.KV/Txn']);
      expect(await balance('pa')).toBe(8);
      // An error that reads give too is the run's.
      let runs = 0;
      const failure = await rejection(
        runStm(
          etcd,
          async (stm) => {
            runs++;
            await stm.get(k('pa'));
            throw new Error('always');
          },
          { contention },
        ),
      );
      expect(failure).toMatchObject({ message: 'always' });
      expect(runs).toBe(2);
    } finally {
      await session.close();
    }
  });

  it('rejects a contention option without locks or with afterConflicts below 1, sending nothing', async () => {
    const locks = {
      lock: () => Promise.reject(new Error('unused')),
      free: () => [],
      queued: () => [],
    };
    const noLocks = await rejection(
      runStm(etcd, () => {}, { contention: { locks: {} as unknown as typeof locks } }),
    );
    expect(noLocks).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: 'contention.locks must have lock(), free() and queued() methods',
    });
    const zero = await rejection(
      runStm(etcd, () => {}, { contention: { locks, afterConflicts: 0 } }),
    );
    expect(zero).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: 'contention.afterConflicts must be an integer >= 1, got 0',
    });
    expect(calls).toEqual([]);
  });
});
