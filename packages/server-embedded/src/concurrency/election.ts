// The election behind v3electionpb.Election (Observe is in observe.ts): Campaign runs the recipes'
// acquire skeleton and queue algorithm over the server's local client, as etcd runs Go's Election.

import { acquireInLine } from '@etcdkit/recipes/internal';
import type { ResponseHeader, WireKeyValue } from '../api/requests.js';
import { EtcdServerError } from '../errors.js';
import type { LocalClient } from './local-client.js';
import {
  createdAt,
  deleteIfCreatedAt,
  oldestUnder,
  putOp,
  queueKey,
  queuePrefix,
  rangedKv,
  sessionLease,
  waitInLine,
  withdraw,
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

/** A Campaign request. */
export interface CampaignRequest {
  readonly name: Uint8Array;
  /** The lease the key goes on; 0 for a fresh 60 s lease (see sessionLease). */
  readonly lease: bigint;
  readonly value: Uint8Array;
  /** Aborts the wait (the client went away); the candidate's key is then withdrawn. */
  readonly signal: AbortSignal;
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
  const halted = client.halted;
  const leaseId = sessionLease(client, request.lease);
  const prefix = queuePrefix(request.name);
  const key = queueKey(prefix, leaseId);
  return acquireInLine({
    take: async () => {
      const response = client.txn({
        compare: [createdAt(key, 0n)],
        success: [putOp(key, request.value, leaseId)],
        failure: [{ requestRange: { key } }],
      });
      const header = response.header ?? {};
      const existing = response.succeeded ? undefined : rangedKv(response.responses, 0);
      const rev = existing?.createRevision ?? header.revision ?? 0n;
      return { leader: { name: request.name, key, rev, lease: leaseId }, header, existing };
    },
    taken: ({ leader, existing }) => {
      if (existing !== undefined && !sameBytes(existing.value, request.value)) {
        proclaim(client, leader, request.value);
      }
    },
    // The take reads no holder: the first read of the line tells.
    atHead: () => undefined,
    wait: async ({ leader, header }): Promise<Elected> => {
      const lost = () => new EtcdServerError('ELECTION_SESSION_EXPIRED');
      const { signal } = request;
      const createRevision = leader.rev;
      await waitInLine(client, {
        prefix,
        key,
        createRevision,
        signal,
        halted,
        lost,
        vanished: 'never',
      });
      return { leader, header };
    },
    withdraw: (taken) => withdraw(client, halted, key, taken?.leader.rev),
  });
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
