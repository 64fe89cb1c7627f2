// The server-side Lock service (`etcd.lock`): the server runs the mutex, one call until held; Go's
// key layout, so it contends with recipes' Mutex, Go services and `etcdctl lock`.

import type { Bytes } from '../bytes.js';
import { plainBytes } from '../bytes.js';
import type { CallOptions, Rpc } from '../connection/types.js';
import { v3lockpb_Lock as methods } from '../generated/methods.js';
import {
  type Acknowledged,
  acknowledged,
  type ResponseHeader,
  toResponseHeader,
} from '../header.js';
import { jsonReady } from '../json.js';
import { bytesArg, type LeaseRef, leaseArg, objectArg } from '../validate.js';
import { withServiceAnswers } from './service-answers.js';

/** Options of {@link LockClient.lock}. */
export interface LockCallOptions extends CallOptions {
  /**
   * The lease the lock's key is attached to: the lock is released when the lease expires or is
   * revoked, so keep it alive while holding the lock (`lease.keepAlive()`). One lease holds one
   * key per lock name: locking again with the same lease returns the same key at once.
   *
   * Without it the server grants a fresh lease of 60 s that nothing keeps alive, so the lock is
   * released a minute later at the latest, and only {@link LockClient.unlock} releases it sooner.
   */
  readonly lease?: LeaseRef;
  /**
   * Deadline in ms. Default: none, unlike other calls, since a lock may be held by others for a
   * long time; pass `signal` (for example `AbortSignal.timeout(ms)`) to give up.
   */
  readonly timeoutMs?: number;
}

/** A lock acquired through {@link LockClient.lock}. */
export interface LockAcquired {
  /**
   * The key that holds the lock, `name/<lease id in lowercase hex>` (see {@link lockKey}). It
   * exists exactly while the lock is held: release it with {@link LockClient.unlock}, or by
   * revoking the lease. Its create revision (read the key) is a fencing token: it grows with
   * every new holder.
   */
  readonly key: Uint8Array;
  /** The header of the request that found the lock free: `header.revision` is when it was held. */
  readonly header: ResponseHeader;
}

/**
 * The Lock service of the server (etcd's v3lock): the server queues the caller's key under the
 * lock's name and answers once every earlier key is gone. Waiters are served in the order they
 * queued (FIFO by create revision).
 *
 * This is the server-side lock, one call per acquire. The client-side `Mutex` of
 * `@etcdkit/recipes` runs the same algorithm from the client and adds what a single call cannot:
 * a session that keeps the lease alive, a signal when ownership may be lost, guarded unlock and
 * fencing helpers. Both use the same keys and exclude each other (and Go services, and
 * `etcdctl lock`).
 *
 * A lock alone does not make a critical section safe: a paused process can go on after its lease
 * expired and another holder took over. Guard writes with the key's create revision (fencing).
 *
 * @example
 * ```ts
 * const lease = await etcd.lease.grant(10, { keepAlive: true });
 * const { key } = await etcd.lock.lock('locks/orders', { lease, signal: AbortSignal.timeout(5_000) });
 * try {
 *   // ... work while holding the lock ...
 * } finally {
 *   await etcd.lock.unlock(key);
 * }
 * ```
 */
export class LockClient {
  /** The connection calls go through. */
  readonly #rpc: Rpc;

  /** The Lock service over a connection (or any {@link Rpc}); most programs use `etcd.lock`. */
  constructor(rpc: Rpc) {
    this.#rpc = rpc;
  }

  /**
   * Acquires the lock `name`, waiting while others hold it or queued before. Resolves with the
   * key that holds it. Lock names are keys of the whole store (namespaces do not apply).
   *
   * Fails with LeaseNotFoundError for an unknown lease, with LockSessionExpiredError when the
   * queued key vanished while waiting (lease expired or revoked; etcd 3.4 reports the lock held
   * instead). When `signal` aborts or `timeoutMs` passes while it waits, it fails with
   * OutcomeUnknownError (cause: AbortedError or DeadlineExceededError): the server then deletes
   * the key it queued for this call, but an abort that crosses the server's answer leaves the lock
   * held. An abort before the call was sent is AbortedError.
   *
   * Not retried once sent: a lock call cut off (connection lost, server restarted) fails with
   * OutcomeUnknownError, and the key may exist, queued or holding the lock. With an explicit
   * lease, calling `lock` again with the same lease is safe: it finds the same key (same queue
   * position) if it still exists. Otherwise release it with `unlock(lockKey(name, lease))` or by
   * revoking the lease. Without an explicit lease the key can only be found by listing
   * `name + "/"`.
   */
  async lock(name: Bytes, options: LockCallOptions = {}): Promise<LockAcquired> {
    const o = objectArg(options, 'options');
    const request = { name: bytesArg(name, 'name'), lease: leaseArg(o.lease, 'lease') };
    const response = await withServiceAnswers(
      this.#rpc.unary(methods.Lock, request, 'write', {
        signal: options.signal,
        timeoutMs: options.timeoutMs ?? Number.POSITIVE_INFINITY,
      }),
    );
    return jsonReady({ key: plainBytes(response.key), header: toResponseHeader(response.header) });
  }

  /**
   * Releases a lock by deleting its key (whoever holds it: the service checks nothing else). A key
   * that no longer exists is not an error. Not retried once sent (OutcomeUnknownError): a repeated
   * delete could release the lock a later holder took with the same lease.
   */
  async unlock(key: Bytes, options: CallOptions = {}): Promise<Acknowledged> {
    const request = { key: bytesArg(key, 'key') };
    return acknowledged(
      await withServiceAnswers(this.#rpc.unary(methods.Unlock, request, 'write', options)),
    );
  }
}

/**
 * The key a lock `name` is held with by `lease`: `name/<lease id in lowercase hex>`, Go's layout,
 * which the Lock service, @etcdkit/recipes' Mutex, Go's concurrency.Mutex and `etcdctl lock` share.
 */
export function lockKey(name: Bytes, lease: LeaseRef): Uint8Array {
  const prefix = bytesArg(name, 'name');
  const id = new TextEncoder().encode(`/${leaseArg(lease, 'lease').toString(16)}`);
  const key = new Uint8Array(prefix.length + id.length);
  key.set(prefix);
  key.set(id, prefix.length);
  return key;
}
