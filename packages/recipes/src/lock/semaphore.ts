// A counting semaphore (not in Go's recipes): up to N holders at once, queued like the mutex. The
// holders are the N keys with the oldest create revisions under the prefix.
import { InvalidArgumentError } from '@etcdkit/client';
import { LockedError } from '../errors.js';
import { acquireHold, createUniqueKey, type Holding } from '../line/place.js';
import { recipeName } from '../recipe-name.js';
import type { Session } from '../session/session.js';
import type { WaitOptions } from '../wait.js';
import { Hold } from './hold.js';

/** Options of {@link Semaphore.acquire}. */
export interface AcquireOptions extends WaitOptions {}

/**
 * A semaphore named by a key prefix: at most `permits` holders at once, granted in
 * create-revision order (FIFO). Every participant must use the same `permits`.
 *
 * Each acquisition creates `name/<unique>` (decimal nanoseconds) attached to the session's lease;
 * it holds a permit while fewer than `permits` keys under the prefix are older. A waiter watches
 * the keys ahead of it and gets in as soon as enough of them are gone, whichever they are. The
 * same loss semantics as the {@link Mutex} apply: the permit's signal fires when it may be lost.
 *
 * @example
 * ```ts
 * const downloads = new Semaphore(session, 'limits/downloads', 4);
 * await using permit = await downloads.acquire({ signal });
 * ```
 */
export class Semaphore {
  /** The semaphore's key prefix: the name followed by `/`. */
  readonly prefix: string;

  constructor(
    /** The session whose lease the permit keys are attached to. */
    readonly session: Session,
    /** The semaphore's name (a non-empty key prefix, without the trailing `/`). */
    readonly name: string,
    /** How many holders it admits at once (a positive integer). */
    readonly permits: number,
  ) {
    if (!Number.isSafeInteger(permits) || permits < 1) {
      throw new InvalidArgumentError(`permits must be a positive integer, got ${String(permits)}`);
    }
    this.prefix = `${recipeName('Semaphore', 'name', name)}/`;
  }

  /**
   * Acquires a permit, waiting for holders ahead of it to release. Fails like
   * {@link Mutex.lock} (AbortedError, SessionExpiredError...), deleting its key.
   */
  async acquire(options: AcquireOptions = {}): Promise<Permit> {
    return this.#acquire(options, false);
  }

  /**
   * Acquires a permit only if one is free now; otherwise deletes its key and fails with
   * {@link LockedError}.
   */
  async tryAcquire(options: AcquireOptions = {}): Promise<Permit> {
    return this.#acquire(options, true);
  }

  #acquire(options: AcquireOptions, tryOnly: boolean): Promise<Permit> {
    const { session, prefix, permits } = this;
    return acquireHold({
      session,
      signal: options.signal,
      what: 'permit',
      blockers: prefix,
      slots: permits,
      take: () => createUniqueKey(session, prefix),
      refuse: async (entry) => {
        if (!tryOnly) return;
        const ahead = await session.etcd.range({
          prefix,
          maxCreateRevision: entry.createRevision - 1n,
          limit: permits,
          keysOnly: true,
        });
        if (ahead.kvs.length >= permits) {
          throw new LockedError(this.name, ahead.kvs.map((kv) => kv.keyText()).join(', '));
        }
      },
      wrap: (holding) => new Permit(this, holding),
    });
  }
}

/**
 * A permit of a {@link Semaphore}. Release it when done ({@link release}, or `await using`). Its
 * fencing token is unique but, unlike a lock's, not exclusive: up to `permits` holders act at
 * once.
 */
export class Permit extends Hold implements AsyncDisposable {
  /** @internal Made by {@link Semaphore.acquire}. */
  constructor(
    /** The semaphore this permit belongs to. */
    readonly semaphore: Semaphore,
    holding: Holding,
  ) {
    super(semaphore.session, holding);
  }

  /**
   * Gives the permit back: deletes its key only if it is still this incarnation. Rejects with
   * LockNotHeldError when this process already ended it (released through this handle, or its
   * session or client closed), with LockLostError when the key was already gone (nothing deleted).
   */
  async release(): Promise<void> {
    // Ended by this process's own close: the signal's reason says how (a LockNotHeldError).
    if (!this.holding.released && this.endedHere) throw this.signal.reason;
    await this.holding.release();
  }

  /**
   * Gives the permit back at the end of an `await using` block, by the rule locks follow: nothing
   * when this process already ended it; LockLostError when it was lost while held.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.end();
  }
}
