// Put (etcd's txn/put.go). A put always makes a new revision, even with an identical value: the
// version grows and the create revision stays. ignore_value and ignore_lease keep the key's current
// value or lease, and need the key to exist.

import {
  bigintOf,
  bytesOf,
  type PutRequest,
  type PutResponse,
  revisionHeader,
  toWireKeyValue,
} from '../api/requests.js';
import { EtcdServerError } from '../errors.js';
import type { Lessor } from '../mvcc/lessor.js';
import type { ReadView } from '../mvcc/store.js';
import type { StoreWrite } from '../mvcc/store-write.js';

/**
 * The checks of a put that depend on state, against the view the request starts from: the lease
 * must exist, and ignore_value / ignore_lease need the key. A plain Put checks the lease first
 * (etcd's applier.Put); a put inside a txn checks the key first (etcd's checkRequestPut).
 */
export function checkPut(view: ReadView, lessor: Lessor, r: PutRequest): void {
  checkLease(lessor, r);
  checkIgnoredKey(view, r);
}

/** {@link checkPut} for a put inside a txn: the key first, then the lease. */
export function checkPutInTxn(view: ReadView, lessor: Lessor, r: PutRequest): void {
  checkIgnoredKey(view, r);
  checkLease(lessor, r);
}

function checkLease(lessor: Lessor, r: PutRequest): void {
  const lease = bigintOf(r.lease);
  if (lease !== 0n && !lessor.has(lease)) throw new EtcdServerError('LEASE_NOT_FOUND');
}

function checkIgnoredKey(view: ReadView, r: PutRequest): void {
  if ((r.ignoreValue || r.ignoreLease) && view.range({ key: bytesOf(r.key) }).kvs.length === 0) {
    throw new EtcdServerError('KEY_NOT_FOUND');
  }
}

/** Applies a checked put within `write`. */
export function applyPut(write: StoreWrite, r: PutRequest): PutResponse {
  const key = bytesOf(r.key);
  const previous =
    r.ignoreValue || r.ignoreLease || r.prevKv ? write.range({ key }).kvs[0] : undefined;
  // checkPut made sure the key exists for ignore_*; it can still be gone here only when an earlier
  // op of the same txn deleted it through a "\0" range end (which the duplicate-key rules let
  // through). etcd crashes on that; we fall back to an empty value and no lease.
  const value = r.ignoreValue ? (previous?.value ?? new Uint8Array(0)) : bytesOf(r.value);
  const lease = r.ignoreLease ? (previous?.lease ?? 0n) : bigintOf(r.lease);
  const revision = write.put(key, value, lease);
  const response: PutResponse = { header: revisionHeader(revision) };
  if (r.prevKv && previous !== undefined) response.prevKv = toWireKeyValue(previous);
  return response;
}
