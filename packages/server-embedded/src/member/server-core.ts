// The state a server serves, apart from the network: the MVCC store, the leases, the raft log, the
// users and roles, and the appliers that change them. One member serves it on its own
// (EmbeddedEtcd); a simulated cluster serves one core from several members (EmbeddedCluster), so
// that every member answers from the same store, as the members of a healthy etcd cluster do.
import { etcdserverpb as pb } from '@etcdkit/client/protocol';
import { AuthStore } from '../auth/auth-store.js';
import { Authorizer } from '../auth/authorizer.js';
import type { Clock, Timer } from '../clock.js';
import type { MemberIdentity } from '../consensus/member-identity.js';
import { ProposalLog } from '../consensus/proposals.js';
import type { EtcdVersionTraits } from '../etcd-version.js';
import { KvApplier } from '../kv/kv-applier.js';
import { LeaseTable } from '../lease/lease-table.js';
import type { ServerLogger } from '../logger.js';
import { type AutoCompactionOptions, startAutoCompaction } from '../maintenance/auto-compaction.js';
import { effectiveQuota } from '../maintenance/quota.js';
import { MvccStore } from '../mvcc/store.js';
import type { LeaderView, ServiceContext } from '../services/context.js';
import {
  type ClockOption,
  createMemberServices,
  type MemberServices,
  resolveClock,
} from './member-services.js';

/** What {@link createServerCore} needs. */
export interface ServerCoreOptions {
  /** The member whose ids start the raft request ids and the member list. */
  readonly member: MemberIdentity;
  readonly maxRequestBytes: number;
  readonly maxTxnOps?: number;
  readonly quotaBackendBytes?: number;
  readonly clock?: ClockOption;
  readonly minLeaseTtl?: number;
  readonly authTokenTtlSeconds?: number;
  /** A client certificate's common name is the user of a call without a token. */
  readonly clientCertAuth: boolean;
}

/** The state behind the services, shared by every member that serves it. */
export interface ServerCore {
  readonly store: MvccStore;
  readonly leaseTable: LeaseTable;
  readonly proposals: ProposalLog;
  readonly clock: Clock;
  readonly auth: AuthStore;
  readonly authorizer: Authorizer;
  /** Leases, alarms, backend size, membership and the write guard. */
  readonly services: MemberServices;
  readonly kv: KvApplier;
  /** The quota in force, in bytes; negative: none. */
  readonly quotaBackendBytes: number;
  readonly maxRequestBytes: number;
  /** Most ops in one list of a txn (--max-txn-ops). */
  readonly maxTxnOps: number;
}

/** A fresh, empty core (revision 1). */
export function createServerCore(options: ServerCoreOptions): ServerCore {
  const leaseTable = new LeaseTable();
  const store = new MvccStore({ lessor: leaseTable });
  const proposals = new ProposalLog({
    memberId: options.member.memberId,
    maxRequestBytes: options.maxRequestBytes,
  });
  const clock = resolveClock(options.clock);
  const quotaBackendBytes = effectiveQuota(options.quotaBackendBytes);
  const auth = new AuthStore({ clock, tokenTtlSeconds: options.authTokenTtlSeconds });
  const authorizer = new Authorizer({
    store: auth,
    leases: leaseTable,
    clientCertAuth: options.clientCertAuth,
  });
  const services = createMemberServices({
    member: options.member,
    store,
    leaseTable,
    proposals,
    clock,
    quotaBytes: quotaBackendBytes,
    minLeaseTtl: options.minLeaseTtl,
    authorizer,
  });
  const maxTxnOps = options.maxTxnOps ?? 128;
  const kv = new KvApplier({
    store,
    lessor: leaseTable,
    proposals,
    maxTxnOps,
    guard: services.guard,
    authorizer,
  });
  return {
    store,
    leaseTable,
    proposals,
    clock,
    auth,
    authorizer,
    services,
    kv,
    quotaBackendBytes,
    maxRequestBytes: options.maxRequestBytes,
    maxTxnOps,
  };
}

/** The context the services of `member` answer from. */
export function serviceContext(
  core: ServerCore,
  member: MemberIdentity,
  answersAs: { readonly version: string; readonly traits: EtcdVersionTraits },
  leaderView: LeaderView,
): ServiceContext {
  return {
    member,
    proposals: core.proposals,
    store: core.store,
    kv: core.kv,
    version: answersAs.version,
    traits: answersAs.traits,
    maxRequestBytes: core.maxRequestBytes,
    quotaBackendBytes: core.quotaBackendBytes,
    clock: core.clock,
    leases: core.services.leases,
    leaseTable: core.leaseTable,
    alarms: core.services.alarms,
    backend: core.services.backend,
    membership: core.services.membership,
    authorizer: core.authorizer,
    leaderView,
  };
}

/** Compacts the store at `revision` through the KV applier, as a Compact request does. */
export function compactCore(core: ServerCore, revision: number): void {
  const request = { revision: BigInt(revision) };
  core.kv.compact(request, pb.CompactionRequest.encode(request).finish().length);
}

/**
 * Starts what the leader runs in the background: lease expiry checks and, when configured,
 * auto-compaction. Cancel the returned timers to stop them.
 */
export function startLeaderWork(
  core: ServerCore,
  options: {
    readonly leaseCheckIntervalMs?: number;
    readonly autoCompaction?: AutoCompactionOptions;
    readonly logger: ServerLogger;
  },
): Timer[] {
  const leases = core.services.leases;
  leases.startExpiryChecks(options.leaseCheckIntervalMs);
  const stopExpiry = { cancel: () => leases.stopExpiryChecks() };
  if (options.autoCompaction === undefined) return [stopExpiry];
  const compaction = startAutoCompaction(options.autoCompaction, {
    clock: core.clock,
    logger: options.logger,
    currentRevision: () => core.store.revision,
    compact: (revision) => compactCore(core, revision),
  });
  return compaction === undefined ? [stopExpiry] : [stopExpiry, compaction];
}

/**
 * Gives every lease its full TTL again from now, as a newly elected etcd leader does (lessor
 * Promote): nobody could keep a lease alive while there was no leader.
 */
export function renewLeases(leases: LeaseTable, clock: Clock): void {
  const now = clock.now();
  for (const lease of leases.all()) {
    if (Number.isFinite(lease.expiresAt)) leases.setExpiry(lease, now + lease.ttl * 1000);
  }
}
