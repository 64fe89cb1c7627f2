// What a write's request looks like once proposed. etcd applies a write from its raft entry, and
// gogo's encoder leaves an empty bytes field out of it, so an empty range_end sent on the wire (which
// a read keeps: see keyRangeOf) reaches the applier as no range_end at all, the key alone. Checked on
// 3.4.23 and 3.5.30: DeleteRange and a writing txn's compares and ops read one key.

import {
  type Compare,
  type DeleteRangeRequest,
  operationOf,
  type RangeRequest,
  type RequestOp,
  type TxnRequest,
} from '../api/requests.js';

/** Drops, in place, a DeleteRange's empty range_end, as its raft entry would. */
export function forgetEmptyRangeEnd(request: DeleteRangeRequest): void {
  forgetIn(request);
}

/** Drops, in place, every empty range_end of a writing txn (compares and ops, nested too). */
export function forgetEmptyRangeEndsInTxn(txn: TxnRequest): void {
  for (const compare of txn.compare ?? []) forgetIn(compare);
  for (const op of txn.success ?? []) forgetInOp(op);
  for (const op of txn.failure ?? []) forgetInOp(op);
}

function forgetInOp(op: RequestOp | null | undefined): void {
  const operation = operationOf(op);
  if (operation === undefined || operation.kind === 'put') return;
  if (operation.kind === 'txn') forgetEmptyRangeEndsInTxn(operation.request);
  else forgetIn(operation.request);
}

function forgetIn(request: DeleteRangeRequest | Compare | RangeRequest): void {
  if (Object.hasOwn(request, 'rangeEnd') && request.rangeEnd?.length === 0) delete request.rangeEnd;
}
