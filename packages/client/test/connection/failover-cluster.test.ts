// Failover acceptance (issue 2, "Done when"): against a 3-member cluster (the embedded server's
// simulated one and a real etcd), the member the client uses (the leader) is frozen with txns on
// the wire, then killed, mid-workload. Reads go on; every write either succeeds or fails
// with a typed error; a counter updated by revision-guarded txns ends at exactly the number of
// updates that were applied, each applied once, and every acknowledged one among them.
import { randomUUID } from 'node:crypto';
import { describeEachCluster, type TestCluster } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EtcdError, OutcomeUnknownError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import { cmp } from '../../src/kv/compare.js';
import { op } from '../../src/kv/op.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const COUNTER = 'failover/counter';

/** The counter's value: its count and the token of the update that wrote it. */
interface Counter {
  readonly n: number;
  readonly token: string;
}

/** How one guarded increment ended, as its writer saw it. */
type Outcome =
  | { readonly kind: 'applied' } // succeeded: true
  | { readonly kind: 'conflict' } // succeeded: false
  | { readonly kind: 'failed'; readonly error: unknown };

interface Attempt {
  readonly token: string;
  readonly guardedRetry: boolean;
  readonly outcome: Outcome;
}

describeEachCluster('failover of a 3-member cluster under load', (suite) => {
  let cluster: TestCluster;
  let admin: Etcd;

  beforeAll(() => {
    cluster = suite.cluster();
    admin = new Etcd({ endpoints: cluster.endpoints });
  });
  afterAll(async () => {
    await admin?.close();
  });

  it('killing the leader the client uses mid-workload: reads go on, writes typed, counter exact', async () => {
    const leader = await cluster.waitForLeader();
    // The leader first: the member the client talks to is the one that dies, and with it the
    // leadership, so writes in flight see both a lost connection and a leader change.
    const endpoints = [leader.endpoint, ...cluster.endpoints.filter((e) => e !== leader.endpoint)];
    const etcd = new Etcd({ endpoints, dialTimeoutMs: 1_000, callTimeoutMs: 10_000 });
    await etcd.put(COUNTER, JSON.stringify({ n: 0, token: 'initial' } satisfies Counter));
    expect(etcd.connection.currentEndpoint).toBe(new URL(leader.endpoint).host);

    let stop = false;
    let killedAt = Number.POSITIVE_INFINITY;
    const reads = { before: 0, after: 0, failures: [] as unknown[] };
    const attempts: Attempt[] = [];
    /** Txns sent and not yet answered, plain and guarded. */
    const inFlight = { plain: 0, guarded: 0 };

    async function reader(): Promise<void> {
      while (!stop) {
        try {
          const kv = await etcd.get(COUNTER);
          if (kv === undefined) throw new Error('the counter is missing');
          if (performance.now() > killedAt) reads.after++;
          else reads.before++;
        } catch (error) {
          reads.failures.push(error);
        }
      }
    }

    async function writer(guardedRetry: boolean): Promise<void> {
      while (!stop) {
        let current: { counter: Counter; modRevision: bigint };
        try {
          const kv = await etcd.get(COUNTER);
          if (!kv) throw new Error('the counter is missing');
          current = { counter: kv.json<Counter>(), modRevision: kv.modRevision };
        } catch (error) {
          reads.failures.push(error);
          continue;
        }
        const token = randomUUID();
        const next: Counter = { n: current.counter.n + 1, token };
        const txn = etcd
          .txn()
          .if(cmp.modRevision(COUNTER, '==', current.modRevision))
          .then(op.put(COUNTER, JSON.stringify(next)));
        let outcome: Outcome;
        const lane = guardedRetry ? 'guarded' : 'plain';
        inFlight[lane]++;
        try {
          const result = await txn.commit(guardedRetry ? { retry: 'guarded' } : {});
          outcome = { kind: result.succeeded ? 'applied' : 'conflict' };
        } catch (error) {
          outcome = { kind: 'failed', error };
        } finally {
          inFlight[lane]--;
        }
        attempts.push({ token, guardedRetry, outcome });
      }
    }

    const workers = [
      ...Array.from({ length: 3 }, () => reader()),
      writer(false),
      writer(false),
      writer(false),
      writer(true),
      writer(true),
      writer(true),
    ];
    await sleep(1_500);
    // Freeze the leader while txns of both kinds are on the wire, then kill it: those txns were
    // sent and can never be answered, so they must come back typed (plain ones as outcome unknown).
    while (inFlight.plain < 2 || inFlight.guarded < 1) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    const before = attempts.length;
    killedAt = performance.now();
    await leader.pause();
    // The writers' txns in flight may have been answered just before the stop landed, and the
    // writers may all be waiting in reads now; this plain txn is surely on the wire to the frozen
    // leader. Its compare can never hold, so even applied it would change nothing.
    const probeToken = randomUUID();
    inFlight.plain++;
    const probe = etcd
      .txn()
      .if(cmp.modRevision(COUNTER, '==', 0n))
      .then(op.put(COUNTER, JSON.stringify({ n: -1, token: probeToken })))
      .commit()
      .then(
        (result): Outcome => ({ kind: result.succeeded ? 'applied' : 'conflict' }),
        (error: unknown): Outcome => ({ kind: 'failed', error }),
      )
      .then((outcome) => {
        inFlight.plain--;
        attempts.push({ token: probeToken, guardedRetry: false, outcome });
      });
    await sleep(300);
    const stuck = inFlight.plain;
    await leader.kill();
    // The workload goes on until the survivors have served what is asserted below: a fixed 3 s
    // was a race, which a loaded run could spend electing the new leader and redialing.
    const deadline = Date.now() + 30_000;
    while ((reads.after <= 20 || attempts.length - before <= 10) && Date.now() < deadline) {
      await sleep(50);
    }
    stop = true;
    await Promise.all([...workers, probe]);
    const movedTo = etcd.connection.currentEndpoint;
    await etcd.close();

    // Reads went on: the retry budget absorbed the failover, and the client moved on.
    // The failures first: when reads stopped, their errors say why.
    expect(reads.failures).toEqual([]);
    expect(reads.before).toBeGreaterThan(0);
    expect(reads.after).toBeGreaterThan(20);
    expect(attempts.length - before).toBeGreaterThan(10);
    expect(stuck).toBeGreaterThanOrEqual(1);
    expect(movedTo).not.toBe(new URL(leader.endpoint).host);

    // Every failed write failed with a typed error. Plain writes only with OutcomeUnknownError;
    // writes that opted in to guarded retries may also end with the last retried failure.
    const failed = attempts.filter((a) => a.outcome.kind === 'failed');
    for (const attempt of failed) {
      const error = (attempt.outcome as { error: unknown }).error;
      expect(error).toBeInstanceOf(EtcdError);
      if (!attempt.guardedRetry) expect(error).toBeInstanceOf(OutcomeUnknownError);
    }
    // The plain txns stuck on the frozen leader are among them.
    expect(failed.filter((a) => !a.guardedRetry).length).toBeGreaterThanOrEqual(stuck);

    // The counter's history, newest first: every applied update, each with its writer's token.
    const applied = await history(admin);
    const tokens = applied.map((c) => c.token);
    expect(new Set(tokens).size).toBe(tokens.length); // no update applied twice
    expect(applied.map((c) => c.n)).toEqual(applied.map((_, i) => applied.length - 1 - i));
    const appliedTokens = new Set(tokens);
    const byToken = new Map(attempts.map((a) => [a.token, a]));
    // Only tokens of attempts made, plus the initial value.
    for (const token of tokens) expect(token === 'initial' || byToken.has(token)).toBe(true);
    // An acknowledged update is applied; a plain write whose compare failed is not (a guarded
    // retry's compare failure may hide an earlier attempt that applied: it stays ambiguous).
    for (const attempt of attempts) {
      if (attempt.outcome.kind === 'applied') expect(appliedTokens.has(attempt.token)).toBe(true);
      if (attempt.outcome.kind === 'conflict' && !attempt.guardedRetry) {
        expect(appliedTokens.has(attempt.token)).toBe(false);
      }
    }
    // The exact count: acknowledged updates plus the ambiguous ones found applied on re-reading.
    const acknowledged = attempts.filter((a) => a.outcome.kind === 'applied').length;
    const ambiguousApplied = attempts.filter(
      (a) => a.outcome.kind !== 'applied' && appliedTokens.has(a.token),
    ).length;
    const ambiguous = attempts.filter(
      (a) => a.outcome.kind === 'failed' || (a.outcome.kind === 'conflict' && a.guardedRetry),
    ).length;
    const final = applied[0]!;
    expect(final.n).toBeGreaterThanOrEqual(acknowledged);
    expect(final.n).toBeLessThanOrEqual(acknowledged + ambiguous);
    expect(final.n).toBe(acknowledged + ambiguousApplied);
    expect(final.n).toBe(applied.length - 1);
  }, 90_000);
});

/** Every version of the counter, newest first, read back revision by revision. */
async function history(etcd: Etcd): Promise<Counter[]> {
  const versions: Counter[] = [];
  let kv = await etcd.get(COUNTER);
  while (kv) {
    versions.push(kv.json<Counter>());
    if (kv.version === 1n) break;
    kv = await etcd.get(COUNTER, { revision: kv.modRevision - 1n });
  }
  return versions;
}
