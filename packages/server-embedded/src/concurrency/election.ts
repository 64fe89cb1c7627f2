// The election behind v3electionpb.Election (Observe is in observe.ts): Campaign joins the server's
// queue (queue.ts) with the candidate's value, as etcd runs Go's Election on the request's lease.

import type { ResponseHeader, WireKeyValue } from '../api/requests.js';
import { EtcdServerError } from '../errors.js';
import type { LocalClient } from './local-client.js';
import {
  createdAt,
  deleteIfCreatedAt,
  joinQueue,
  oldestUnder,
  putOp,
  type QueuePlace,
  type QueueRequest,
  queuePrefix,
  sessionLease,
} from './queue.js';

/** Who leads, as Campaign reports it and Proclaim and Resign take it back (etcd's LeaderKey). */
export interface LeaderKey {
  /** The election's name. */
  readonly name: Uint8Array;
  /** The candidate's key, `name/<lease id in hex>`. */
  readonly key: Uint8Array;
  /** The key's create revision: the leadership's epoch. */
  readonly rev: bigint;
  /** The lease the key is attached to. */
  readonly lease: bigint;
}

/** A Campaign request: a lease puts `value` up under `name + "/"`. */
export interface CampaignRequest extends QueueRequest {
  readonly value: Uint8Array;
}

/** What Campaign answers once elected. */
export interface Elected {
  readonly leader: LeaderKey;
  /** The header of the campaign's first txn, as etcd reports it (not of the moment elected). */
  readonly header: ResponseHeader;
}

/**
 * Puts `value` up for election under `name` and waits until every earlier candidate is gone. A
 * lease that already stands keeps its key and place; a different value is proclaimed at once.
 *
 * A candidate whose key vanished while it waited (its lease revoked or expired, or the key
 * deleted) is elected all the same once no earlier key is left, with the key it no longer has:
 * Go's Campaign (etcd 3.4 to 3.6) does not read its key again. On every failure the key is
 * withdrawn (a guarded delete), not only on cancellation as in Go, except when the server stops
 * or restarts.
 */
export async function campaign(client: LocalClient, request: CampaignRequest): Promise<Elected> {
  const leaderOf = (place: QueuePlace): LeaderKey => ({
    name: request.name,
    key: place.key,
    rev: place.createRevision,
    lease: place.lease,
  });
  const { place } = await joinQueue(client, request, {
    value: request.value,
    readsHolder: false,
    lostOnTurn: undefined,
    taken: (taken) => {
      if (taken.existing !== undefined && !sameBytes(taken.existing.value, request.value)) {
        proclaim(client, leaderOf(taken), request.value);
      }
    },
  });
  return { leader: leaderOf(place), header: place.header };
}

/**
 * Proclaim: puts `value` on the leader's key, attached to its lease, if the key is still the one
 * created at `leader.rev`; otherwise ELECTION_NOT_LEADER and nothing is written.
 */
export function proclaim(
  client: LocalClient,
  leader: LeaderKey,
  value: Uint8Array,
): ResponseHeader {
  const response = client.txn({
    compare: [createdAt(leader.key, leader.rev)],
    success: [putOp(leader.key, value, leader.lease)],
  });
  if (!response.succeeded) throw new EtcdServerError('ELECTION_NOT_LEADER');
  return response.header ?? {};
}

/** Resign: deletes the leader's key if it is still the one created at `leader.rev`; never fails. */
export function resign(client: LocalClient, leader: LeaderKey): ResponseHeader {
  return deleteIfCreatedAt(client, leader.key, leader.rev);
}

/** Leader: the candidate with the oldest key, or ELECTION_NO_LEADER. */
export function leader(
  client: LocalClient,
  name: Uint8Array,
): { readonly kv: WireKeyValue; readonly header: ResponseHeader } {
  const read = client.range(oldestUnder(queuePrefix(name)));
  const kv = read.kvs?.[0];
  if (kv === undefined) throw new EtcdServerError('ELECTION_NO_LEADER');
  return { kv, header: read.header ?? {} };
}

/**
 * The lease Proclaim and Resign act with: etcd opens a session on `leader.lease`, so lease 0 gets
 * a fresh 60 s lease (and Proclaim moves the key onto it).
 */
export function resumed(client: LocalClient, leader: LeaderKey): LeaderKey {
  return { ...leader, lease: sessionLease(client, leader.lease) };
}

function sameBytes(a: Uint8Array | null | undefined, b: Uint8Array): boolean {
  return Buffer.compare(a ?? new Uint8Array(0), b) === 0;
}
