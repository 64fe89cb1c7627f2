// The backend quota (--quota-backend-bytes), as etcd's gRPC layer applies it before a write is
// proposed: a put, a txn with puts or a lease grant whose estimated cost would take the database
// to the quota or past it raises the NOSPACE alarm (itself a raft request) and fails. The costs are
// etcd's estimates: 256 bytes plus key and value per put (a txn costs its larger branch, nested
// txns included), 64 bytes per lease.

import { operationOf, type PutRequest, type TxnRequest } from '../api/requests.js';
import type { GuardedRequest } from '../consensus/write-guard.js';
import { EtcdServerError } from '../errors.js';

const KV_OVERHEAD = 256;
const LEASE_OVERHEAD = 64;

/** What a put costs the backend, by etcd's estimate. */
export function putCost(r: PutRequest): number {
  return KV_OVERHEAD + (r.key?.length ?? 0) + (r.value?.length ?? 0);
}

/** What a txn costs: the larger of its branches, counting the puts of nested txns. */
export function txnCost(r: TxnRequest): number {
  const branchCost = (ops: TxnRequest['success']): number => {
    let cost = 0;
    for (const op of ops ?? []) {
      const operation = operationOf(op);
      if (operation?.kind === 'put') cost += putCost(operation.request);
      else if (operation?.kind === 'txn') cost += txnCost(operation.request);
    }
    return cost;
  };
  return Math.max(branchCost(r.success), branchCost(r.failure));
}

/** What a request costs; 0 for requests the quota does not apply to. */
export function requestCost(request: GuardedRequest): number {
  switch (request.kind) {
    case 'put':
      return putCost(request.request);
    case 'txn':
      return txnCost(request.request);
    case 'leaseGrant':
      return LEASE_OVERHEAD;
    default:
      return 0;
  }
}

/** The quota check of one member. */
export class BackendQuota {
  readonly #quotaBytes: number;
  readonly #size: () => number;
  readonly #raiseNoSpace: () => void;

  /**
   * `quotaBytes` below zero disables the quota, as in etcd. `size` gives the database size now;
   * `raiseNoSpace` activates the NOSPACE alarm for this member.
   */
  constructor(options: { quotaBytes: number; size: () => number; raiseNoSpace: () => void }) {
    this.#quotaBytes = options.quotaBytes;
    this.#size = options.size;
    this.#raiseNoSpace = options.raiseNoSpace;
  }

  /** Throws NO_SPACE (after raising the alarm) when `request` does not fit. */
  check(request: GuardedRequest): void {
    if (this.#quotaBytes < 0) return;
    const cost = requestCost(request);
    if (cost === 0 || this.#size() + cost < this.#quotaBytes) return;
    this.#raiseNoSpace();
    throw new EtcdServerError('NO_SPACE');
  }
}

/** etcd's default --quota-backend-bytes: 2 GiB. */
export const DEFAULT_QUOTA_BACKEND_BYTES = 2 * 1024 * 1024 * 1024;

/** The quota in force for a --quota-backend-bytes value: 0 means the default, as in etcd. */
export function effectiveQuota(quotaBackendBytes: number | undefined): number {
  return quotaBackendBytes === undefined || quotaBackendBytes === 0
    ? DEFAULT_QUOTA_BACKEND_BYTES
    : quotaBackendBytes;
}
