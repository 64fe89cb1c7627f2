// Software transactional memory over etcd, with the semantics of Go's `concurrency.NewSTM`, plus a
// local queue, jittered retries and cancellation (docs/stm.md).
import {
  AbortedError,
  type AnyOpResponse,
  type Bytes,
  type Compare,
  type DeleteOp,
  InvalidArgumentError,
  type KV,
  op,
  type RangeOp,
  type ResponseHeader,
  toBytes,
} from '@etcdkit/client';
import {
  type CommitPlan,
  keyId,
  type Prefetched,
  type ProbeSource,
  type ReadEntry,
  StmAttempt,
} from './attempt.js';
import { backoffDelay, DEFAULT_STM_BACKOFF, pause, type StmBackoff } from './backoff.js';
import {
  contentionOf,
  distinctKeys,
  isContended,
  LockedKeys,
  noteTurn,
  type StmContention,
  type StmKeyLocks,
  type StmKeysHeld,
} from './contention.js';
import { StmConflictError, StmTooManyOpsError } from './errors.js';
import { isolationRules, STM_ISOLATION_LEVELS, type StmIsolation } from './isolation.js';
import { type HeldKeys, type StmQueue, stmQueueOf } from './local-queue.js';
import type { Stm } from './view.js';

/** Options of {@link runStm}. */
export interface StmOptions {
  /** How isolated the transaction is; see {@link StmIsolation}. Default `'serializable-snapshot'`. */
  readonly isolation?: StmIsolation;
  /**
   * Keys `apply` will read: they are read before the first attempt in one round trip (a single
   * read-only txn, so all at one revision), and reads of them are then served locally. After a
   * conflict they are read again together with the keys validated, in the failed commit itself.
   */
  readonly prefetch?: readonly Bytes[];
  /**
   * Aborts the run: reads in flight and the pause between attempts stop, and runStm rejects with
   * AbortedError without committing. A commit already sent is not interrupted: its outcome is
   * reported, since it may have been applied.
   */
  readonly signal?: AbortSignal;
  /**
   * How many times `apply` is run again after a conflict, before StmConflictError. Default
   * unbounded (`Infinity`), as in Go: a run under contention retries until it commits or `signal`
   * aborts it (`AbortSignal.timeout(ms)` for a deadline). Give a number to fail fast instead.
   */
  readonly maxRetries?: number;
  /** Pause between attempts after conflicts with writers outside the local queue; see {@link StmBackoff}. */
  readonly backoff?: StmBackoff;
  /**
   * Whether runs of this process that conflicted queue up on the keys they touched (default
   * `true`). A queued run has the keys to itself among the runStm calls on the same KV object of
   * this process, so local contenders take turns instead of failing each other's commits; writers
   * elsewhere are still detected by the commit's compares. Turn it off if `apply` itself calls
   * runStm on the same keys (the inner run would wait for the outer one's turn forever).
   */
  readonly localQueue?: boolean;
  /**
   * The server's limit of ops per txn side (etcd's `--max-txn-ops`). A commit that would need more
   * writes or compares fails with StmTooManyOpsError before it is sent. Default 128.
   */
  readonly maxTxnOps?: number;
  /**
   * Contention across processes: after `afterConflicts` conflicts with writers outside the local
   * queue, the run locks the keys it touches through `locks` (one lock per key, in byte order) and
   * retries holding them until it commits, so runs of every process that do the same take turns
   * in FIFO order instead of failing each other's commits. Runs that do not conflict never take
   * them: one round trip, as without. Default: none (conflicts pause and retry).
   */
  readonly contention?: StmContention;
}

/** What {@link runStm} resolves with once a commit succeeded. */
export interface StmResult<T> {
  /** What `apply` returned in the attempt that committed. */
  readonly value: T;
  /**
   * Header of the commit. `header.revision` is the revision of the writes, or the unchanged current
   * revision when the transaction wrote nothing.
   */
  readonly header: ResponseHeader;
  /** How many times `apply` ran: 1 when the first commit succeeded. */
  readonly attempts: number;
}

/** The default of {@link StmOptions.maxRetries}: no bound. */
export const DEFAULT_STM_MAX_RETRIES = Number.POSITIVE_INFINITY;

const DEFAULT_MAX_TXN_OPS = 128;

/**
 * Runs `apply` as a transaction: it reads keys through the {@link Stm} it gets, buffers writes, and
 * its writes are committed in one etcd txn that applies them only if the checks of the isolation
 * level still hold (by default: every key read is unchanged, and no key written changed since the
 * snapshot). On a conflict nothing is written and `apply` runs again with fresh values, until it
 * commits or `signal` aborts (or, with `maxRetries`, until StmConflictError). Runs of this process
 * that conflicted take turns on their keys (see {@link StmOptions.localQueue}); conflicts with
 * other writers add a random, growing pause.
 *
 * `apply` may run several times and must have no side effects other than through the Stm. An error
 * it throws ends the run without committing and is rethrown as is. A commit that fails for another
 * reason (OutcomeUnknownError after a lost connection, for one) is reported as is and not retried:
 * it may have been applied.
 *
 * @example
 * ```ts
 * const { value: moved } = await runStm(etcd, async (stm) => {
 *   const from = Number((await stm.get('accounts/a')) ?? '0');
 *   const to = Number((await stm.get('accounts/b')) ?? '0');
 *   const amount = Math.min(from, 10);
 *   stm.put('accounts/a', String(from - amount));
 *   stm.put('accounts/b', String(to + amount));
 *   return amount;
 * });
 * ```
 */
export async function runStm<T>(
  kv: KV,
  apply: (stm: Stm) => T | Promise<T>,
  options: StmOptions = {},
): Promise<StmResult<T>> {
  const settings = settingsOf(options);
  const { signal } = options;
  if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
  let prefetched =
    settings.prefetch.length > 0 ? await prefetch(kv, settings.prefetch, signal) : undefined;
  const queue = settings.localQueue ? stmQueueOf(kv) : undefined;
  let keyLocks: HeldKeys | undefined;
  // The keys held in the local queue while an optimistic commit is in flight (see below).
  let committing: HeldKeys | undefined;
  // The keys locked across processes, once conflicts with writers elsewhere kept coming.
  let locked: LockedKeys | undefined;
  let pauses = 0;
  let conflictsWithKeys = 0;
  let failedCommits = 0;
  // The first attempt reads keys this process watches (its recent turns) from the watches.
  let probe = probeOf(settings.contention?.locks, queue);
  try {
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
      const stm = new StmAttempt(kv, settings.rules, signal, prefetched, probe);
      probe = undefined;
      let ran: { readonly value: T; readonly plan: CommitPlan } | undefined;
      let failure: { readonly error: unknown } | undefined;
      try {
        const value = await apply(stm);
        ran = { value, plan: stm.plan() };
      } catch (error) {
        failure = { error };
      } finally {
        stm.close();
      }
      // A probe that failed (its watched keys may be at different revisions) runs again on reads.
      if (failure && stm.probed) {
        attempt--;
        continue;
      }
      // A snapshot compacted away under a running attempt is a conflict like any other: a new
      // attempt reads a newer revision. Any other error ends the run.
      if (failure && !stm.snapshotLost) throw failure.error;
      const given = prefetched;
      prefetched = undefined;
      const keys = ran && [...ran.plan.reads.map((read) => read.key), ...ran.plan.writeKeys];
      if (ran && keys) {
        if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
        // Keys a queued run holds are about to change, so a commit now would most likely conflict:
        // join the queue without sending it (the last attempt allowed is always sent). A run
        // holding the keys' locks always sends: no run of the queue can commit on them meanwhile.
        const doomed =
          queue &&
          !keyLocks &&
          !locked &&
          attempt <= settings.maxRetries &&
          ran.plan.compares.length > 0 &&
          queue.holdsAny(keys);
        // A run of this process went to the locks on one of these keys, and its last turn there
        // did not find them free: this run would lose its optimistic commit to the queue too, so
        // it queues without it (on any attempt: runs that waited in the local queue follow too).
        const contended =
          settings.contention !== undefined &&
          !locked &&
          attempt <= settings.maxRetries &&
          ran.plan.compares.length > 0 &&
          isContended(settings.contention.locks, keys);
        if (stm.probed && !doomed && !contended) {
          // The probe would be committed: run `apply` again on values read from etcd.
          prefetched = given;
          attempt--;
          continue;
        }
        if (contended) failedCommits = settings.contention?.afterConflicts ?? 0;
        if (!doomed && !contended) {
          // Its keys held while the commit is in flight: a local run on them queues for its outcome
          // (and starts from what it left) instead of racing it with a commit this one would fail.
          committing =
            queue && !keyLocks && !locked && ran.plan.compares.length > 0
              ? queue.tryTake(keys)
              : undefined;
          const outcome = await commit(kv, ran.plan, settings, lockingOf(settings, locked, keys));
          if (outcome.committed) {
            const after = stateAfter(ran.plan, outcome.header.revision);
            // The commit left the queues of a turn held, or the turn passes on with what it left.
            const held = locked?.held;
            locked = undefined;
            await held?.committed({ revision: after.revision, keys: [...after.entries.values()] });
            // The next run waiting for these keys starts from what this commit left.
            keyLocks?.release(after);
            committing?.release(after);
            return { value: ran.value, header: outcome.header, attempts: attempt };
          }
          prefetched = outcome.prefetched;
          // Conflicts among this process's runs are the local queue's: only those it cannot
          // explain (a run holding its turn, or no queue) call for locks across processes.
          if (keyLocks || !queue) failedCommits++;
          // Runs queue for these keys: commits not in the queue fail until it empties, so join it.
          if (settings.contention && !locked && outcome.queued) {
            failedCommits = Math.max(failedCommits, settings.contention.afterConflicts);
          }
          if (locked?.covers(keys)) {
            if (attempt > settings.maxRetries) throw new StmConflictError(attempt);
            // Holding the turn, a conflict is a writer that takes no locks (the failed commit
            // brought the values it left); not first, the turn passed to a run ahead meanwhile.
            await locked.held.turn(outcome.tail, signal);
            prefetched = newest(prefetched, seenOf(locked.held));
            continue;
          }
        }
      }
      if (attempt > settings.maxRetries) throw new StmConflictError(attempt);
      const { contention } = settings;
      const lockKeys = async (contention: Required<StmContention>, keys: Uint8Array[]) => {
        // The locks order local runs too (one session's Mutex waits for its own holds): never
        // wait for them holding keys of the local queue, which a local run ahead may wait for.
        keyLocks?.release();
        keyLocks = undefined;
        committing?.release();
        committing = undefined;
        await locked?.held.release();
        locked = undefined;
        // The other runs of this process on these keys follow at once, before their own failed
        // commits: when many start together, only the first ones pay for finding the contention.
        noteTurn(contention.locks, keys, true);
        locked = await LockedKeys.take(contention.locks, keys, signal);
        noteTurn(contention.locks, keys, locked.held.waited ?? false);
        // Runs elsewhere committed while this one waited: the turn saw what they left.
        prefetched = newest(prefetched, seenOf(locked.held));
      };
      if (contention && ran && keys && failedCommits >= contention.afterConflicts) {
        await lockKeys(contention, keys);
        continue;
      }
      if (queue && ran && keys && !keyLocks?.covers(keys)) {
        const first = keyLocks === undefined;
        const held = keyLocks?.ids ?? [];
        keyLocks?.release();
        // A failed commit's hold is the run's place in the queue: first, as it already was.
        keyLocks = committing ?? (await queue.take(keys, held, signal));
        committing = undefined;
        // The local run ahead went to the locks on these keys: follow it there, without a read
        // (the turn reads the keys) nor a commit that the queue would fail.
        if (contention && isContended(contention.locks, keys)) {
          await lockKeys(contention, keys);
          continue;
        }
        // Runs that held these keys meanwhile have committed: what the failed commit read is old.
        if (keyLocks.waited || !prefetched) {
          const stale = refetchKeys(ran.plan, settings);
          prefetched = keyLocks.handed(stale) ?? (await prefetch(kv, stale, signal));
        }
        // Waiting for the keys spaced this run from the local ones; only conflicts with writers
        // outside the queue call for a pause.
        if (first) continue;
      } else if (keyLocks && ++conflictsWithKeys === 1) {
        // A first conflict with the keys held is most often a local run not yet queued: the
        // failed commit brought its values, so retry at once. Repeated conflicts come from writers elsewhere.
        continue;
      }
      await pause(backoffDelay(++pauses, settings.backoff), signal);
    }
  } finally {
    keyLocks?.release();
    committing?.release();
    await locked?.held.release();
  }
}

interface Settings {
  readonly rules: ReturnType<typeof isolationRules>;
  readonly prefetch: readonly Uint8Array[];
  readonly maxRetries: number;
  readonly backoff: Required<StmBackoff>;
  readonly maxTxnOps: number;
  readonly localQueue: boolean;
  readonly contention: Required<StmContention> | undefined;
}

function settingsOf(options: StmOptions): Settings {
  const isolation = options.isolation ?? 'serializable-snapshot';
  if (!STM_ISOLATION_LEVELS.includes(isolation)) {
    throw new InvalidArgumentError(
      `isolation must be one of ${STM_ISOLATION_LEVELS.map((l) => `'${l}'`).join(', ')}`,
    );
  }
  const maxTxnOps = count(options.maxTxnOps, DEFAULT_MAX_TXN_OPS, 'maxTxnOps', 1);
  const prefetch = (options.prefetch ?? []).map((key) => {
    if (typeof key !== 'string' && !(key instanceof Uint8Array)) {
      throw new InvalidArgumentError('prefetch keys must be strings or Uint8Arrays');
    }
    return toBytes(key);
  });
  const unique = [...new Map(prefetch.map((key) => [keyId(key), key])).values()];
  if (unique.length > maxTxnOps) {
    throw new InvalidArgumentError(
      `at most ${maxTxnOps} keys can be prefetched in one txn, got ${unique.length}`,
    );
  }
  const backoff = {
    minDelayMs: count(options.backoff?.minDelayMs, DEFAULT_STM_BACKOFF.minDelayMs, 'minDelayMs', 0),
    maxDelayMs: count(options.backoff?.maxDelayMs, DEFAULT_STM_BACKOFF.maxDelayMs, 'maxDelayMs', 0),
  };
  return {
    rules: isolationRules(isolation),
    prefetch: unique,
    maxRetries:
      options.maxRetries === Number.POSITIVE_INFINITY
        ? options.maxRetries
        : count(options.maxRetries, DEFAULT_STM_MAX_RETRIES, 'maxRetries', 0),
    backoff,
    maxTxnOps,
    localQueue: flag(options.localQueue, true, 'localQueue'),
    contention: contentionOf(options.contention),
  };
}

function count(value: number | undefined, fallback: number, name: string, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new InvalidArgumentError(`${name} must be an integer >= ${min}, got ${String(value)}`);
  }
  return value;
}

function flag(value: boolean | undefined, fallback: boolean, name: string): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new InvalidArgumentError(`${name} must be a boolean, got ${String(value)}`);
  }
  return value;
}

/** Reads `keys` in one read-only txn: every value at the txn's revision. */
async function prefetch(
  kv: KV,
  keys: readonly Uint8Array[],
  signal: AbortSignal | undefined,
): Promise<Prefetched> {
  const result = await kv
    .txn()
    .then(...keys.map((key) => op.get(key)))
    .commit({ signal });
  return prefetchedOf(keys, result.header.revision, result.succeeded ? result.responses : []);
}

type CommitOutcome =
  | { readonly committed: true; readonly header: ResponseHeader }
  | {
      readonly committed: false;
      readonly prefetched: Prefetched;
      /** Whether runs hold or wait for the locks of the keys (guarded commits only). */
      readonly queued: boolean;
      /** The responses of {@link Locking.reads}. */
      readonly tail: readonly AnyOpResponse[];
    };

/** What contention adds to a commit: compares, ops with its writes, reads after a conflict. */
interface Locking {
  readonly compares: readonly Compare[];
  readonly writes: readonly DeleteOp[];
  readonly reads: readonly RangeOp[];
}

const NO_LOCKING: Locking = { compares: [], writes: [], reads: [] };

/**
 * Holding its keys' turn, a run commits only while first in their queues, and the commit leaves
 * them. Until then it commits only while no one holds or waits for them (a run that queued for its
 * turn is not overtaken by newcomers), and a conflict tells whether someone does.
 */
function lockingOf(
  settings: Settings,
  locked: LockedKeys | undefined,
  keys: readonly Uint8Array[],
): Locking {
  const { contention } = settings;
  if (!contention) return NO_LOCKING;
  if (locked?.covers(keys)) {
    const { held } = locked;
    return { compares: held.first(), writes: held.releasing(), reads: held.ahead() };
  }
  const distinct = distinctKeys(keys);
  return {
    compares: contention.locks.free(distinct),
    writes: [],
    reads: contention.locks.queued(distinct),
  };
}

async function commit(
  kv: KV,
  plan: CommitPlan,
  settings: Settings,
  locking: Locking,
): Promise<CommitOutcome> {
  // Without compares of its own the commit cannot conflict: one without guards either.
  const extra = plan.compares.length === 0 && locking.writes.length === 0 ? NO_LOCKING : locking;
  const writes = [...plan.writes, ...extra.writes];
  const compares = [...plan.compares, ...extra.compares];
  if (writes.length > settings.maxTxnOps || compares.length > settings.maxTxnOps) {
    throw new StmTooManyOpsError(writes.length, compares.length, settings.maxTxnOps);
  }
  // Without compares the else branch can never run: leave it empty.
  const refetch = compares.length === 0 ? [] : refetchKeys(plan, settings);
  // No signal: a commit once sent is waited for, so its outcome is never misreported as an abort.
  const result = await kv
    .txn()
    .if(...compares)
    .then(...writes)
    .else(...refetch.map((key) => op.get(key)), ...(compares.length === 0 ? [] : extra.reads))
    .commit();
  if (result.succeeded) return { committed: true, header: result.header };
  const tail = result.responses.slice(refetch.length);
  return {
    committed: false,
    prefetched: prefetchedOf(refetch, result.header.revision, result.responses),
    queued: extra.writes.length === 0 && tail.some((r) => r.kind === 'range' && r.count > 0n),
    tail,
  };
}

/**
 * A probe source over the keys a run of the local queue holds (as the last commit there left them)
 * and the keys `locks` watches, when either can tell.
 */
function probeOf(
  locks: StmKeyLocks | undefined,
  queue: StmQueue | undefined,
): ProbeSource | undefined {
  const watched = typeof locks?.watched === 'function' ? locks : undefined;
  if (watched === undefined && queue === undefined) return undefined;
  return (key) => queue?.heldValue(key) ?? watched?.watched?.(key);
}

/** What a lock holder saw of its keys, as values read ahead. */
function seenOf(held: StmKeysHeld): Prefetched {
  const { revision, keys } = held.seen;
  return { revision, entries: new Map(keys.map((entry) => [keyId(entry.key), entry])) };
}

/**
 * The newer value of each key of `a` and `b`, at the newer revision: every value read is still
 * validated by the commit's compares, so mixing two reads never commits on a stale one.
 */
function newest(a: Prefetched | undefined, b: Prefetched): Prefetched {
  if (a === undefined) return b;
  const [older, newer] = a.revision > b.revision ? [b, a] : [a, b];
  return { revision: newer.revision, entries: new Map([...older.entries, ...newer.entries]) };
}

/**
 * The keys the else branch reads for the next attempt: the keys validated, then the prefetch keys,
 * within the per-side limit (the validated keys always fit: there is one compare per key).
 */
function refetchKeys(plan: CommitPlan, settings: Settings): Uint8Array[] {
  const keys = new Map(plan.reads.map(({ key }) => [keyId(key), key]));
  for (const key of settings.prefetch) {
    if (keys.size >= settings.maxTxnOps) break;
    if (!keys.has(keyId(key))) keys.set(keyId(key), key);
  }
  return [...keys.values()];
}

/**
 * The keys of a committed plan as the commit left them, at its revision: each key read still
 * had the value read (the compares held), each key written has its new value.
 */
function stateAfter(plan: CommitPlan, revision: bigint): Prefetched {
  const entries = new Map(plan.reads.map((read) => [keyId(read.key), read]));
  for (const { key, value } of plan.written) {
    entries.set(keyId(key), {
      key,
      kv: value === undefined ? undefined : { value, modRevision: revision },
    });
  }
  return { revision, entries };
}

/** Pairs the keys of a txn's gets with their responses (same order). */
function prefetchedOf(
  keys: readonly Uint8Array[],
  revision: bigint,
  responses: readonly AnyOpResponse[],
): Prefetched {
  const entries = new Map<string, ReadEntry>();
  keys.forEach((key, i) => {
    const response = responses[i];
    if (response?.kind !== 'range') return;
    entries.set(keyId(key), { key, kv: response.kvs[0] });
  });
  return { revision, entries };
}
