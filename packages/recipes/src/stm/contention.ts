// Contention across processes: after repeated conflicts with writers elsewhere, a run locks the
// keys it touches, one lock per key taken in byte order, so runs of every process that do the same
// take turns instead of failing each other's commits (docs/stm.md, "Contention across processes").
import {
  type AnyOpResponse,
  type Compare,
  type DeleteOp,
  InvalidArgumentError,
  type RangeOp,
} from '@etcdkit/client';
import { keyId } from './attempt.js';

/**
 * Locks on STM keys shared by every process, one per key, each a FIFO queue of runs. The recipes'
 * `stmKeyLocks(session)` gives one over queues in the layout of Go's Mutex. The commit of a run
 * holding its keys takes the turn and releases it: {@link StmKeysHeld.first} guards it and
 * {@link StmKeysHeld.releasing} rides in it.
 */
export interface StmKeyLocks {
  /**
   * Joins the queue of each of `keys` (distinct, in byte order) and waits until this run is first
   * in all of them; rejects with AbortedError when `signal` aborts, leaving the queues then.
   */
  lock(keys: readonly Uint8Array[], signal?: AbortSignal): Promise<StmKeysHeld>;
  /**
   * Txn conditions that hold while no one holds or waits for the lock of any of `keys`: a run
   * not holding them commits only then, so it never overtakes the runs queued for their turn.
   */
  free(keys: readonly Uint8Array[]): Compare[];
  /**
   * Reads for the else branch of a commit guarded by {@link free}: one range per key, whose
   * `count` is how many runs hold or wait for its lock. A run that finds some queues at once.
   */
  queued(keys: readonly Uint8Array[]): RangeOp[];
  /**
   * Optional: `key` as a watch this process keeps open shows it (the keys of its recent turns), or
   * undefined. A run's first attempt reads such keys there instead of from etcd, only to find
   * which keys it touches: that attempt is never committed (it queues for its turn, or `apply`
   * runs again on values read from etcd).
   */
  watched?(key: Uint8Array): StmSeenKey | undefined;
}

/** A key as a lock holder last saw it: its value and mod revision, or undefined when missing. */
export interface StmSeenKey {
  readonly key: Uint8Array;
  readonly kv: { readonly value: Uint8Array; readonly modRevision: bigint } | undefined;
}

/** Locked keys as last seen: every one's value at `revision` at least. */
export interface StmKeysState {
  readonly revision: bigint;
  readonly keys: readonly StmSeenKey[];
}

/** The turn {@link StmKeyLocks.lock} got: first in the queue of every key. */
export interface StmKeysHeld {
  /**
   * The locked keys as last seen (read when joining, then followed by watching them), the newest
   * at `revision`. Once the turn came, each shows every change up to the commit that handed it
   * over, so the turn starts from them without reading again.
   */
  readonly seen: StmKeysState;
  /**
   * Whether runs were ahead of this one when it joined: the keys are contended, so the next run of
   * this process on one of them queues without trying an optimistic commit first.
   */
  readonly waited?: boolean;
  /** Txn conditions that hold while this run is first in every queue. */
  first(): Compare[];
  /**
   * Ops for the commit's success branch: they leave every queue, so the commit releases; none
   * when the turn will pass on to a local run (see {@link committed}).
   */
  releasing(): DeleteOp[];
  /** Reads for the commit's else branch: every queue as it is, for {@link turn}. */
  ahead(): RangeOp[];
  /** After a failed commit: given the responses of {@link ahead}, waits until first again. */
  turn(responses: readonly AnyOpResponse[], signal?: AbortSignal): Promise<void>;
  /**
   * The commit with {@link releasing} applied; `after` is what it left of the keys (each at its
   * revision). When {@link releasing} gave no deletes, the turn passes on to a run of this process
   * waiting for the same keys, which starts from `after`; else stop following the queues.
   */
  committed(after?: StmKeysState): void | Promise<void>;
  /** Leaves every queue without committing; idempotent. */
  release(): Promise<void>;
}

/** Options of {@link StmOptions.contention}. */
export interface StmContention {
  /** The locks a run takes on its keys. */
  readonly locks: StmKeyLocks;
  /**
   * How many conflicts with writers outside the local queue a run takes before it locks its keys.
   * Default 2: a first conflict is often a race of two, worth one more optimistic try.
   */
  readonly afterConflicts?: number;
}

/** The default of {@link StmContention.afterConflicts}. */
export const DEFAULT_STM_LOCK_AFTER_CONFLICTS = 2;

/** @internal The keys a run holds locks on, and the locks. */
export class LockedKeys {
  private constructor(
    readonly ids: ReadonlySet<string>,
    readonly held: StmKeysHeld,
  ) {}

  /** Locks `keys` (sorted by bytes, once each) through `locks`. */
  static async take(
    locks: StmKeyLocks,
    keys: readonly Uint8Array[],
    signal: AbortSignal | undefined,
  ): Promise<LockedKeys> {
    const sorted = distinctKeys(keys);
    const held = await locks.lock(sorted, signal);
    return new LockedKeys(new Set(sorted.map(keyId)), held);
  }

  /** Whether every one of `keys` is locked. */
  covers(keys: readonly Uint8Array[]): boolean {
    return keys.every((key) => this.ids.has(keyId(key)));
  }
}

const contendedKeys = new WeakMap<StmKeyLocks, Map<string, true>>();
// Keys remembered per locks object: enough for the hot keys of a process, bounded all the same.
const MAX_CONTENDED_KEYS = 256;

/**
 * @internal Whether the last turn of this process on one of `keys` found runs ahead of it: a run
 * on them now would most likely lose its optimistic commit to the queue.
 */
export function isContended(locks: StmKeyLocks, keys: readonly Uint8Array[]): boolean {
  const contended = contendedKeys.get(locks);
  return contended !== undefined && keys.some((key) => contended.has(keyId(key)));
}

/** @internal Remembers whether the turn just taken on `keys` waited for runs ahead. */
export function noteTurn(locks: StmKeyLocks, keys: readonly Uint8Array[], waited: boolean): void {
  let contended = contendedKeys.get(locks);
  if (contended === undefined) {
    contended = new Map();
    contendedKeys.set(locks, contended);
  }
  for (const key of keys) {
    const id = keyId(key);
    contended.delete(id);
    if (waited) contended.set(id, true);
  }
  while (contended.size > MAX_CONTENDED_KEYS) {
    contended.delete(contended.keys().next().value as string);
  }
}

/** @internal `keys` without repeats, in byte order: the one order every run locks keys in. */
export function distinctKeys(keys: readonly Uint8Array[]): Uint8Array[] {
  const byId = new Map(keys.map((key) => [keyId(key), key]));
  return [...byId.keys()].sort().map((id) => byId.get(id) as Uint8Array);
}

/** Checks {@link StmContention} and fills in its default. */
export function contentionOf(
  contention: StmContention | undefined,
): Required<StmContention> | undefined {
  if (contention === undefined) return undefined;
  const { locks } = contention;
  if (
    typeof locks?.lock !== 'function' ||
    typeof locks.free !== 'function' ||
    typeof locks.queued !== 'function'
  ) {
    throw new InvalidArgumentError(
      'contention.locks must have lock(), free() and queued() methods',
    );
  }
  const after = contention.afterConflicts ?? DEFAULT_STM_LOCK_AFTER_CONFLICTS;
  if (!Number.isSafeInteger(after) || after < 1) {
    throw new InvalidArgumentError(
      `contention.afterConflicts must be an integer >= 1, got ${String(after)}`,
    );
  }
  return { locks: contention.locks, afterConflicts: after };
}
