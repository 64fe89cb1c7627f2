// Which KV requests a member answers from its own applied state, without the leader: etcd serves a
// serializable Range, and a Txn whose every op is a serializable range, from the member's own store
// (its Range and Txn skip the read index for them; etcd 3.4's isTxnReadonly and isTxnSerializable).
// A txn holding a nested txn is not read-only by that test, even when the nested one only reads: it
// is a proposal, as in etcd. A txn with no ops at all is read-only and serializable.
import type { RangeRequest, TxnRequest } from '../api/requests.js';

/** True for a Range the member may answer alone. */
export function isLocalRange(r: RangeRequest): boolean {
  return r.serializable === true;
}

/**
 * True for a txn whose every op is a serializable range (so read-only: kv/txn.ts' isReadOnlyTxn),
 * a txn the member answers alone.
 */
export function isLocalTxn(r: TxnRequest): boolean {
  for (const op of r.success ?? []) if (op.requestRange?.serializable !== true) return false;
  for (const op of r.failure ?? []) if (op.requestRange?.serializable !== true) return false;
  return true;
}
