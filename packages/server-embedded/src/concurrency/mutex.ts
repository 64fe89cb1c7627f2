// The mutex behind v3lockpb.Lock, as etcd's lock server runs Go's Mutex on the request's lease:
// here the recipes' acquire skeleton and queue algorithm over the server's local client.

import { acquireInLine } from '@etcdkit/recipes/internal';
import type { ResponseHeader } from '../api/requests.js';
import { EMPTY_BYTES } from '../bytes.js';
import { EtcdServerError } from '../errors.js';
import type { LocalClient } from './local-client.js';
import {
  createdAt,
  oldestUnder,
  putOp,
  type QueuedKey,
  queueKey,
  queuePrefix,
  rangedKv,
  sessionLease,
  waitInLine,
  withdraw,
} from './queue.js';

/** A Lock request. */
export interface LockRequest {
  /** The lock's name; keys queue under `name + "/"`. */
  readonly name: Uint8Array;
  /** The lease the key goes on; 0 for a fresh 60 s lease (see sessionLease). */
  readonly lease: bigint;
  /** Aborts the wait (the client went away); the queued key is then deleted. */
  readonly signal: AbortSignal;
  /**
   * What a waiter whose key vanished learns on its turn, as the etcd version answered as
   * (QueuedKey): default 'on-turn', etcd 3.5 on.
   */
  readonly vanished?: QueuedKey['vanished'];
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
 * If the wait fails (the call is cancelled, the key vanishes, a read fails), the key this call
 * queued is deleted, guarded by its create revision so that a newer incarnation survives; when
 * the server stops or restarts, nothing is undone, as with an etcd member that goes down.
 */
export async function lock(client: LocalClient, request: LockRequest): Promise<HeldLock> {
  const halted = client.halted;
  const leaseId = sessionLease(client, request.lease);
  const prefix = queuePrefix(request.name);
  const key = queueKey(prefix, leaseId);
  return acquireInLine({
    take: async () => {
      // One txn queues the key (or finds this lease's) and reads the holder: one request uncontended.
      const acquired = client.txn({
        compare: [createdAt(key, 0n)],
        success: [putOp(key, EMPTY_BYTES, leaseId), { requestRange: oldestUnder(prefix) }],
        failure: [{ requestRange: { key } }, { requestRange: oldestUnder(prefix) }],
      });
      const createRevision = acquired.succeeded
        ? (acquired.header?.revision ?? 0n)
        : (rangedKv(acquired.responses, 0)?.createRevision ?? 0n);
      return {
        createRevision,
        header: acquired.header ?? {},
        holder: rangedKv(acquired.responses, 1),
      };
    },
    atHead: ({ createRevision, header, holder }): HeldLock | undefined =>
      holder === undefined || holder.createRevision === createRevision
        ? { key, header }
        : undefined,
    wait: async ({ createRevision }) => {
      const lost = () => new EtcdServerError('LOCK_SESSION_EXPIRED');
      const { signal, vanished } = request;
      return {
        key,
        header: await waitInLine(client, {
          prefix,
          key,
          createRevision,
          signal,
          halted,
          lost,
          vanished: vanished ?? 'on-turn',
        }),
      };
    },
    withdraw: (taken) => withdraw(client, halted, key, taken?.createRevision),
  });
}

/** Unlock: deletes `key`, whoever holds it, as etcd does (the request names nothing else). */
export function unlock(client: LocalClient, key: Uint8Array): ResponseHeader {
  return client.deleteRange({ key }).header ?? {};
}
