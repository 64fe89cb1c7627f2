// Typed failures of the recipes, each with a stable `code`, so callers tell "held by someone else",
// "lost" and "session gone" apart without parsing; etcd call failures pass through unchanged.
import { AbortedError, EtcdError, GrpcStatus } from '@etcdkit/client';

/**
 * Base class of every error a recipe reports itself (the client's EtcdErrors pass through as they
 * are). It is an EtcdError too, so one `instanceof EtcdError` check covers everything the SDK
 * throws; `code` is stable across releases; recipes in their own modules subclass this with their
 * own code. `grpcStatus` is FailedPrecondition: the failure is a state of the recipe, not a gRPC
 * answer.
 */
export class RecipeError<C extends string = string> extends EtcdError<C> {
  /** `cause` is the failure behind this one, when there is one. */
  constructor(code: C, message: string, options?: { readonly cause?: unknown }) {
    super(code, GrpcStatus.FailedPrecondition, message, { cause: options?.cause });
  }
}

/**
 * The session behind a recipe can no longer vouch for its keys: its lease expired or was revoked,
 * its keepalive stopped, or the recipe's own key was deleted while it waited. Whatever was being
 * acquired was not acquired (and the recipe deleted its key if it still could).
 */
export class SessionExpiredError extends RecipeError<'SESSION_EXPIRED'> {
  /** The recipe's own key, when the failure was noticed on it. */
  readonly key: string | undefined;

  /** `key` is the recipe's own key when its loss was noticed on it. */
  constructor(message: string, options?: { readonly key?: string; readonly cause?: unknown }) {
    super('SESSION_EXPIRED', message, options);
    this.key = options?.key;
  }
}

/** `tryLock()` (or `tryAcquire()`) found the lock held by someone else. Nothing was left behind. */
export class LockedError extends RecipeError<'LOCKED'> {
  /** The key of the current holder. */
  readonly holderKey: string;

  /** `holderKey` is the key of the current holder. */
  constructor(name: string, holderKey: string) {
    super('LOCKED', `${name} is held by ${holderKey}`);
    this.holderKey = holderKey;
  }
}

/**
 * The lock (or permit, or leadership) is no longer held: its key was deleted (unlocked elsewhere,
 * lease expired or revoked) or re-created, so a txn guarded by its ownership compare did not
 * apply, an unlock found nothing of its own to delete, or the handle's signal fired.
 */
export class LockLostError extends RecipeError<'LOCK_LOST'> {
  /** The key that held the lock. */
  readonly key: string;
  /** Its create revision while held: the fencing token that no longer owns anything. */
  readonly fencingToken: bigint;

  /** `key` and `fencingToken` identify the lost hold. */
  constructor(key: string, fencingToken: bigint, message?: string, options?: { cause?: unknown }) {
    super(
      'LOCK_LOST',
      message ?? `${key} (fencing token ${fencingToken}) is no longer held`,
      options,
    );
    this.key = key;
    this.fencingToken = fencingToken;
  }
}

/**
 * `unlock()` on a hold this process already ended: unlocked through this handle, or released by
 * closing (or orphaning) its session or its client. Nothing was deleted. Also the reason of the
 * hold's signal after such an end.
 */
export class LockNotHeldError extends RecipeError<'LOCK_NOT_HELD'> {
  /** The key the handle held. */
  readonly key: string;

  /** `key` is the key the handle held; `message` says how it was released when not by unlock. */
  constructor(key: string, message?: string, options?: { readonly cause?: unknown }) {
    super('LOCK_NOT_HELD', message ?? `${key} was already unlocked through this handle`, options);
    this.key = key;
  }
}

/**
 * A leadership was lost while held: its key was deleted (lease expired or revoked elsewhere, or
 * deleted) or re-created, or its session ended without this process closing it. The reason of
 * `leadership.signal` then, what a guarded txn of the leadership rejects with, and what the end of
 * an `await using` block over it throws. (The election's own LockLostError.)
 */
export class LeadershipLostError extends RecipeError<'LEADERSHIP_LOST'> {
  /** The leader key. */
  readonly key: string;
  /** Its create revision while leading: the epoch that no longer leads. */
  readonly epoch: bigint;

  /** `key` and `epoch` identify the lost leadership. */
  constructor(key: string, epoch: bigint, message?: string, options?: { cause?: unknown }) {
    super(
      'LEADERSHIP_LOST',
      message ?? `leadership ${key} (epoch ${epoch}) is no longer held`,
      options,
    );
    this.key = key;
    this.epoch = epoch;
  }
}

/**
 * A `lock()` (or `tryLock()`, `withLock()`) would wait for its own hold, forever: called inside the
 * `withLock` of the same lock on the same session, or on a Mutex object whose own `lock()` or
 * `tryLock()` still holds or acquires. Nothing was queued.
 */
export class NestedLockError extends RecipeError<'NESTED_LOCK'> {
  /** The key the enclosing `withLock`, or the object's hold, holds (or queues with). */
  readonly key: string;

  /**
   * `name` is the lock's name, `key` the key held; `within` says where: the async context of a
   * `withLock` (the default), or the Mutex object's own hold.
   */
  constructor(name: string, key: string, within: 'withLock' | 'object' = 'withLock') {
    super(
      'NESTED_LOCK',
      within === 'withLock'
        ? `${name}: lock() inside withLock of the same lock and session would wait for its own hold (${key}); use the lock withLock gave you`
        : `${name}: this Mutex object's lock() still holds or acquires ${key}; another lock() on it would wait for that hold: unlock it first, or give each concurrent caller its own Mutex object (they take turns) or use withLock`,
    );
    this.key = key;
  }
}

// The election errors are the client's own classes (also what etcd's Election service answers),
// so one `instanceof` works whichever side, recipe or server service, ran the election.
export { ElectionNoLeaderError, ElectionNotLeaderError } from '@etcdkit/client';

/**
 * A fenced write carried a token lower than the highest the resource has accepted: a newer holder
 * exists, so this writer's lock is stale. Nothing was written.
 */
export class StaleFencingTokenError extends RecipeError<'STALE_FENCING_TOKEN'> {
  /** The token the write carried. */
  readonly token: bigint;
  /** The highest token the resource has accepted. */
  readonly highestToken: bigint;

  /** `token` was refused because `highestToken` was accepted before. */
  constructor(resource: string, token: bigint, highestToken: bigint) {
    super(
      'STALE_FENCING_TOKEN',
      `${resource} refused fencing token ${token}: it has accepted ${highestToken}`,
    );
    this.token = token;
    this.highestToken = highestToken;
  }
}

/**
 * `FencedResource.update()` lost to concurrent writes of the resource (or of its token) on every
 * one of its attempts. Nothing was written; read again and decide.
 */
export class FencedUpdateConflictError extends RecipeError<'FENCED_UPDATE_CONFLICT'> {
  /** The resource's key. */
  readonly resource: string;
  /** How many read-and-write attempts lost (the `maxAttempts` option). */
  readonly attempts: number;

  /** The update of `resource` lost `attempts` times in a row. */
  constructor(resource: string, attempts: number) {
    super(
      'FENCED_UPDATE_CONFLICT',
      `${resource}: the update lost to concurrent writes ${attempts} times`,
    );
    this.resource = resource;
    this.attempts = attempts;
  }
}

/** Throws the client's AbortedError when `signal` has aborted: how every recipe refuses to go on. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
}

/**
 * @internal The reason the recipes' own stops abort with (a wait settled, a hold ended): never seen
 * outside, and a string, so that no DOMException is built for every acquisition.
 */
export const STOPPED = 'stopped by the recipe';
