// The group turn of stmKeyLocks: a turn across processes passes in-process to the runs of the same
// session waiting for the same keys, each then one commit (no join, no read, no wait), up to a
// bound, after which the queues are left and the next process takes its turn. Exact call
// sequences on each backend; a waiter that aborts while the turn is handed to it leaves the queues.
import { AbortedError, Etcd, op } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { MAX_GROUP_TURN, stmKeyLocks } from '../../src/lock/stm-key-locks.js';
import { Session } from '../../src/session/session.js';
import type { StmKeyLocks, StmKeysHeld } from '../../src/stm/contention.js';
import { runStm, type StmOptions } from '../../src/stm/stm.js';

const INITIAL = 1_000;
const TXN = '/etcdserverpb.KV/Txn';
const RANGE = '/etcdserverpb.KV/Range';

describeEachBackend('STM group turns (stmKeyLocks)', ({ backend, prefix }) => {
  let etcd: Etcd;
  let second: Etcd;
  let other: Etcd;
  const calls: string[] = [];
  const k = (name: string) => `${prefix()}${name}`;
  const balance = async (name: string) => Number((await other.get(k(name)))?.text());
  const bytes = (name: string) => new TextEncoder().encode(k(name));
  const locksPrefix = () => `${prefix()}locks`;
  /**
   * Resolves once the calls `etcd` sent so far are recorded: a response on its connection comes
   * after the responses to the calls sent before (another client may see a join's key first).
   */
  const settled = async () => {
    await etcd.get(k('settled'));
    expect(calls.pop()).toBe(RANGE);
  };
  /** Resolves once `n` queue keys exist under the locks' prefix. */
  const queued = (n: number) =>
    expect
      .poll(
        async () => (await other.range({ prefix: `${locksPrefix()}/`, countOnly: true })).count,
        // Not a speed bound: a loaded machine may take seconds.
        { timeout: 30_000 },
      )
      .toBe(BigInt(n));

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

  /** Moves 1 from `from` to `to`; resolves with the commit's revision. */
  const transfer = async (kv: Etcd, from: string, to: string, options: StmOptions) => {
    const result = await runStm(
      kv,
      async (stm) => {
        const a = Number(await stm.get(k(from)));
        const b = Number(await stm.get(k(to)));
        stm.put(k(from), String(a - 1));
        stm.put(k(to), String(b + 1));
      },
      options,
    );
    return result.header.revision;
  };

  /**
   * One transfer of `locks`' session that waits for its turn behind `ahead`'s: the keys' last turn
   * waited, so the session's next runs on them queue at once (their first attempt reads the keys
   * from the watches the turn left open: no call before they queue).
   */
  async function contend(ahead: Session, locks: StmKeyLocks, from: string, to: string) {
    const keys = [bytes(from), bytes(to)].sort(Buffer.compare);
    const held = await stmKeyLocks(ahead, locksPrefix()).lock(keys);
    const run = transfer(etcd, from, to, { contention: { locks, afterConflicts: 1 } });
    await queued(4);
    await held.release();
    await run;
    return keys;
  }

  it(`a turn serves the runs of its session waiting for the same keys: one join, then one commit each, at most ${MAX_GROUP_TURN} runs before the session behind`, async () => {
    for (const name of ['ga', 'gb']) await other.put(k(name), String(INITIAL));
    const aheadSession = await Session.create(second, { ttl: 30 });
    const behindSession = await Session.create(second, { ttl: 30 });
    const runSession = await Session.create(etcd, { ttl: 30 });
    const locks = stmKeyLocks(runSession, locksPrefix());
    try {
      const keys = await contend(aheadSession, locks, 'ga', 'gb');
      const ahead = await stmKeyLocks(aheadSession, locksPrefix()).lock(keys);
      calls.length = 0;
      // Ten runs: the first joins the queues behind `ahead`, nine wait for it in-process.
      const RUNS = MAX_GROUP_TURN + 2;
      const group = Array.from({ length: RUNS }, () =>
        transfer(etcd, 'ga', 'gb', { contention: { locks, afterConflicts: 1 } }),
      );
      await queued(4);
      await settled();
      expect(calls).toEqual([TXN]);
      // Another session queues behind that join.
      const behind = stmKeyLocks(behindSession, locksPrefix()).lock(keys);
      await queued(6);
      // The turn ahead writes both keys as it hands over; the group's first run reads them when
      // its turn comes (it does not watch them), the others start from what the last commit left.
      const handover = await second
        .txn()
        .if(...ahead.first())
        .then(op.put(k('ga'), '500'), op.put(k('gb'), '1500'), ...ahead.releasing())
        .commit();
      expect(handover.succeeded).toBe(true);
      ahead.committed();
      // The group's last commit leaves the queues: the session behind is first, and commits
      // nothing (it leaves them at its revision).
      const outsider = await behind;
      // The rest of the group joins behind it.
      await queued(4);
      const left = await second
        .txn()
        .if(...outsider.first())
        .then(...outsider.releasing())
        .commit();
      expect(left.succeeded).toBe(true);
      outsider.committed();
      const revisions = (await Promise.all(group)).sort((x, y) => (x < y ? -1 : 1));
      // The join, the read when the turn came, MAX_GROUP_TURN commits; then the session behind;
      // then the rest in a turn of their own: its join, its read, a commit each.
      expect(revisions.filter((revision) => revision < left.header.revision)).toHaveLength(
        MAX_GROUP_TURN,
      );
      expect(calls).toEqual([
        TXN,
        TXN,
        ...Array.from({ length: MAX_GROUP_TURN }, () => TXN),
        TXN,
        TXN,
        TXN,
        TXN,
      ]);
      expect([await balance('ga'), await balance('gb')]).toEqual([500 - RUNS, 1500 + RUNS]);
      await queued(0);
    } finally {
      await aheadSession.close();
      await behindSession.close();
      await runSession.close();
    }
  });

  it('once a run of the session goes to the locks on its keys, the next run on them follows without reading or committing first', async () => {
    for (const name of ['ca', 'cb']) await other.put(k(name), String(INITIAL));
    const aheadSession = await Session.create(second, { ttl: 30 });
    const runSession = await Session.create(etcd, { ttl: 30 });
    const locks = stmKeyLocks(runSession, locksPrefix());
    try {
      const keys = [bytes('ca'), bytes('cb')].sort(Buffer.compare);
      const ahead = await stmKeyLocks(aheadSession, locksPrefix()).lock(keys);
      calls.length = 0;
      // Keys this session never locked: the run reads them, loses its optimistic commit to the
      // queue and joins it.
      const first = transfer(etcd, 'ca', 'cb', { contention: { locks } });
      await queued(4);
      await settled();
      expect(calls).toEqual([RANGE, RANGE, TXN, TXN]);
      calls.length = 0;
      // Its turn has not come, yet the next run starts from what the join read and waits for
      // that turn in-process: no read, no optimistic commit lost to the queue.
      const next = transfer(etcd, 'ca', 'cb', { contention: { locks } });
      await settled();
      await ahead.release();
      const [firstAt, nextAt] = await Promise.all([first, next]);
      expect(nextAt).toBeGreaterThan(firstAt);
      // The first run's read when its turn came, its commit passing the turn on, the next's commit.
      expect(calls).toEqual([TXN, TXN, TXN]);
      expect([await balance('ca'), await balance('cb')]).toEqual([INITIAL - 2, INITIAL + 2]);
      await queued(0);
    } finally {
      await aheadSession.close();
      await runSession.close();
    }
  });

  it('a run waiting in the local queue behind one that goes to the locks follows it there, without a read or a commit of its own first', async () => {
    for (const name of ['da', 'db']) await other.put(k(name), String(INITIAL));
    const aheadSession = await Session.create(second, { ttl: 30 });
    const runSession = await Session.create(etcd, { ttl: 30 });
    const locks = stmKeyLocks(runSession, locksPrefix());
    const keys = [bytes('da'), bytes('db')].sort(Buffer.compare);
    let ahead: StmKeysHeld | undefined;
    let next: Promise<bigint> | undefined;
    let nextRead: () => void = () => {};
    const nextHasRead = new Promise<void>((resolve) => {
      nextRead = resolve;
    });
    try {
      calls.length = 0;
      let attempts = 0;
      // A writer elsewhere changes `da` under the first two attempts (its value unchanged); before
      // the second fails, another session queues for the keys.
      const first = runStm(
        etcd,
        async (stm) => {
          attempts++;
          const a = Number(await stm.get(k('da')));
          const b = Number(await stm.get(k('db')));
          if (attempts === 2) {
            // Holding the keys in the local queue: the next run waits there.
            next = runStm(
              etcd,
              async (inner) => {
                const x = Number(await inner.get(k('da')));
                const y = Number(await inner.get(k('db')));
                nextRead();
                inner.put(k('da'), String(x - 1));
                inner.put(k('db'), String(y + 1));
              },
              { contention: { locks, afterConflicts: 1 } },
            ).then((result) => result.header.revision);
            await nextHasRead;
            ahead = await stmKeyLocks(aheadSession, locksPrefix()).lock(keys);
          }
          if (attempts <= 2) await other.put(k('da'), String(a));
          stm.put(k('da'), String(a - 1));
          stm.put(k('db'), String(b + 1));
        },
        { contention: { locks, afterConflicts: 1 } },
      ).then((result) => result.header.revision);
      await queued(4);
      await settled();
      // The first run: its reads, two failed commits, its join. The next: its reads, then it
      // waits in the local queue, and follows the first to the locks when that one leaves it.
      expect(calls).toEqual([RANGE, RANGE, TXN, RANGE, RANGE, TXN, TXN]);
      calls.length = 0;
      await ahead?.release();
      const [firstAt, nextAt] = await Promise.all([first, next]);
      expect(nextAt).toBeGreaterThan(firstAt as bigint);
      // The first's read when its turn came and its commit passing the turn on; the next's commit.
      expect(calls).toEqual([TXN, TXN, TXN]);
      expect([await balance('da'), await balance('db')]).toEqual([INITIAL - 2, INITIAL + 2]);
      await queued(0);
    } finally {
      await aheadSession.close();
      await runSession.close();
    }
  });

  it('a turn passes only to a run waiting for exactly its keys; other runs join the queues after it', async () => {
    for (const name of ['ka', 'kb', 'kc']) await other.put(k(name), String(INITIAL));
    const aheadSession = await Session.create(second, { ttl: 30 });
    const runSession = await Session.create(etcd, { ttl: 30 });
    const locks = stmKeyLocks(runSession, locksPrefix());
    try {
      const keys = await contend(aheadSession, locks, 'ka', 'kb');
      await contend(aheadSession, locks, 'kb', 'kc');
      const ahead = await stmKeyLocks(aheadSession, locksPrefix()).lock(keys);
      calls.length = 0;
      const first = transfer(etcd, 'ka', 'kb', { contention: { locks, afterConflicts: 1 } });
      await queued(4);
      await settled();
      // Waits in-process for kb, held by the first run's turn on ka and kb.
      const overlapping = transfer(etcd, 'kb', 'kc', { contention: { locks, afterConflicts: 1 } });
      await other.get(k('ka'));
      await ahead.release();
      const [firstAt, overlappingAt] = await Promise.all([first, overlapping]);
      expect(overlappingAt).toBeGreaterThan(firstAt);
      // The first: its join, a read when its turn came (the turn ahead wrote nothing), its commit
      // leaving the queues. The other: its own join (its keys differ) and commit.
      expect(calls).toEqual([TXN, TXN, TXN, TXN, TXN]);
      expect([await balance('ka'), await balance('kb'), await balance('kc')]).toEqual([
        INITIAL - 2,
        INITIAL,
        INITIAL + 2,
      ]);
      await queued(0);
    } finally {
      await aheadSession.close();
      await runSession.close();
    }
  });

  for (const when of ['before it is handed the turn', 'once handed the turn'] as const) {
    it(`a waiter that aborts ${when} leaves the queues; the holder's commit applies`, async () => {
      for (const name of ['aa', 'ab']) await other.put(k(name), String(INITIAL));
      const aheadSession = await Session.create(second, { ttl: 30 });
      const runSession = await Session.create(etcd, { ttl: 30 });
      const base = stmKeyLocks(runSession, locksPrefix());
      const controllers = [new AbortController(), new AbortController()];
      let armed = false;
      const abortAll = () => {
        if (!armed) return;
        for (const controller of controllers) controller.abort('enough');
      };
      // The holder's releasing() or committed() aborts every run: the holder's commit is decided
      // (or sent) by then, the waiter's wait is not over.
      const hooked = (held: StmKeysHeld): StmKeysHeld => ({
        get seen() {
          return held.seen;
        },
        get waited() {
          return held.waited;
        },
        first: () => held.first(),
        releasing: () => {
          const deletes = held.releasing();
          if (when === 'before it is handed the turn') abortAll();
          return deletes;
        },
        ahead: () => held.ahead(),
        turn: (responses, signal) => held.turn(responses, signal),
        committed: async (after) => {
          await held.committed(after);
          if (when === 'once handed the turn') abortAll();
        },
        release: () => held.release(),
      });
      const locks: StmKeyLocks = {
        ...base,
        lock: async (keys, signal) => hooked(await base.lock(keys, signal)),
      };
      try {
        const keys = await contend(aheadSession, locks, 'aa', 'ab');
        armed = true;
        const ahead = await stmKeyLocks(aheadSession, locksPrefix()).lock(keys);
        const runs = controllers.map(({ signal }) =>
          transfer(etcd, 'aa', 'ab', { contention: { locks, afterConflicts: 1 }, signal }),
        );
        // Handled from now on: a run aborted while the holder releases rejects before the awaits below end.
        const ended = Promise.allSettled(runs);
        await queued(4);
        await settled();
        calls.length = 0;
        await ahead.release();
        const outcomes = await ended;
        const failed = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : []));
        expect(failed).toHaveLength(1);
        expect(failed[0]).toBeInstanceOf(AbortedError);
        // The holder's read when its turn came, its commit kept the queue keys for the waiter,
        // which went: one more txn leaves the queues.
        expect(calls).toEqual([TXN, TXN, TXN]);
        expect([await balance('aa'), await balance('ab')]).toEqual([INITIAL - 2, INITIAL + 2]);
        await queued(0);
      } finally {
        await aheadSession.close();
        await runSession.close();
      }
    });
  }

  it('conservation: 64 transfers over 8 sessions on two clients, in group turns', async () => {
    for (const name of ['ca', 'cb']) await other.put(k(name), String(INITIAL));
    const clients = Array.from({ length: 8 }, (_, i) => (i % 2 ? etcd : second));
    const sessions = await Promise.all(
      clients.map((client) => Session.create(client, { ttl: 30 })),
    );
    try {
      const runs = Array.from({ length: 64 }, (_, i) => {
        const session = sessions[i % 8] as Session;
        const client = clients[i % 8] as Etcd;
        const contention = { locks: stmKeyLocks(session, locksPrefix()), afterConflicts: 1 };
        // 40 move 1 from ca to cb, 24 the other way.
        return i < 40
          ? transfer(client, 'ca', 'cb', { contention })
          : transfer(client, 'cb', 'ca', { contention });
      });
      const outcomes = await Promise.allSettled(runs);
      expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
      expect([await balance('ca'), await balance('cb')]).toEqual([
        INITIAL - 40 + 24,
        INITIAL + 40 - 24,
      ]);
      // Every revision once: no two runs committed as one.
      const revisions = outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 0n));
      expect(new Set(revisions).size).toBe(64);
      await queued(0);
    } finally {
      await Promise.all(sessions.map((session) => session.close()));
    }
  });
});
