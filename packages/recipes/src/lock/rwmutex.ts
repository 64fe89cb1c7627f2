// A readers-writer lock in the key layout of Go's experimental recipes.RWMutex, so Go readers and
// writers share it; a reader waits only for older writers, a writer for every older key.
import { acquireHold, createUniqueKey } from '../line/place.js';
import { recipeName } from '../recipe-name.js';
import type { Session } from '../session/session.js';
import type { WaitOptions } from '../wait.js';
import { Lock } from './mutex.js';

/** Options of {@link RWMutex.readLock} and {@link RWMutex.writeLock}. */
export interface RWLockOptions extends WaitOptions {}

/**
 * A readers-writer lock named by a key prefix: many readers at once, or one writer. Fair: locks
 * are granted in create-revision order, so a waiting writer holds back readers that came after it.
 *
 * Each acquisition creates `name/read/<unique>` or `name/write/<unique>` (decimal nanoseconds, as
 * Go's recipe names them), attached to the session's lease. A reader waits for the newest older
 * writer key to go (then looks again); a writer for the newest older key of either kind. Each
 * waiter watches one key. Locks of one session are independent (a session can hold several read
 * locks), and the same loss semantics as the {@link Mutex} apply: fence what the lock protects.
 *
 * @example
 * ```ts
 * const rw = new RWMutex(session, 'locks/catalog');
 * await using read = await rw.readLock({ signal });
 * ```
 */
export class RWMutex {
  /** The lock's key prefix: the name followed by `/`. */
  readonly prefix: string;

  constructor(
    /** The session whose lease the lock keys are attached to. */
    readonly session: Session,
    /** The lock's name (a non-empty key prefix, without the trailing `/`). */
    readonly name: string,
  ) {
    this.prefix = `${recipeName('RWMutex', 'name', name)}/`;
  }

  /**
   * Acquires a shared (read) lock: waits until no writer that queued before it is left. Fails
   * like {@link Mutex.lock} (AbortedError, SessionExpiredError...), deleting its key.
   */
  readLock(options: RWLockOptions = {}): Promise<Lock> {
    return this.#lock(`${this.prefix}read/`, `${this.prefix}write/`, options);
  }

  /**
   * Acquires the exclusive (write) lock: waits until no key of either kind that queued before it
   * is left. Fails like {@link Mutex.lock}, deleting its key.
   */
  writeLock(options: RWLockOptions = {}): Promise<Lock> {
    return this.#lock(`${this.prefix}write/`, this.prefix, options);
  }

  #lock(queue: string, blockers: string, options: RWLockOptions): Promise<Lock> {
    const { session } = this;
    return acquireHold({
      session,
      signal: options.signal,
      what: 'lock',
      blockers,
      // Unique keys: no other call shares one.
      take: () => createUniqueKey(session, queue, blockers),
      wrap: (holding) => new Lock(session, holding),
    });
  }
}
