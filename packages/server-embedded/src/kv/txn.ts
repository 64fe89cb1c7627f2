// Txn (etcd's txn/txn.go). All compares, nested ones included, are evaluated first against the
// state the txn starts from; that fixes the path (which branch of each txn runs). Then the ops on
// that path, and only those, are checked (the puts' ignore_* keys and leases, then the ranges'
// revisions), and any failure rejects the whole txn before anything is written. Finally the ops
// run in order within one store write, so later ops see earlier ones and every change shares one
// revision.

import {
  numberOf,
  type Operation,
  operationOf,
  type RangeRequest,
  type RequestOp,
  type ResponseOp,
  type TxnRequest,
  type TxnResponse,
} from '../api/requests.js';
import { EtcdServerError } from '../errors.js';
import type { Lessor } from '../mvcc/lessor.js';
import type { ReadView } from '../mvcc/store.js';
import type { StoreWrite } from '../mvcc/store-write.js';
import { applyCompares } from './compare.js';
import { applyDeleteRange } from './delete.js';
import { applyPut, checkPutInTxn } from './put.js';
import { executeRange } from './range.js';

/** The outcome of a txn's compares: which branch runs, and the plans of its nested txns. */
export interface TxnPlan {
  readonly succeeded: boolean;
  /** One plan per nested txn op of the branch that runs, in op order. */
  readonly nested: readonly TxnPlan[];
}

/** The ops of the branch a plan takes. */
function branchOf(r: TxnRequest, succeeded: boolean): readonly RequestOp[] {
  return (succeeded ? r.success : r.failure) ?? [];
}

/** Evaluates the compares of `r` and of the nested txns on its path against `view`. */
export function planTxn(view: ReadView, r: TxnRequest): TxnPlan {
  const succeeded = applyCompares(view, r.compare ?? []);
  const nested: TxnPlan[] = [];
  for (const op of branchOf(r, succeeded)) {
    const operation = operationOf(op);
    if (operation?.kind === 'txn') nested.push(planTxn(view, operation.request));
  }
  return { succeeded, nested };
}

/** True when no op of either branch writes: such a txn needs no proposal and no store write. */
export function isReadOnlyTxn(r: TxnRequest): boolean {
  // operationOf's test for a range, without its object: this runs on every txn.
  for (const op of r.success ?? []) if (!op?.requestRange) return false;
  for (const op of r.failure ?? []) if (!op?.requestRange) return false;
  return true;
}

/**
 * Checks the ops on the planned path against `view`, the state the txn starts from, in etcd's
 * order (its applier's two checkRequests passes): every put on the path first, then every range,
 * so a bad put is reported before a bad range revision wherever they sit.
 */
export function checkTxn(view: ReadView, lessor: Lessor, r: TxnRequest, plan: TxnPlan): void {
  forEachOnPath(r, plan, (operation) => {
    if (operation.kind === 'put') checkPutInTxn(view, lessor, operation.request);
  });
  forEachOnPath(r, plan, (operation) => {
    if (operation.kind === 'range') checkRangeRevision(view, operation.request);
  });
}

/** Calls `visit` for each op on the planned path, nested txns' ops in place of the txn. */
function forEachOnPath(r: TxnRequest, plan: TxnPlan, visit: (operation: Operation) => void): void {
  let nested = 0;
  for (const op of branchOf(r, plan.succeeded)) {
    const operation = operationOf(op);
    if (operation === undefined) continue;
    if (operation.kind === 'txn') forEachOnPath(operation.request, plan.nested[nested++]!, visit);
    else visit(operation);
  }
}

/**
 * A range inside a txn may not read a future or compacted revision. Unlike a plain Range, a
 * negative revision is compared as is, so it counts as compacted once it is below the compaction
 * revision (-1 on a fresh store).
 */
function checkRangeRevision(view: ReadView, r: RangeRequest): void {
  const revision = numberOf(r.revision);
  if (revision === 0) return;
  if (revision > view.revision) throw new EtcdServerError('FUTURE_REVISION');
  if (revision < view.compactRevision) throw new EtcdServerError('COMPACTED');
}

/**
 * Runs the planned path of `r`. `view` is the store write for a txn that writes, or the store
 * itself for a read-only one. The header carries the revision only; only the top-level header
 * gets one (nested txn responses keep an empty header, as etcd's do).
 */
export function executeTxn(view: StoreWrite | ReadView, r: TxnRequest, plan: TxnPlan): TxnResponse {
  let nested = 0;
  const responses = branchOf(r, plan.succeeded).map((op): ResponseOp => {
    const operation = operationOf(op);
    switch (operation?.kind) {
      case 'range':
        return { responseRange: executeRange(view, operation.request) };
      case 'put':
        return { responsePut: applyPut(asWrite(view), operation.request) };
      case 'delete':
        return { responseDeleteRange: applyDeleteRange(asWrite(view), operation.request) };
      case 'txn': {
        const response = executeTxn(view, operation.request, plan.nested[nested++]!);
        return { responseTxn: { ...response, header: {} } };
      }
      default:
        return {};
    }
  });
  return { header: { revision: BigInt(view.revision) }, succeeded: plan.succeeded, responses };
}

function asWrite(view: StoreWrite | ReadView): StoreWrite {
  if (!('put' in view)) throw new Error('txn: a write op on a read-only view');
  return view;
}
