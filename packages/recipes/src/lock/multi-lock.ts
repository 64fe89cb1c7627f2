// Several locks taken all-or-nothing (Curator's InterProcessMultiLock): each name is a plain Mutex
// (Go's layout), taken in ONE global order, so two multi-locks never wait on each other in a cycle.
import { type Compare, InvalidArgumentError } from '@etcdkit/client';
import { type LinkedSignal, linkSignals } from '@etcdkit/client/internal';
import { recipeName } from '../recipe-name.js';
import type { Session } from '../session/session.js';
import { type Lock, type LockOptions, Mutex } from './mutex.js';

const encoder = new TextEncoder();

/** The global order of lock names: by their UTF-8 bytes, the order etcd sorts keys in. */
function byBytes(a: string, b: string): number {
  return Buffer.compare(encoder.encode(a), encoder.encode(b));
}

/**
 * A lock over several names at once, taken all-or-nothing: Apache Curator's
 * `InterProcessMultiLock` on etcd (Go's client has none). Each name is a {@link Mutex} in Go's
 * layout (so `etcdctl lock` on one of the names excludes too), and every multi-lock takes its
 * names in one global order, by the UTF-8 bytes of the name: two multi-locks over overlapping
 * names, whatever order they were given in, never hold one name each while waiting for the other
 * (no deadlock). A failure or abort part-way releases the names already taken (in reverse) before
 * it rejects, as Curator's does. Each name keeps its own fencing token.
 *
 * @example
 * ```ts
 * const transfer = new MultiLock(session, ['accounts/alice', 'accounts/bob']);
 * await using held = await transfer.lock({ signal: AbortSignal.timeout(5_000) });
 * console.log(held.fencingToken('accounts/bob'));
 * ```
 */
export class MultiLock {
  /** The names, in the order they are taken. */
  readonly names: readonly string[];

  constructor(
    /** The session every name's key is attached to. */
    readonly session: Session,
    names: readonly string[],
  ) {
    if (!Array.isArray(names) || names.length === 0) {
      throw new InvalidArgumentError('MultiLock: names must be a non-empty array');
    }
    const checked = names.map((name) => recipeName('MultiLock', 'name', name));
    if (new Set(checked).size !== checked.length) {
      throw new InvalidArgumentError('MultiLock: names must not repeat a name');
    }
    this.names = checked.sort(byBytes);
  }

  /**
   * Takes every name, in {@link names} order, waiting for each as {@link Mutex.lock} does.
   * Rejects with the first failure (AbortedError when `signal` aborts, SessionExpiredError...)
   * after releasing the names already taken.
   */
  lock(options: LockOptions = {}): Promise<MultiLockHeld> {
    return this.#take((mutex) => mutex.lock(options));
  }

  /**
   * Takes every name only if none is held by someone else: fails with the first
   * `LockedError`, after releasing the names already taken, leaving nothing behind.
   */
  tryLock(options: LockOptions = {}): Promise<MultiLockHeld> {
    return this.#take((mutex) => mutex.tryLock(options));
  }

  async #take(acquire: (mutex: Mutex) => Promise<Lock>): Promise<MultiLockHeld> {
    const taken: Lock[] = [];
    try {
      for (const name of this.names) taken.push(await acquire(new Mutex(this.session, name)));
    } catch (error) {
      for (const lock of taken.reverse()) {
        await lock.unlock().catch(() => {
          // The failure to take is the one to report; a key not deleted goes with the session.
        });
      }
      throw error;
    }
    return new MultiLockHeld(this.names, taken);
  }
}

/**
 * The names of a {@link MultiLock}, all held. Unlock them together ({@link unlock}, or
 * `await using`); fence each name's resource with its own {@link fencingToken}.
 */
export class MultiLockHeld implements AsyncDisposable {
  /** Each name's held lock. */
  readonly locks: ReadonlyMap<string, Lock>;
  readonly #lost: LinkedSignal;

  /** @internal Made by {@link MultiLock.lock}. */
  constructor(names: readonly string[], locks: readonly Lock[]) {
    this.locks = new Map(names.map((name, i) => [name, locks[i] as Lock]));
    this.#lost = linkSignals(...locks.map((lock) => lock.signal));
  }

  /** The fencing token of `name` (its key's create revision); InvalidArgumentError for another name. */
  fencingToken(name: string): bigint {
    const lock = this.locks.get(name);
    if (lock === undefined)
      throw new InvalidArgumentError(`MultiLock: ${name} is not one of its names`);
    return lock.fencingToken;
  }

  /** Aborts as soon as ANY of the names may be lost (see `Hold.signal`); its reason is that lock's. */
  get signal(): AbortSignal {
    return this.#lost.signal;
  }

  /** Every name's ownership compare, for a txn that must apply only while all are held. */
  isOwner(): Compare[] {
    return [...this.locks.values()].map((lock) => lock.isOwner());
  }

  /**
   * Unlocks every name (all at once, each guarded by its own create revision). Rejects with the
   * first failure once every unlock has been tried (LockLostError for a name already lost).
   */
  async unlock(): Promise<void> {
    const results = await Promise.allSettled([...this.locks.values()].map((lock) => lock.unlock()));
    this.#lost.release();
    const failed = results.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  /**
   * Unlocks every name still held, for `await using`, as each lock's own disposal does: a name
   * this process already ended is skipped, and the first name found lost is thrown (LockLostError)
   * once every name has been tried.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    const results = await Promise.allSettled(
      [...this.locks.values()].map((lock) => lock[Symbol.asyncDispose]()),
    );
    this.#lost.release();
    const failed = results.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }
}
