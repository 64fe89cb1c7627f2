// The queue both recipes stand in, with the key layout of Go's concurrency package (so Go services,
// `etcdctl lock` / `etcdctl elect`, @etcdkit/recipes and these services contend on the same keys):
// every session queues under `name + "/"` with ONE key, `name/<lease id in hex>`, attached to its
// lease. The key with the oldest create revision holds the lock or the leadership; the others wait
// in create-revision order, each for the delete of the key just ahead of it (no thundering herd).

import type {
  Compare,
  RangeRequest,
  RequestOp,
  ResponseHeader,
  WireKeyValue,
} from '../api/requests.js';
import type { EtcdServerError } from '../errors.js';
import type { LocalClient } from './local-client.js';
import { prefixEnd, type StoreWatch } from './store-watch.js';

/** TTL of the lease a request without one gets, as Go's concurrency.NewSession grants it. */
export const SESSION_TTL_SECONDS = 60;

const SLASH = 0x2f;
// Field values of the wire enums the requests below use.
const SORT_ASCEND = 1;
const SORT_DESCEND = 2;
const SORT_BY_CREATE = 2;
const COMPARE_EQUAL = 0;
const COMPARE_CREATE = 1;

/**
 * The lease a request's keys go on. etcd opens a session with the request's lease, and a session
 * opened with lease 0 grants a fresh one of 60 s that nothing keeps alive: the key then lives at
 * most a minute. (So Proclaim and Resign with lease 0 grant one too, and Proclaim moves the
 * leader key onto it: etcd does exactly that.) Any other id is used as it is; an unknown one fails
 * on the first put with "requested lease not found".
 */
export function sessionLease(client: LocalClient, lease: bigint): bigint {
  return lease === 0n ? client.grant(SESSION_TTL_SECONDS) : lease;
}

/** The queue's prefix: the name followed by `/`, as Go's NewMutex and NewElection add it. */
export function queuePrefix(name: Uint8Array): Uint8Array {
  const prefix = new Uint8Array(name.length + 1);
  prefix.set(name);
  prefix[name.length] = SLASH;
  return prefix;
}

/**
 * The key `leaseId` queues with: the prefix and the id in lowercase hex without padding (Go's
 * `%x` of the int64, which writes a negative id with a leading `-`, as bigint's toString does).
 */
export function queueKey(prefix: Uint8Array, leaseId: bigint): Uint8Array {
  const hex = new TextEncoder().encode(leaseId.toString(16));
  const key = new Uint8Array(prefix.length + hex.length);
  key.set(prefix);
  key.set(hex, prefix.length);
  return key;
}

/** Every key under `prefix`, oldest first, only the first (Go's WithFirstCreate): the holder. */
export function oldestUnder(prefix: Uint8Array): RangeRequest {
  return {
    key: prefix,
    rangeEnd: prefixEnd(prefix) ?? new Uint8Array([0]),
    sortOrder: SORT_ASCEND,
    sortTarget: SORT_BY_CREATE,
    limit: 1n,
  };
}

/** The newest key under `prefix` created at or before `maxCreateRevision` (Go's waitDeletes). */
function newestUnderBefore(prefix: Uint8Array, maxCreateRevision: bigint): RangeRequest {
  return {
    ...oldestUnder(prefix),
    sortOrder: SORT_DESCEND,
    maxCreateRevision,
  };
}

/** `create_revision(key) == revision`; with 0, "the key does not exist". */
export function createdAt(key: Uint8Array, revision: bigint): Compare {
  return { key, target: COMPARE_CREATE, result: COMPARE_EQUAL, createRevision: revision };
}

/** A queued key: where it stands, and what to report when it is lost while waiting. */
export interface QueuedKey {
  readonly prefix: Uint8Array;
  readonly key: Uint8Array;
  /** The key's create revision: its place in the queue. */
  readonly createRevision: bigint;
  /** The error for a key that vanished (lease expired or revoked, or deleted) while it waited. */
  readonly lost: () => EtcdServerError;
  /** Ends the wait; it then rejects with the signal's reason. */
  readonly signal: AbortSignal;
}

/**
 * Waits until no key created before `queued` is left under its prefix, and returns the header of
 * the read that found none.
 *
 * Each round reads the newest predecessor and watches it in the same synchronous step, so a
 * delete cannot slip in between. The own key is watched for the whole wait: if it vanishes, the
 * wait fails at once with `queued.lost()` rather than waiting on for a turn it can no longer take
 * (Go waits on, and etcd 3.4 then even reports success: etcd issues 11456 and 19597). Every watch
 * is closed when the wait settles.
 */
export async function waitForTurn(client: LocalClient, queued: QueuedKey): Promise<ResponseHeader> {
  const { signal } = queued;
  if (signal.aborted) throw signal.reason;
  const own = client.watch({ key: queued.key }, { noPut: true });
  const ownLost = nextDelete(own, signal).then(() => {
    throw queued.lost();
  });
  // Settled by close() below at the latest; the race reports it while it matters.
  ownLost.catch(() => {});
  try {
    for (;;) {
      if (!stillQueued(client, queued)) throw queued.lost();
      const read = client.range(newestUnderBefore(queued.prefix, queued.createRevision - 1n));
      const predecessor = read.kvs?.[0];
      if (predecessor?.key === undefined || predecessor.key === null) {
        return read.header ?? {};
      }
      const ahead = client.watch({ key: predecessor.key }, { noPut: true });
      try {
        await Promise.race([nextDelete(ahead, signal), ownLost]);
      } finally {
        ahead.close();
      }
    }
  } finally {
    own.close();
  }
}

/** Deletes `key` only if it is still the incarnation created at `createRevision`. */
export function deleteIfCreatedAt(
  client: LocalClient,
  key: Uint8Array,
  createRevision: bigint,
): ResponseHeader {
  const response = client.txn({
    compare: [createdAt(key, createRevision)],
    success: [{ requestDeleteRange: { key } }],
  });
  return response.header ?? {};
}

/** A put of `value` on `key`, attached to `lease`. */
export function putOp(key: Uint8Array, value: Uint8Array, lease: bigint): RequestOp {
  return { requestPut: { key, value, lease } };
}

/** The first key-value of a txn's `index`-th response, when it was a range that found one. */
export function rangedKv(
  responses:
    | readonly { responseRange?: { kvs?: WireKeyValue[] | null } | null }[]
    | null
    | undefined,
  index: number,
): WireKeyValue | undefined {
  return responses?.[index]?.responseRange?.kvs?.[0] ?? undefined;
}

/** True while the queued key still exists as the incarnation created at its revision. */
function stillQueued(client: LocalClient, queued: QueuedKey): boolean {
  const current = client.range({ key: queued.key }).kvs?.[0];
  return current?.createRevision === queued.createRevision;
}

/** Resolves at the next delete `watch` sees; rejects when `signal` aborts or the watch ends. */
async function nextDelete(watch: StoreWatch, signal: AbortSignal): Promise<void> {
  for (;;) {
    const batch = await watch.next(signal);
    if (batch.events.some((event) => event.type === 'delete')) return;
  }
}
