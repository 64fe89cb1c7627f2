// A distributed mutex with the key layout of Go's concurrency.Mutex (so Go services and
// `etcdctl lock` contend on the same lock), FIFO by create revision, and without Go's known bugs.

import { AsyncLocalStorage } from 'node:async_hooks';
import { AbortedError, InvalidArgumentError } from '@etcdkit/client';
import { KeyedSlot } from '@etcdkit/client/internal';
import { LockedError, NestedLockError } from '../errors.js';
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
 * The lock excludes the calls of one process too: a `lock()` on a session whose key holds or waits
 * for the lock through another Mutex object, or through a `withLock` of this one, waits until that
 * hold ends (in call order), then queues with a new incarnation of the key and gets its own fencing
 * token. (Go's Mutex returns at once there, with the same key, and one unlock frees the lock for
 * both.) One Mutex object gives out one hold at a time: its `lock()` or `tryLock()` while its own
 * earlier `lock()` or `tryLock()` still holds or acquires fails at once with {@link NestedLockError},
 * as that caller would otherwise wait for itself. Concurrent callers use `withLock` on a shared
 * object, or an object each.
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
  /** A lock() or tryLock() of this object holds or is acquiring (see {@link lock}). */
  #handedOut = false;

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
   * revision) unless another lock call of this process still uses it. Fails at once with
   * {@link NestedLockError}, sending nothing, inside this lock's `withLock` or while a `lock()` or
   * `tryLock()` of this object still holds or acquires.
   */
  async lock(options: LockOptions = {}): Promise<Lock> {
    return this.#handOut(options, false);
  }

  /**
   * Acquires the lock only if no one else holds it; otherwise deletes the key it queued with and
   * fails with {@link LockedError}, leaving nothing behind. While another call of this process
   * holds or waits for the lock with this session's key, it fails at once, with that key as the
   * holder's; while this object's own `lock()` or `tryLock()` does, with {@link NestedLockError}.
   */
  async tryLock(options: LockOptions = {}): Promise<Lock> {
    return this.#handOut(options, true);
  }

  /**
   * Runs `fn` holding the lock, then ends the hold, whether `fn` succeeds or throws: exactly
   * `{ await using lock = await mutex.lock(options); return await fn(lock); }`. `fn` gets the
   * {@link Lock}: pass `lock.signal` to work that must stop when the lock may be lost, and guard
   * writes with `lock.txn()`.
   *
   * When the lock was lost before the end, this rejects with LockLostError, since `fn` did not
   * run under the lock to the end; when `fn` threw too, with a SuppressedError whose `error` is the
   * LockLostError and `suppressed` fn's error, as `await using` reports both. A hold this process
   * ended itself (its session or client closed meanwhile) is no loss. A `lock()` of the same lock
   * and session inside `fn` fails at once with {@link NestedLockError}, as does a `withLock` of
   * this object while its own `lock()` or `tryLock()` holds or acquires. Concurrent `withLock` calls
   * on one object take turns in call order.
   */
  async withLock<T>(fn: (lock: Lock) => Promise<T> | T, options: LockOptions = {}): Promise<T> {
    this.#refuseHandedOut();
    const lock = await this.#acquire(options, false);
    let result: T;
    try {
      const outer = heldInContext.getStore() ?? [];
      result = await heldInContext.run([...outer, lock], () => fn(lock));
    } catch (error) {
      try {
        await lock.end();
      } catch (endError) {
        throw suppressed(endError, error);
      }
      throw error;
    }
    await lock.end();
    return result;
  }

  /**
   * A lock() or tryLock() of this object: one at a time, from its start until the Lock it gave
   * ends. A second one (or a withLock) while it holds or acquires would queue behind its own hold,
   * which the caller ends only after it returns (Go's Mutex returns at once there, sharing the key).
   */
  async #handOut(options: LockOptions, tryOnly: boolean): Promise<Lock> {
    this.#refuseHandedOut();
    this.#handedOut = true;
    let lock: Lock;
    try {
      lock = await this.#acquire(options, tryOnly);
    } catch (error) {
      this.#handedOut = false;
      throw error;
    }
    const free = () => {
      this.#handedOut = false;
    };
    if (lock.ended.aborted) free();
    else lock.ended.addEventListener('abort', free, { once: true });
    return lock;
  }

  #refuseHandedOut(): void {
    if (this.#handedOut) throw new NestedLockError(this.name, this.key, 'object');
  }

  async #acquire(options: LockOptions, tryOnly: boolean): Promise<Lock> {
    const { session, prefix } = this;
    const key = this.key;
    const delayMs = options.lockDelayMs ?? 0;
    if (typeof delayMs !== 'number' || !(delayMs >= 0)) {
      throw new InvalidArgumentError('Mutex: lockDelayMs must be a number of milliseconds >= 0');
    }
    const enclosing = heldInContext
      .getStore()
      ?.find((held) => held.session === session && held.key === key && !held.ended.aborted);
    if (enclosing !== undefined) throw new NestedLockError(this.name, key);
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
        // The same key every cycle: one watch of it serves the session's holds.
        keepLossWatch: true,
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
        if (lock.ended.aborted) throw lock.signal.reason;
      } catch (error) {
        await lock.unlock().catch(() => {
          // The failure is the one to report; the key goes with the session at the latest.
        });
        giveBack();
        throw error;
      }
    }
    // The next call gets the key when this hold ends: unlocked, or lost.
    if (lock.ended.aborted) giveBack();
    else lock.ended.addEventListener('abort', giveBack, { once: true });
    return lock;
  }
}

/**
 * A held lock, from {@link Mutex.lock} or the {@link RWMutex}. Unlock it when done
 * ({@link unlock}, or `await using`); guard what it protects with {@link Hold.txn} or
 * {@link Hold.fencingToken}.
 *
 * One rule on every path: a lock lost while held (see {@link Hold.signal}) is reported as
 * LockLostError by its signal, by `unlock()`, by `withLock` and by the end of an `await using`
 * block; a lock this process ended itself (unlocked, or its session or client closed) is no loss,
 * and ending it again does nothing (an explicit `unlock()` says LockNotHeldError).
 */
export class Lock extends Hold implements AsyncDisposable {
  /**
   * Releases the lock: deletes its key only if it is still this incarnation (Go deletes
   * unconditionally; a retried unlock could then delete a newer holder's key).
   * Rejects with LockNotHeldError when this process already ended it (unlocked through this
   * handle, or its session or client closed), with LockLostError when the key was already gone or
   * re-created (nothing deleted). A call that failed otherwise can be retried.
   */
  async unlock(): Promise<void> {
    // Ended by this process's own close: the signal's reason says how (a LockNotHeldError).
    if (!this.holding.released && this.endedHere) throw this.signal.reason;
    await this.holding.release();
  }

  /**
   * Ends the lock at the end of an `await using` block: unlocks it; does nothing when this
   * process already ended it; throws LockLostError when it was lost (see the class doc).
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.end();
  }

  /** @internal For {@link Mutex.withLock}: the end of the hold, as disposal does. */
  override end(): Promise<void> {
    return super.end();
  }
}

/** The locks `withLock` holds in the current async context (its `fn` and what that calls). */
const heldInContext = new AsyncLocalStorage<readonly Lock[]>();

/** What JavaScript's SuppressedError is, also where the runtime has none (Node 20). */
interface Suppressed extends Error {
  readonly error: unknown;
  readonly suppressed: unknown;
}

/**
 * The error `await using` throws when disposal fails after the block threw: the runtime's
 * SuppressedError, or one of the same shape (as TypeScript's and esbuild's helpers make it).
 */
function suppressed(error: unknown, hidden: unknown): Suppressed {
  const message = 'An error was suppressed during disposal.';
  const native = (
    globalThis as { SuppressedError?: new (e: unknown, s: unknown, m: string) => Suppressed }
  ).SuppressedError;
  if (native !== undefined) return new native(error, hidden, message);
  return Object.assign(new Error(message), { name: 'SuppressedError', error, suppressed: hidden });
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

const KEY_CALLS = new KeyedSlot(() => new KeyCalls());

function callsOf(session: Session, key: string): KeyCalls {
  return session.slots.keyed(KEY_CALLS, key);
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
    session.slots.get(KEY_CALLS.values).delete(key);
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
