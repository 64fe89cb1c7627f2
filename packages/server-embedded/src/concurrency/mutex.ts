// The mutex behind v3lockpb.Lock: Go's concurrency.Mutex as etcd's lock server runs it, a session
// on the request's lease (or a fresh 60 s one) and one Lock call, with the improvements of
// spec/recipes.md: a key lost while waiting fails the call instead of reporting the lock held,
// and the cleanup after a failed wait deletes only the key this call queued.

import { linkSignals } from '@etcdkit/client';
import type { ResponseHeader } from '../api/requests.js';
import { EMPTY_BYTES } from '../bytes.js';
import { EtcdServerError } from '../errors.js';
import type { LocalClient } from './local-client.js';
import {
  createdAt,
  deleteIfCreatedAt,
  oldestUnder,
  putOp,
  queueKey,
  queuePrefix,
  rangedKv,
  sessionLease,
  waitForTurn,
} from './queue.js';

/** A Lock request. */
export interface LockRequest {
  /** The lock's name; keys queue under `name + "/"`. */
  readonly name: Uint8Array;
  /** The lease the key goes on; 0 for a fresh 60 s lease (see sessionLease). */
  readonly lease: bigint;
  /** Aborts the wait (the client went away); the queued key is then deleted. */
  readonly signal: AbortSignal;
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
  // One txn queues the key (or finds the one this lease queued before) and reads the holder, so
  // an uncontended lock takes one request.
  const acquired = client.txn({
    compare: [createdAt(key, 0n)],
    success: [putOp(key, EMPTY_BYTES, leaseId), { requestRange: oldestUnder(prefix) }],
    failure: [{ requestRange: { key } }, { requestRange: oldestUnder(prefix) }],
  });
  const createRevision = acquired.succeeded
    ? (acquired.header?.revision ?? 0n)
    : (rangedKv(acquired.responses, 0)?.createRevision ?? 0n);
  const holder = rangedKv(acquired.responses, 1);
  if (holder === undefined || holder.createRevision === createRevision) {
    return { key, header: acquired.header ?? {} };
  }
  // Linked by hand, and let go of at the end: the halt signal lasts as long as the server.
  const stopped = linkSignals(request.signal, halted);
  try {
    const header = await waitForTurn(client, {
      prefix,
      key,
      createRevision,
      signal: stopped.signal,
      lost: () => new EtcdServerError('LOCK_SESSION_EXPIRED'),
    });
    return { key, header };
  } catch (error) {
    if (!halted.aborted) {
      try {
        deleteIfCreatedAt(client.asServer(), key, createRevision);
      } catch {
        // The wait's failure is the one to report; the key goes with its lease at the latest.
      }
    }
    throw error;
  } finally {
    stopped.release();
  }
}

/** Unlock: deletes `key`, whoever holds it, as etcd does (the request names nothing else). */
export function unlock(client: LocalClient, key: Uint8Array): ResponseHeader {
  return client.deleteRange({ key }).header ?? {};
}
