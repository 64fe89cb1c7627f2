// What the gRPC services share: the member's identity, its raft log, the store and the KV applier.

import type { ResponseHeader } from '../api/requests.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { Clock } from '../clock.js';
import type { MemberIdentity } from '../consensus/member-identity.js';
import type { Member, Membership } from '../consensus/membership.js';
import type { ProposalLog } from '../consensus/proposals.js';
import type { EtcdVersionTraits } from '../etcd-version.js';
import type { KvApplier } from '../kv/kv-applier.js';
import type { LeaseApplier } from '../lease/lease-applier.js';
import type { LeaseTable } from '../lease/lease-table.js';
import type { Alarm, AlarmStore } from '../maintenance/alarms.js';
import type { BackendSize } from '../maintenance/backend-size.js';
import type { MvccStore } from '../mvcc/store.js';

/** The server state behind the services. */
export interface ServiceContext {
  readonly member: MemberIdentity;
  readonly proposals: ProposalLog;
  readonly store: MvccStore;
  readonly kv: KvApplier;
  /** The etcd release the server claims (Status). */
  readonly version: string;
  /** The etcd version the server answers as: what each version-dependent behaviour follows. */
  readonly traits: EtcdVersionTraits;
  readonly maxRequestBytes: number;
  /** --quota-backend-bytes, reported by Status. */
  readonly quotaBackendBytes: number;
  /** The server's time: lease expiry and other timers run on it. */
  readonly clock: Clock;
  /** The Lease requests. */
  readonly leases: LeaseApplier;
  /** The leases themselves (for snapshots). */
  readonly leaseTable: LeaseTable;
  /** Active alarms (Alarm, Status' errors). */
  readonly alarms: AlarmStore;
  /** The estimated database size (Status, the quota, Defragment). */
  readonly backend: BackendSize;
  /** The cluster's members (Cluster service). */
  readonly membership: Membership;
  /** Users, roles and permissions: who a call comes from and what it may do (every service). */
  readonly authorizer: Authorizer;
  /** Who leads the cluster as this member sees it (Status, MoveLeader). */
  readonly leaderView: LeaderView;
  /**
   * A member of a simulated cluster cut off from the quorum: what it had applied then, which it
   * answers from instead of the shared state (see {@link AppliedState}). Absent or undefined: the
   * member is up to date.
   */
  readonly appliedState?: () => AppliedState | undefined;
}

/**
 * What a member cut off from its cluster's quorum had applied when it was cut off. A real etcd
 * member applies nothing more then (nothing is committed without a leader), so what it answers
 * alone (serializable reads and read-only txns, Status, Hash, HashKV, Snapshot, LeaseLeases,
 * MemberList, every header's revision and raft term) comes from this state, never from what the
 * rest of the cluster did since.
 */
export interface AppliedState {
  /** The store's revision then. */
  readonly revision: number;
  /** The term of the last entry applied (etcd's Term(): headers and Status). */
  readonly raftTerm: number;
  /** The last committed and applied index (Status' raftIndex and raftAppliedIndex). */
  readonly raftIndex: number;
  /** The member's store as it was, never written again: what it reads, compares and hashes. */
  readonly store: MvccStore;
  /** A KV applier over {@link store} for the reads the member serves alone; it refuses writes. */
  readonly kv: KvApplier;
  /** Its backend's size and the part in use (Status). */
  readonly dbSize: number;
  readonly dbSizeInUse: number;
  /** Its leases with their granted TTLs, as a snapshot records them. */
  readonly leases: readonly { readonly id: bigint; readonly ttl: number }[];
  /** The ids of its leases in the order LeaseLeases lists them. */
  readonly leaseIds: readonly bigint[];
  /** The members it knows (MemberList). */
  readonly members: readonly Member[];
  /** Its active alarms, and their text as Status lists them. */
  readonly alarms: readonly Alarm[];
  readonly alarmErrors: readonly string[];
  /** Its own backend defragmented: the file shrinks to what is in use. */
  defragment(): void;
}

/** Who leads, as one member sees it, and how that member answers MoveLeader. */
export interface LeaderView {
  /** The leader's member id; `0n` when this member knows of no leader. */
  leader(): bigint;
  /**
   * MoveLeader sent to this member: hands leadership to `targetId`, or throws etcd's error. A
   * transfer that cannot complete waits until `signal` aborts (the call ends), as etcd's does.
   */
  moveLeader(targetId: bigint, signal: AbortSignal): void | Promise<void>;
}

/**
 * A header with the cluster fields set, keeping `header`'s revision (none: the current one, or
 * for a member cut off from the quorum the one it had).
 */
export function fillHeader(
  context: ServiceContext,
  header?: ResponseHeader | null,
): ResponseHeader {
  const applied = context.appliedState?.();
  return {
    clusterId: context.member.clusterId,
    memberId: context.member.memberId,
    revision: header?.revision
      ? header.revision
      : BigInt(applied?.revision ?? context.store.revision),
    raftTerm: BigInt(applied?.raftTerm ?? context.proposals.term),
  };
}

/** A header with the cluster fields set and `header`'s revision, even when that is none. */
export function fillHeaderWithoutRevision(
  context: ServiceContext,
  header?: ResponseHeader | null,
): ResponseHeader {
  return {
    clusterId: context.member.clusterId,
    memberId: context.member.memberId,
    revision: header?.revision ?? 0n,
    raftTerm: BigInt(context.appliedState?.()?.raftTerm ?? context.proposals.term),
  };
}
