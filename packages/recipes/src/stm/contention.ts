// Contention across processes: after repeated conflicts with writers elsewhere, a run locks the
// keys it touches, one lock per key taken in byte order, so runs of every process that do the same
// take turns instead of failing each other's commits (docs/stm.md, "Contention across processes").
import { type Compare, InvalidArgumentError } from '@etcdkit/client';
import { keyId } from './attempt.js';

/**
 * Locks on STM keys shared by every process: {@link StmKeyLocks.lock} holds one lock per key. The
 * recipes' `stmKeyLocks(session)` gives one over {@link Mutex}es in Go's layout.
 */
export interface StmKeyLocks {
  /**
   * Holds a lock on each of `keys` (distinct, in byte order: always lock them in the order given,
   * so two runs never wait for each other's keys), waiting for each in turn; rejects with
   * AbortedError when `signal` aborts, holding none of them then.
   */
  lock(keys: readonly Uint8Array[], signal?: AbortSignal): Promise<StmKeysHeld>;
  /**
   * Txn conditions that hold while no one holds or waits for the lock of any of `keys`: a run
   * not holding them commits only then, so it never overtakes the runs queued for their turn.
   */
  free(keys: readonly Uint8Array[]): Compare[];
}

/** The locks {@link StmKeyLocks.lock} took. */
export interface StmKeysHeld {
  /** Releases every lock taken; idempotent. */
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
  if (typeof locks?.lock !== 'function' || typeof locks.free !== 'function') {
    throw new InvalidArgumentError('contention.locks must have lock() and free() methods');
  }
  const after = contention.afterConflicts ?? DEFAULT_STM_LOCK_AFTER_CONFLICTS;
  if (!Number.isSafeInteger(after) || after < 1) {
    throw new InvalidArgumentError(
      `contention.afterConflicts must be an integer >= 1, got ${String(after)}`,
    );
  }
  return { locks: contention.locks, afterConflicts: after };
}
