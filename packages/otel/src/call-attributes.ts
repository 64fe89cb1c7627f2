// What a call's request, response, error and endpoint say, as attributes. The etcd messages are read
// structurally (a `key` field, a `header.revision`...), so every method that has them gets them.
import { prefixEnd, toText } from '@etcdkit/client';
import type { Attributes } from '@opentelemetry/api';
import { EtcdAttributes as A } from './names.js';

const byPath = new Map<string, Attributes>();

/** `rpc.*` attributes of a gRPC path such as `/etcdserverpb.KV/Range` (cached: paths are few). */
export function methodAttributes(path: string): Attributes {
  let attributes = byPath.get(path);
  if (attributes === undefined) {
    const slash = path.lastIndexOf('/');
    attributes = {
      [A.RPC_SYSTEM]: 'grpc',
      [A.RPC_SERVICE]: path.slice(path.startsWith('/') ? 1 : 0, Math.max(slash, 0)),
      [A.RPC_METHOD]: path.slice(slash + 1),
    };
    byPath.set(path, attributes);
  }
  return attributes;
}

/** `server.address` and `server.port` of a `host:port` target (IPv6 hosts lose their brackets). */
export function endpointAttributes(target: string | undefined): Attributes {
  if (target === undefined) return {};
  const colon = target.lastIndexOf(':');
  const host = colon < 0 ? target : target.slice(0, colon);
  const port = Number(target.slice(colon + 1));
  const address = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return Number.isInteger(port) && colon >= 0
    ? { [A.SERVER_ADDRESS]: address, [A.SERVER_PORT]: port }
    : { [A.SERVER_ADDRESS]: address };
}

function bytesField(message: unknown, field: string): Uint8Array | undefined {
  if (message === null || typeof message !== 'object') return undefined;
  const value = (message as Record<string, unknown>)[field];
  return value instanceof Uint8Array ? value : undefined;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}

/** The key, range end and prefix flag of a request that has a `key` (Range, Put, DeleteRange). */
export function keyAttributes(request: unknown): Attributes {
  const key = bytesField(request, 'key');
  if (key === undefined) return {};
  const end = bytesField(request, 'rangeEnd');
  if (end === undefined || end.length === 0) return { [A.ETCD_KEY]: toText(key) };
  return {
    [A.ETCD_KEY]: toText(key),
    [A.ETCD_RANGE_END]: toText(end),
    [A.ETCD_PREFIX]: sameBytes(end, prefixEnd(key)),
  };
}

/** The header revision of a response, and a Txn's outcome. */
export function responseAttributes(response: unknown): Attributes {
  if (response === null || typeof response !== 'object') return {};
  const { header, succeeded } = response as {
    header?: { revision?: unknown };
    succeeded?: unknown;
  };
  const attributes: Attributes = {};
  const revision = header?.revision;
  if (typeof revision === 'bigint') attributes[A.ETCD_REVISION] = Number(revision);
  if (typeof succeeded === 'boolean') attributes[A.ETCD_TXN_SUCCEEDED] = succeeded;
  return attributes;
}

/** What the telemetry reads of a failure: the client's EtcdError fields, when it is one. */
export interface FailureFacts {
  /** The EtcdError's code, or the error's name for anything else. */
  readonly type: string;
  /** The gRPC status, when known. */
  readonly grpcStatus: number | undefined;
  readonly message: string;
}

/** The code, gRPC status and message of what a call rejected with. */
export function failureFacts(error: unknown): FailureFacts {
  if (error instanceof Error) {
    const { code, grpcStatus } = error as { code?: unknown; grpcStatus?: unknown };
    return {
      type: typeof code === 'string' ? code : error.name,
      grpcStatus: typeof grpcStatus === 'number' ? grpcStatus : undefined,
      message: error.message,
    };
  }
  return { type: 'unknown', grpcStatus: undefined, message: String(error) };
}

/** The code OutcomeUnknownError carries. */
export const OUTCOME_UNKNOWN = 'OUTCOME_UNKNOWN';
