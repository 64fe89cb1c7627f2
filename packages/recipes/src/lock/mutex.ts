// A distributed mutex with the key layout of Go's concurrency.Mutex (so Go services and
// `etcdctl lock` contend on the same lock), FIFO by create revision, and without Go's known bugs.

import { AbortedError, InvalidArgumentError } from '@etcdkit/client';
import { LockedError } from '../errors.js';
import { acquireHold, acquireSessionKey } from '../line/place.js';
import { recipeName } from '../recipe-name.js';
import type { Session } from '../session/session.js';
import type { WaitOptions } from '../wait.js';
import { Hold } from './hold.js';
import { lockDelay, tookOverFromLostHolder } from './lock-delay.js';

/** Options of {@link Mutex.lock} and {@link Mutex.withLock}. */
export interface LockOptions extends WaitOptions {
  /**
   * Consul's lock-delay, in milliseconds: when this call took over from a holder (or waiters ahead
   * of it) whose lease ended rather than one that unlocked, it holds the lock this long before it
   * resolves, so the lost holder's stragglers stop first. A taker that found the lock free is not
   * delayed. Fencing tokens stay the guarantee (docs/locks-and-fencing.md, "Lock-delay"). Default 0.
   */
  readonly lockDelayMs?: number;
}

/**
 * A mutual-exclusion lock named by a key prefix, held by a {@link Session}.
 *
 * Each session queues under `name + "/"` with ONE key, `name/<lease id in lowercase hex>`, empty
 * and attached to the session's lease (Go's layout, so `etcdctl lock name` and Go's
 * `concurrency.NewMutex(s, name)` contend on the same lock). The holder is the key with the
 * oldest create revision; the others wait in create-revision order (FIFO), each watching only the
 * key just ahead of it.
 *
 * The lock excludes the calls of one process too, whatever Mutex object they use: a second
 * `lock()` on a session whose key holds or waits for the lock waits until that hold ends
 * (in call order), then queues with a new incarnation of the key and gets its own fencing token.
 * (Go's Mutex returns at once there, with the same key, and one unlock frees the lock for both.)
 *
 * A lock is only as safe as what it protects checks: a paused process can keep running after its
 * lease expired and another holder took over. Guard writes with
 * {@link Hold.txn} / {@link Hold.isOwner}, or pass {@link Hold.fencingToken} to the resource.
 *
 * @example
 * ```ts
 * const mutex = new Mutex(session, 'locks/orders');
 * await using lock = await mutex.lock({ signal: AbortSignal.timeout(5_000) });
 * await lock.txn().then(op.put('orders/42', 'paid')).commit();
 * ```
 */
export class Mutex {
  /** The queue's key prefix: the name followed by `/`. */
  readonly prefix: string;

  constructor(
    /** The session whose lease the lock's key is attached to. */
    readonly session: Session,
    /** The lock's name (a non-empty key prefix, without the trailing `/` Go adds too). */
    readonly name: string,
  ) {
    this.prefix = `${recipeName('Mutex', 'name', name)}/`;
  }

  /** The key this session queues and holds the lock with. */
  get key(): string {
    return `${this.prefix}${this.session.leaseId.toString(16)}`;
  }

  /**
   * Acquires the lock, waiting for the holders and waiters ahead of this session. Resolves with
   * the held {@link Lock}.
   *
   * Fails with the client's AbortedError when `signal` aborts (use `AbortSignal.timeout(ms)` for a
   * timeout), with SessionExpiredError when the session ends or this session's key disappears
   * while waiting (never success after that), or with the error of a
   * call. In every failure the key this call put in the queue is deleted (guarded by its create
   * revision) unless another lock call of this process still uses it.
   */
  async lock(options: LockOptions = {}): Promise<Lock> {
    return this.#acquire(options, false);
  }

  /**
   * Acquires the lock only if no one else holds it; otherwise deletes the key it queued with and
   * fails with {@link LockedError}, leaving nothing behind. While another call of this process
   * holds or waits for the lock with this session's key, it fails at once, with that key as the
   * holder's.
   */
  async tryLock(options: LockOptions = {}): Promise<Lock> {
    return this.#acquire(options, true);
  }

  /**
   * Runs `fn` holding the lock, then unlocks, whether `fn` succeeds or throws. `fn` gets the
   * {@link Lock}: pass `lock.signal` to work that must stop when the lock may be lost, and guard
   * writes with `lock.txn()`. If `fn` succeeded but the lock was lost before the unlock, this
   * rejects with LockLostError, since `fn` did not run under the lock to the end.
   */
  async withLock<T>(fn: (lock: Lock) => Promise<T> | T, options: LockOptions = {}): Promise<T> {
    const lock = await this.lock(options);
    let result: T;
    try {
      result = await fn(lock);
    } catch (error) {
      await lock.unlock().catch(() => {
        // fn's failure is the one to report; the key goes with the session at the latest.
      });
      throw error;
    }
    await lock.unlock();
    return result;
  }

  async #acquire(options: LockOptions, tryOnly: boolean): Promise<Lock> {
    const { session, prefix } = this;
    const key = this.key;
    const delayMs = options.lockDelayMs ?? 0;
    if (typeof delayMs !== 'number' || !(delayMs >= 0)) {
      throw new InvalidArgumentError('Mutex: lockDelayMs must be a number of milliseconds >= 0');
    }
    // One call of this process at a time holds or waits with the session's key (below).
    const giveBack = tryOnly
      ? takeKeyNow(session, key)
      : await takeKeyInCallOrder(session, key, options.signal);
    if (giveBack === undefined) throw new LockedError(this.name, key);
    let lock: Lock;
    try {
      lock = await acquireHold({
        session,
        signal: options.signal,
        what: 'lock',
        blockers: prefix,
        take: () => acquireSessionKey(session, prefix, ''),
        atHead: (entry) => entry.oldest?.createRevision === entry.createRevision,
        refuse: (entry) => {
          if (tryOnly) {
            throw new LockedError(this.name, entry.oldest?.keyText() ?? '(unknown holder)');
          }
        },
        wrap: (holding) => new Lock(session, holding),
      });
    } catch (error) {
      giveBack();
      throw error;
    }
    if (delayMs > 0) {
      try {
        if (await tookOverFromLostHolder(session, prefix, lock, options.signal)) {
          await lockDelay(delayMs, options.signal);
        }
        if (lock.signal.aborted) throw lock.signal.reason;
      } catch (error) {
        await lock.unlock().catch(() => {
          // The failure is the one to report; the key goes with the session at the latest.
        });
        giveBack();
        throw error;
      }
    }
    // The next call gets the key when this hold ends: unlocked, or lost.
    if (lock.signal.aborted) giveBack();
    else lock.signal.addEventListener('abort', giveBack, { once: true });
    return lock;
  }
}

/**
 * A held lock, from {@link Mutex.lock} or the {@link RWMutex}. Unlock it when done
 * ({@link unlock}, or `await using`); guard what it protects with {@link Hold.txn} or
 * {@link Hold.fencingToken}.
 */
export class Lock extends Hold implements AsyncDisposable {
  /**
   * Releases the lock: deletes its key only if it is still this incarnation (Go deletes
   * unconditionally; a retried unlock could then delete a newer holder's key).
   * Rejects with LockNotHeldError when already unlocked through this handle, with LockLostError
   * when the key was already gone or re-created (nothing deleted). A failed call can be retried.
   */
  async unlock(): Promise<void> {
    await this.holding.release();
  }

  /** Unlocks, for `await using`; a lock already unlocked or lost is not an error here. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.holding.released) return;
    try {
      await this.unlock();
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'LOCK_LOST') throw error;
    }
  }
}

// The lock calls of one process with one session's mutex key take that key in call order here,
// before they queue in etcd. Go's layout gives a session ONE key per lock name, so two calls of a
// session cannot both queue with it and still exclude each other: Go's Mutex lets both "hold" (one
// unlock then frees the lock under the other). Here the second call waits for the first one's hold
// to end, then queues with a new incarnation of the key, so it gets a fencing token of its own.
/** One waiting call: resumed with the key (its signal's abort takes it out of the wait). */
interface WaitingCall {
  readonly take: () => void;
}

/** The calls of one session on one key: whether one has the key, and the others in call order. */
class KeyCalls {
  busy = false;
  readonly waiting: WaitingCall[] = [];
}

const bySession = new WeakMap<Session, Map<string, KeyCalls>>();

function callsOf(session: Session, key: string): KeyCalls {
  let byKey = bySession.get(session);
  if (byKey === undefined) {
    byKey = new Map();
    bySession.set(session, byKey);
  }
  let calls = byKey.get(key);
  if (calls === undefined) {
    calls = new KeyCalls();
    byKey.set(key, calls);
  }
  return calls;
}

/** Gives the key back: the next waiting call gets it (once; later calls do nothing). */
type GiveKeyBack = () => void;

function giverBack(session: Session, key: string, calls: KeyCalls): GiveKeyBack {
  let passed = false;
  return () => {
    if (passed) return;
    passed = true;
    const next = calls.waiting.shift();
    if (next !== undefined) {
      next.take();
      return;
    }
    calls.busy = false;
    bySession.get(session)?.delete(key);
  };
}

/**
 * The key for a call of `session` on `key` now, or undefined when another call of this process
 * has it (holds the lock with this key, or waits for it).
 */
function takeKeyNow(session: Session, key: string): GiveKeyBack | undefined {
  return claim(session, key, callsOf(session, key));
}

/** The key, if no call has it. */
function claim(session: Session, key: string, calls: KeyCalls): GiveKeyBack | undefined {
  if (calls.busy) return undefined;
  calls.busy = true;
  return giverBack(session, key, calls);
}

/**
 * Waits until no earlier call of this process on `session`'s `key` is left, in call order.
 * Rejects with AbortedError when `signal` aborts first (the call then stops waiting).
 */
function takeKeyInCallOrder(
  session: Session,
  key: string,
  signal: AbortSignal | undefined,
): Promise<GiveKeyBack> {
  if (signal?.aborted) return Promise.reject(new AbortedError({ cause: signal.reason }));
  const calls = callsOf(session, key);
  const now = claim(session, key, calls);
  if (now !== undefined) return Promise.resolve(now);
  return new Promise<GiveKeyBack>((resolve, reject) => {
    const onAbort = () => {
      const at = calls.waiting.indexOf(waiter);
      if (at >= 0) calls.waiting.splice(at, 1);
      reject(new AbortedError({ cause: signal?.reason }));
    };
    const waiter: WaitingCall = {
      take: () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(giverBack(session, key, calls));
      },
    };
    calls.waiting.push(waiter);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
