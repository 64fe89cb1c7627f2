// The wire messages the KV applier reads and writes, and readers for their optional fields: a
// decoded message leaves unset proto3 fields at their defaults, but messages built in code (tests,
// the lock and election services) may leave them undefined or null.
import type { etcdserverpb, mvccpb } from '@etcdkit/client/protocol';
import { EMPTY_BYTES } from '../bytes.js';
import type { KeyValue } from '../mvcc/types.js';

export type RangeRequest = etcdserverpb.RangeRequest.$Properties;
export type RangeResponse = etcdserverpb.RangeResponse.$Properties;
export type PutRequest = etcdserverpb.PutRequest.$Properties;
export type PutResponse = etcdserverpb.PutResponse.$Properties;
export type DeleteRangeRequest = etcdserverpb.DeleteRangeRequest.$Properties;
export type DeleteRangeResponse = etcdserverpb.DeleteRangeResponse.$Properties;
export type TxnRequest = etcdserverpb.TxnRequest.$Properties;
export type TxnResponse = etcdserverpb.TxnResponse.$Properties;
export type RequestOp = etcdserverpb.RequestOp.$Properties;
export type ResponseOp = etcdserverpb.ResponseOp.$Properties;
export type Compare = etcdserverpb.Compare.$Properties;
export type CompactionRequest = etcdserverpb.CompactionRequest.$Properties;
export type CompactionResponse = etcdserverpb.CompactionResponse.$Properties;
export type ResponseHeader = etcdserverpb.ResponseHeader.$Properties;
export type WireKeyValue = mvccpb.KeyValue.$Properties;

/** A bytes field; unset is empty. */
export function bytesOf(value: Uint8Array | null | undefined): Uint8Array {
  return value ?? EMPTY_BYTES;
}

/**
 * An int64 field as a number; unset is 0. Values past 2^53 lose precision but keep their order,
 * which is all revision and limit checks need.
 */
export function numberOf(value: bigint | null | undefined): number {
  return value === null || value === undefined ? 0 : Number(value);
}

/** An int64 field as a bigint; unset is 0n. */
export function bigintOf(value: bigint | null | undefined): bigint {
  return value ?? 0n;
}

/** A header carrying only a revision, as etcd puts on responses inside a txn. */
export function revisionHeader(revision: number): ResponseHeader {
  return { revision: BigInt(revision) };
}

/** A stored key-value in wire form; `keysOnly` drops the value. */
export function toWireKeyValue(kv: KeyValue, keysOnly = false): WireKeyValue {
  return {
    key: kv.key,
    createRevision: BigInt(kv.createRevision),
    modRevision: BigInt(kv.modRevision),
    version: BigInt(kv.version),
    value: keysOnly ? EMPTY_BYTES : kv.value,
    lease: kv.lease,
  };
}

/** The operation a RequestOp carries, or undefined for an empty one. */
export type Operation =
  | { readonly kind: 'range'; readonly request: RangeRequest }
  | { readonly kind: 'put'; readonly request: PutRequest }
  | { readonly kind: 'delete'; readonly request: DeleteRangeRequest }
  | { readonly kind: 'txn'; readonly request: TxnRequest };

export function operationOf(op: RequestOp | null | undefined): Operation | undefined {
  if (op === null || op === undefined) return undefined;
  if (op.requestRange) return { kind: 'range', request: op.requestRange };
  if (op.requestPut) return { kind: 'put', request: op.requestPut };
  if (op.requestDeleteRange) return { kind: 'delete', request: op.requestDeleteRange };
  if (op.requestTxn) return { kind: 'txn', request: op.requestTxn };
  return undefined;
}
