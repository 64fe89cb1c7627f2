// From symbolic operations to gRPC requests, resolved against one server's view of the sequence:
// its current revision, its last compaction and the lease ids it picked.
import { etcdserverpb } from '@etcdkit/client/protocol';
import type {
  CompareSpec,
  DeleteOp,
  LeaseRef,
  PutOp,
  RangeEnd,
  RangeOp,
  RevisionRef,
  TxnOp,
  TxnSpec,
} from './operations.js';

type RangeRequest = etcdserverpb.RangeRequest.$Properties;
type PutRequest = etcdserverpb.PutRequest.$Properties;
type DeleteRangeRequest = etcdserverpb.DeleteRangeRequest.$Properties;
type TxnRequest = etcdserverpb.TxnRequest.$Properties;
type Compare = etcdserverpb.Compare.$Properties;
type RequestOp = etcdserverpb.RequestOp.$Properties;

/** What a server's requests are resolved against. */
export interface ResolveContext {
  /** The revision of the last response's header. */
  readonly revision: number;
  /** The last successful compaction, if any. */
  readonly compactRevision: number | undefined;
  /** Lease ids the server picked (grants with id 0), in grant order. */
  readonly picked: readonly bigint[];
}

/** The id a `picked#n` lease stands for before the n-th pick happened: a lease never granted. */
export const NEVER_GRANTED_LEASE = 0xdeadn;

const encoder = new TextEncoder();
const bytes = (text: string): Uint8Array => encoder.encode(text);

export function resolveRevision(ref: RevisionRef, context: ResolveContext): bigint {
  const base = ref.from === 'current' ? context.revision : (context.compactRevision ?? 1);
  return BigInt(base + ref.offset);
}

export function resolveLease(ref: LeaseRef, context: ResolveContext): bigint {
  if (ref.kind === 'id') return ref.id;
  return context.picked[ref.index] ?? NEVER_GRANTED_LEASE;
}

/** The range_end of `key` and `end` as text; undefined for a single key. */
export function rangeEndText(key: string, end: RangeEnd): string | undefined {
  switch (end.kind) {
    case 'single':
      return undefined;
    case 'from-key':
      return '\0';
    case 'key':
      return end.key;
    case 'prefix':
      return prefixEnd(key);
  }
}

/** etcd's prefix end: the key with its last byte below 0xff incremented, or "\0" for none. */
function prefixEnd(key: string): string {
  for (let i = key.length - 1; i >= 0; i--) {
    const code = key.charCodeAt(i);
    if (code < 0xff) return key.slice(0, i) + String.fromCharCode(code + 1);
  }
  return '\0';
}

function keyRange(key: string, end: RangeEnd): { key: Uint8Array; rangeEnd?: Uint8Array } {
  const rangeEnd = rangeEndText(key, end);
  return rangeEnd === undefined
    ? { key: bytes(key) }
    : { key: bytes(key), rangeEnd: bytes(rangeEnd) };
}

export function putRequest(op: PutOp, context: ResolveContext): PutRequest {
  return {
    key: bytes(op.key),
    value: bytes(op.value),
    prevKv: op.prevKv,
    lease: op.lease ? resolveLease(op.lease, context) : 0n,
    ignoreValue: op.ignoreValue,
    ignoreLease: op.ignoreLease,
  };
}

export function deleteRequest(op: DeleteOp): DeleteRangeRequest {
  return { ...keyRange(op.key, op.end), prevKv: op.prevKv };
}

export function rangeRequest(op: RangeOp, context: ResolveContext): RangeRequest {
  const at = (ref: RevisionRef | undefined) => (ref ? resolveRevision(ref, context) : 0n);
  return {
    ...keyRange(op.key, op.end),
    limit: BigInt(op.limit),
    sortOrder: etcdserverpb.RangeRequest.SortOrder[op.sortOrder],
    sortTarget: etcdserverpb.RangeRequest.SortTarget[op.sortTarget],
    revision: at(op.revision),
    keysOnly: op.keysOnly,
    countOnly: op.countOnly,
    minModRevision: at(op.minModRevision),
    maxModRevision: at(op.maxModRevision),
    minCreateRevision: at(op.minCreateRevision),
    maxCreateRevision: at(op.maxCreateRevision),
  };
}

function compareRequest(spec: CompareSpec, context: ResolveContext): Compare {
  const compare: Compare = {
    ...keyRange(spec.key, spec.end),
    target: etcdserverpb.Compare.CompareTarget[spec.target],
    result: etcdserverpb.Compare.CompareResult[spec.result],
  };
  const operand = spec.operand;
  switch (operand.kind) {
    case 'VERSION':
      return { ...compare, version: BigInt(operand.version) };
    case 'CREATE':
      return { ...compare, createRevision: resolveRevision(operand.revision, context) };
    case 'MOD':
      return { ...compare, modRevision: resolveRevision(operand.revision, context) };
    case 'VALUE':
      return { ...compare, value: bytes(operand.value) };
    case 'LEASE':
      return { ...compare, lease: operand.lease ? resolveLease(operand.lease, context) : 0n };
  }
}

function requestOp(op: TxnOp, context: ResolveContext): RequestOp {
  switch (op.type) {
    case 'put':
      return { requestPut: putRequest(op, context) };
    case 'delete':
      return { requestDeleteRange: deleteRequest(op) };
    case 'range':
      return { requestRange: rangeRequest(op, context) };
    case 'txn':
      return { requestTxn: txnRequest(op.txn, context) };
    case 'empty':
      return {};
  }
}

export function txnRequest(spec: TxnSpec, context: ResolveContext): TxnRequest {
  return {
    compare: spec.compare.map((compare) => compareRequest(compare, context)),
    success: spec.success.map((op) => requestOp(op, context)),
    failure: spec.failure.map((op) => requestOp(op, context)),
  };
}
