// Request checks that need no store state, run before a request is proposed, in etcd's order
// (api/v3rpc/key.go): for a txn first the op count, then empty compare keys, then each op, and
// only then the duplicate-key rules (intervals.ts).

import {
  type DeleteRangeRequest,
  numberOf,
  operationOf,
  type PutRequest,
  type RangeRequest,
  type RequestOp,
  type TxnRequest,
} from '../api/requests.js';
import { EtcdServerError } from '../errors.js';

const SORT_ORDERS = new Set([0, 1, 2]);
const SORT_TARGETS = new Set([0, 1, 2, 3, 4]);

export function checkRangeRequest(r: RangeRequest): void {
  if (!r.key?.length) throw new EtcdServerError('EMPTY_KEY');
  if (!SORT_ORDERS.has(r.sortOrder ?? 0)) throw new EtcdServerError('INVALID_SORT_OPTION');
  if (!SORT_TARGETS.has(r.sortTarget ?? 0)) throw new EtcdServerError('INVALID_SORT_OPTION');
}

export function checkPutRequest(r: PutRequest): void {
  if (!r.key?.length) throw new EtcdServerError('EMPTY_KEY');
  if (r.ignoreValue && r.value?.length) throw new EtcdServerError('VALUE_PROVIDED');
  if (r.ignoreLease && numberOf(r.lease) !== 0) throw new EtcdServerError('LEASE_PROVIDED');
}

export function checkDeleteRequest(r: DeleteRangeRequest): void {
  if (!r.key?.length) throw new EtcdServerError('EMPTY_KEY');
}

/**
 * Checks a txn against `maxTxnOps`: no list (compares, success ops, failure ops) may be longer, and
 * a nested txn is checked against what its parent leaves (`maxTxnOps` minus the parent's longest
 * list), so deep nesting cannot multiply the budget.
 */
export function checkTxnRequest(r: TxnRequest, maxTxnOps: number): void {
  const compares = r.compare ?? [];
  const success = r.success ?? [];
  const failure = r.failure ?? [];
  const longest = Math.max(compares.length, success.length, failure.length);
  if (longest > maxTxnOps) throw new EtcdServerError('TOO_MANY_TXN_OPS');
  for (const compare of compares) {
    if (!compare.key?.length) throw new EtcdServerError('EMPTY_KEY');
  }
  for (const op of success) checkRequestOp(op, maxTxnOps - longest);
  for (const op of failure) checkRequestOp(op, maxTxnOps - longest);
}

function checkRequestOp(op: RequestOp, maxTxnOps: number): void {
  const operation = operationOf(op);
  switch (operation?.kind) {
    case 'range':
      checkRangeRequest(operation.request);
      return;
    case 'put':
      checkPutRequest(operation.request);
      return;
    case 'delete':
      checkDeleteRequest(operation.request);
      return;
    case 'txn':
      checkTxnRequest(operation.request, maxTxnOps);
      return;
    default:
      // etcd answers an empty RequestOp with "key not found".
      throw new EtcdServerError('KEY_NOT_FOUND');
  }
}
