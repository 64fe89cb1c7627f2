// The header etcd attaches to every response (who answered and at which revision), and the answer
// of calls that return nothing else.
import type { etcdserverpb } from './generated/protocol.js';
import { jsonReady } from './json.js';

/** Metadata of a response: which cluster and member answered, and the store revision it saw. */
export interface ResponseHeader {
  /** Id of the cluster that answered. */
  readonly clusterId: bigint;
  /** Id of the member that answered. */
  readonly memberId: bigint;
  /**
   * The store revision when the request was served. For a read this is always the current
   * revision, even when the read asked for an older one; for a write it is the revision the write
   * created (or the unchanged current one when nothing changed).
   */
  readonly revision: bigint;
  /** The raft term of the member when it answered. */
  readonly raftTerm: bigint;
}

/**
 * Turns a decoded protocol header into the public shape; absent fields are 0. It serializes with
 * JSON.stringify (its numbers as decimal strings).
 */
export function toResponseHeader(
  header: etcdserverpb.ResponseHeader.$Properties | null | undefined,
): ResponseHeader {
  return jsonReady({
    clusterId: header?.clusterId ?? 0n,
    memberId: header?.memberId ?? 0n,
    revision: header?.revision ?? 0n,
    raftTerm: header?.raftTerm ?? 0n,
  });
}

/**
 * The answer of calls whose only result is that they were applied (revoke, membership and auth
 * changes, leader transfer): a call was applied; `header` says by which member and at which
 * revision. An object, so fields can be added later.
 */
export interface Acknowledged {
  readonly header: ResponseHeader;
}

/** Shapes a response that carries nothing but a header. */
export function acknowledged(response: {
  readonly header?: etcdserverpb.ResponseHeader.$Properties | null;
}): Acknowledged {
  return jsonReady({ header: toResponseHeader(response.header) });
}
