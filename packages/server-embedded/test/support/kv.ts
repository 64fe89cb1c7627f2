// Shorthands for KV calls in tests, and plain summaries of what comes back.
import {
  etcdserverpb,
  etcdserverpb_KV as KV,
  etcdserverpb_Lease as Lease,
  type mvccpb,
} from '@etcdkit/client/protocol';
import { b, text } from './bytes.js';
import type { TestServer } from './test-server.js';

type RangeRequest = etcdserverpb.RangeRequest.$Properties;
type PutRequest = etcdserverpb.PutRequest.$Properties;
type DeleteRangeRequest = etcdserverpb.DeleteRangeRequest.$Properties;
type TxnRequest = etcdserverpb.TxnRequest.$Properties;
type Compare = etcdserverpb.Compare.$Properties;
type RequestOp = etcdserverpb.RequestOp.$Properties;

export const SortOrder = etcdserverpb.RangeRequest.SortOrder;
export const SortTarget = etcdserverpb.RangeRequest.SortTarget;
export const Target = etcdserverpb.Compare.CompareTarget;
export const Result = etcdserverpb.Compare.CompareResult;

/** KV calls on a test server's raw client. */
export function kv(server: TestServer) {
  const { client } = server;
  return {
    range: (key: string, extra: Omit<RangeRequest, 'key'> = {}) =>
      client.unary(KV.Range, { key: b(key), ...extra }),
    put: (key: string, value: string, extra: Omit<PutRequest, 'key' | 'value'> = {}) =>
      client.unary(KV.Put, { key: b(key), value: b(value), ...extra }),
    del: (key: string, extra: Omit<DeleteRangeRequest, 'key'> = {}) =>
      client.unary(KV.DeleteRange, { key: b(key), ...extra }),
    txn: (request: TxnRequest) => client.unary(KV.Txn, request),
    compact: (revision: number, physical = false) =>
      client.unary(KV.Compact, { revision: BigInt(revision), physical }),
    /** The current revision, read from a Range header. */
    revision: async () => Number((await client.unary(KV.Range, { key: b('\0') })).header?.revision),
  };
}

/** Grants a lease with this id through LeaseGrant (TTL 60 s). */
export async function grantLease(server: TestServer, id: bigint): Promise<bigint> {
  const response = await server.client.unary(Lease.LeaseGrant, { ID: id, TTL: 60n });
  return response.ID;
}

/** A key-value as numbers and text. */
export function summary(kv: mvccpb.KeyValue.$Properties | undefined | null) {
  if (kv === undefined || kv === null) return undefined;
  return {
    key: text(kv.key),
    value: text(kv.value),
    create: Number(kv.createRevision ?? 0),
    mod: Number(kv.modRevision ?? 0),
    version: Number(kv.version ?? 0),
    lease: kv.lease ?? 0n,
  };
}

/** The keys of a list of key-values, as text. */
export function keysOf(kvs: readonly mvccpb.KeyValue.$Properties[] | null | undefined): string[] {
  return (kvs ?? []).map((kv) => text(kv.key));
}

// Builders for txn requests.
export const op = {
  range: (key: string, extra: Omit<RangeRequest, 'key'> = {}): RequestOp => ({
    requestRange: { key: b(key), ...extra },
  }),
  put: (key: string, value: string, extra: Omit<PutRequest, 'key' | 'value'> = {}): RequestOp => ({
    requestPut: { key: b(key), value: b(value), ...extra },
  }),
  del: (
    key: string,
    rangeEnd?: string,
    extra: Omit<DeleteRangeRequest, 'key'> = {},
  ): RequestOp => ({
    requestDeleteRange: {
      key: b(key),
      ...(rangeEnd === undefined ? {} : { rangeEnd: b(rangeEnd) }),
      ...extra,
    },
  }),
  txn: (compare: Compare[], success: RequestOp[], failure: RequestOp[] = []): RequestOp => ({
    requestTxn: { compare, success, failure },
  }),
};

export const cmp = {
  value: (key: string, result: number, value: string, rangeEnd?: string): Compare => ({
    key: b(key),
    target: Target.VALUE,
    result,
    value: b(value),
    ...(rangeEnd === undefined ? {} : { rangeEnd: b(rangeEnd) }),
  }),
  version: (key: string, result: number, version: number, rangeEnd?: string): Compare => ({
    key: b(key),
    target: Target.VERSION,
    result,
    version: BigInt(version),
    ...(rangeEnd === undefined ? {} : { rangeEnd: b(rangeEnd) }),
  }),
  create: (key: string, result: number, revision: number, rangeEnd?: string): Compare => ({
    key: b(key),
    target: Target.CREATE,
    result,
    createRevision: BigInt(revision),
    ...(rangeEnd === undefined ? {} : { rangeEnd: b(rangeEnd) }),
  }),
  mod: (key: string, result: number, revision: number, rangeEnd?: string): Compare => ({
    key: b(key),
    target: Target.MOD,
    result,
    modRevision: BigInt(revision),
    ...(rangeEnd === undefined ? {} : { rangeEnd: b(rangeEnd) }),
  }),
  lease: (key: string, result: number, lease: bigint): Compare => ({
    key: b(key),
    target: Target.LEASE,
    result,
    lease,
  }),
};
