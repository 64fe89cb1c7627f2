// What may stop a write besides its own validation: the backend quota, checked before a request is
// proposed (a request that would grow the database past --quota-backend-bytes raises the NOSPACE
// alarm and fails), and the active alarms, checked when a request is applied (NOSPACE refuses puts,
// txns with puts and lease grants; CORRUPT refuses every write). The KV and lease appliers call
// it; the alarm store implements it.
import type { PutRequest, TxnRequest } from '../api/requests.js';

/** A request that goes through raft, as the guard sees it. */
export type GuardedRequest =
  | { readonly kind: 'put'; readonly request: PutRequest }
  | { readonly kind: 'txn'; readonly request: TxnRequest }
  | { readonly kind: 'deleteRange' }
  | { readonly kind: 'compaction' }
  | { readonly kind: 'leaseGrant' }
  | { readonly kind: 'leaseRevoke' };

/** Refuses writes by throwing the EtcdServerError etcd answers with. */
export interface WriteGuard {
  /** Before the request is validated and proposed: the backend quota (etcd's gRPC quota layer). */
  beforeProposal(request: GuardedRequest): void;
  /** When the proposed request is applied: the active alarms (etcd's capped and corrupt appliers). */
  atApply(request: GuardedRequest): void;
}
