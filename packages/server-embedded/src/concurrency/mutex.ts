// The mutex behind v3lockpb.Lock, as etcd's lock server runs Go's Mutex on the request's lease:
// here the server's queue (queue.ts) with the empty value and the holder read in the queuing txn.

import type { ResponseHeader } from '../api/requests.js';
import { EMPTY_BYTES } from '../bytes.js';
import { EtcdServerError } from '../errors.js';
import type { LocalClient } from './local-client.js';
import { joinQueue, type QueueRequest } from './queue.js';

/** A Lock request: a lease queues under `name + "/"`. */
export interface LockRequest extends QueueRequest {
  /**
   * Whether a waiter whose key vanished fails with "mutex: session is expired" on its turn (etcd
   * 3.5 on: Go's Mutex.Lock reads its key then; etcd issue 11456) or is answered with the vanished
   * key as held (etcd 3.4). Default true.
   */
  readonly checksOwnKeyOnTurn?: boolean;
}

/** A held lock. */
export interface HeldLock {
  /** The key that holds the lock; it exists exactly while the lock is held. */
  readonly key: Uint8Array;
  /** The header of the acquiring txn, or of the read that found no predecessor left. */
  readonly header: ResponseHeader;
}

/**
 * Acquires the lock `request.name` for `request.lease`, waiting for every earlier key under the
 * name to go. A lease that already queued or holds the lock reuses its key (one key per lease).
 *
 * If the wait fails (the call is cancelled, the key vanished, a read fails), the key this call
 * queued is deleted, guarded by its create revision so that a newer incarnation survives; when
 * the server stops or restarts, nothing is undone, as with an etcd member that goes down.
 */
export async function lock(client: LocalClient, request: LockRequest): Promise<HeldLock> {
  const { place, header } = await joinQueue(client, request, {
    value: EMPTY_BYTES,
    readsHolder: true,
    lostOnTurn:
      request.checksOwnKeyOnTurn === false
        ? undefined
        : () => new EtcdServerError('LOCK_SESSION_EXPIRED'),
  });
  return { key: place.key, header };
}

/** Unlock: deletes `key`, whoever holds it, as etcd does (the request names nothing else). */
export function unlock(client: LocalClient, key: Uint8Array): ResponseHeader {
  return client.deleteRange({ key }).header ?? {};
}
