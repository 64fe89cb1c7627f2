// The Lock and Election queue in Go's key layout (`name/<lease hex>`, shared with Go, etcdctl and
// @etcdkit/recipes), waited on with the recipes' queue algorithm over this server's store.
import { linkSignals } from '@etcdkit/client/internal';
import {
  acquireInLine,
  type LinePlace,
  type QueueLine,
  waitForTurn,
} from '@etcdkit/recipes/internal';
import type {
  Compare,
  RangeRequest,
  RequestOp,
  ResponseHeader,
  WireKeyValue,
} from '../api/requests.js';
import type { EtcdServerError } from '../errors.js';
import type { LocalClient } from './local-client.js';
import { prefixEnd } from './store-watch.js';

/** A request to queue a lease's key under a name: what Lock and Campaign take. */
export interface QueueRequest {
  /** The queue's name; keys queue under `name + "/"`. */
  readonly name: Uint8Array;
  /** The lease the key goes on; 0 for a fresh 60 s lease (see sessionLease). */
  readonly lease: bigint;
  /** Aborts the wait (the client went away); the queued key is then withdrawn. */
  readonly signal: AbortSignal;
}

/** How a recipe joins its queue: Go's Mutex and Election differ only in these. */
export interface Joining {
  /** The value the key is put with. */
  readonly value: Uint8Array;
  /**
   * Reads the holder in the txn that queues, so a key at the head answers after one request (Go's
   * Mutex); without it the wait's first read tells (Go's Campaign).
   */
  readonly readsHolder: boolean;
  /** What a key that vanished while it waited gets on its turn (see QueuedKey.lostOnTurn). */
  readonly lostOnTurn: (() => EtcdServerError) | undefined;
  /** Runs once the place is taken (Campaign proclaims a changed value); a throw withdraws it. */
  readonly taken?: (place: QueuePlace) => void;
}

/** A lease's place in a queue, as the txn that queued its key found it. */
export interface QueuePlace {
  /** `name/<lease hex>`. */
  readonly key: Uint8Array;
  /** The lease the key is on (a fresh one for a request with lease 0). */
  readonly lease: bigint;
  /** The key's create revision: its place in the queue. */
  readonly createRevision: bigint;
  /** The header of the txn that queued the key (or found it queued). */
  readonly header: ResponseHeader;
  /** The key as the txn found it when the lease had queued already (its value may differ). */
  readonly existing: WireKeyValue | undefined;
}

/** A place whose turn came, with the header of the read that found no key ahead. */
export interface Turn {
  readonly place: QueuePlace;
  /** The txn's header when the place was at the head at once. */
  readonly header: ResponseHeader;
}

/**
 * Queues the request's lease under its name and waits for its turn, as Go's Mutex.Lock and
 * Election.Campaign do over this server's store: one txn puts the key (or finds the lease's), a
 * key at the head is answered at once, any other waits in line. On any failure the key is
 * withdrawn (see withdraw), not only on cancellation as in Go.
 */
export function joinQueue(
  client: LocalClient,
  request: QueueRequest,
  joining: Joining,
): Promise<Turn> {
  const halted = client.halted;
  const lease = sessionLease(client, request.lease);
  const prefix = queuePrefix(request.name);
  const key = queueKey(prefix, lease);
  const holderRead: RequestOp[] = joining.readsHolder
    ? [{ requestRange: oldestUnder(prefix) }]
    : [];
  return acquireInLine({
    take: async () => {
      const response = client.txn({
        compare: [createdAt(key, 0n)],
        success: [putOp(key, joining.value, lease), ...holderRead],
        failure: [{ requestRange: { key } }, ...holderRead],
      });
      const header = response.header ?? {};
      const existing = response.succeeded ? undefined : rangedKv(response.responses, 0);
      const createRevision = existing?.createRevision ?? header.revision ?? 0n;
      const place: QueuePlace = { key, lease, createRevision, header, existing };
      return { place, holder: rangedKv(response.responses, 1) };
    },
    taken: ({ place }) => joining.taken?.(place),
    // Without a holder read, the first read of the line tells.
    atHead: ({ place, holder }): Turn | undefined =>
      joining.readsHolder &&
      (holder === undefined || holder.createRevision === place.createRevision)
        ? { place, header: place.header }
        : undefined,
    wait: async ({ place }): Promise<Turn> => {
      const { signal } = request;
      const { createRevision } = place;
      const { lostOnTurn } = joining;
      const queued = { prefix, key, createRevision, signal, halted, lostOnTurn };
      return { place, header: await waitInLine(client, queued) };
    },
    withdraw: (taken) => withdraw(client, halted, key, taken?.place.createRevision),
  });
}

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
function queueKey(prefix: Uint8Array, leaseId: bigint): Uint8Array {
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

/** A queued key: where it stands, and what it gets when it is lost while waiting. */
interface QueuedKey extends LinePlace<Uint8Array> {
  readonly prefix: Uint8Array;
  /** Ends the wait (the client went away); it then rejects with the signal's reason. */
  readonly signal: AbortSignal;
  /** The server's halt signal (see LocalClient.halted): ends the wait too. */
  readonly halted: AbortSignal;
  /**
   * What a key that vanished (lease expired or revoked, or deleted) while it waited gets once no
   * key is ahead (no etcd fails a waiter earlier): the error to fail with (etcd 3.5 on: Go's
   * Mutex.Lock reads its key after waitDeletes), or undefined to be answered as if it held (Go's
   * Election.Campaign, etcd 3.4's Mutex).
   */
  readonly lostOnTurn: (() => EtcdServerError) | undefined;
}

/**
 * Waits until no key created before `queued` is left under its prefix, with the queue algorithm
 * of @etcdkit/recipes over this server's store; returns the header of the read that found none.
 */
async function waitInLine(client: LocalClient, queued: QueuedKey): Promise<ResponseHeader> {
  // Linked by hand, and let go of at the end: the halt signal lasts as long as the server.
  const stopped = linkSignals(queued.signal, queued.halted);
  try {
    if (stopped.signal.aborted) throw stopped.signal.reason;
    const header = await waitForTurn(storeLine(client, queued), { signal: stopped.signal });
    if (queued.lostOnTurn !== undefined && !isIncarnation(client, queued)) {
      throw queued.lostOnTurn();
    }
    return header;
  } finally {
    stopped.release();
  }
}

/** The line of `queued` on this server: reads and watches run in one synchronous step. */
function storeLine(
  client: LocalClient,
  queued: QueuedKey,
): QueueLine<Uint8Array, LinePlace<Uint8Array>, ResponseHeader> {
  return {
    readAhead: async () => {
      const read = client.range(newestUnderBefore(queued.prefix, queued.createRevision - 1n));
      const newest = read.kvs?.[0];
      const header = read.header ?? {};
      const predecessors =
        newest?.key === undefined || newest.key === null
          ? []
          : [{ key: newest.key, createRevision: newest.createRevision ?? 0n }];
      return { predecessors, revision: header.revision ?? 0n, header };
    },
    waitForPredecessor: async (newest, _read, signal) => {
      await gone(client, newest, signal);
      return undefined;
    },
  };
}

/**
 * Resolves once `place` is deleted or re-created. The key is read in the step that creates the
 * watch, so a change since it was last seen shows in the read and one after it in the watch.
 */
async function gone(
  client: LocalClient,
  place: LinePlace<Uint8Array>,
  signal: AbortSignal,
): Promise<void> {
  const watch = client.watch({ key: place.key }, { noPut: true });
  try {
    const read = client.range({ key: place.key });
    if (read.kvs?.[0]?.createRevision !== place.createRevision) return;
    for (;;) {
      const batch = await watch.next(signal);
      if (batch.events.some((event) => event.type === 'delete')) return;
    }
  } finally {
    watch.close();
  }
}

/**
 * After a failed wait: the guarded delete of the key the call queued, as the server itself. When
 * the server stops nothing is undone, as with an etcd member that goes down.
 */
function withdraw(
  client: LocalClient,
  halted: AbortSignal,
  key: Uint8Array,
  createRevision: bigint | undefined,
): undefined {
  if (createRevision === undefined || halted.aborted) return undefined;
  try {
    deleteIfCreatedAt(client.asServer(), key, createRevision);
  } catch {
    // The wait's failure is the one to report; the key goes with its lease at the latest.
  }
  return undefined;
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
function rangedKv(
  responses:
    | readonly { responseRange?: { kvs?: WireKeyValue[] | null } | null }[]
    | null
    | undefined,
  index: number,
): WireKeyValue | undefined {
  return responses?.[index]?.responseRange?.kvs?.[0] ?? undefined;
}

/** True while `place` exists as the incarnation created at its revision. */
function isIncarnation(client: LocalClient, place: LinePlace<Uint8Array>): boolean {
  return client.range({ key: place.key }).kvs?.[0]?.createRevision === place.createRevision;
}
