// A member of a simulated cluster: its port and leader gate first (opened before the cluster
// exists, or when an added member starts), then the member assembled over the shared core.

import type { MemberIdentity } from '../consensus/member-identity.js';
import type { EmbeddedEtcdOptions } from '../embedded-etcd.js';
import type { EtcdVersionTraits } from '../etcd-version.js';
import type { ServerLogger } from '../logger.js';
import type { ClusterCore } from '../member/cluster-core.js';
import { MemberServer } from '../member/member-server.js';
import { MemberAppliedState } from './applied-state.js';
import { EmbeddedClusterMember } from './cluster-member.js';
import { type GateStatus, LeaderGate, PROPOSAL_DEADLINE_EXCEEDED } from './leader-gate.js';

/** What every member of a cluster is built with, also those started later. */
export interface MemberSettings {
  /** The cluster's options that every member's port is opened with. */
  readonly options: Pick<EmbeddedEtcdOptions, 'tls'>;
  readonly requestTimeoutMs: number;
  readonly maxRequestBytes: number;
  readonly clusterId: bigint;
  /** The release Status reports. */
  readonly version: string;
  /** The etcd version the members answer as. */
  readonly traits: EtcdVersionTraits;
  readonly logger: ServerLogger;
}

/** A member's port, listening, and the leader gate in front of it. */
export interface OpenedMember {
  readonly gate: LeaderGate;
  readonly network: MemberServer;
}

/** What a member asks of its cluster. */
export interface ClusterHooks {
  moveLeader(member: EmbeddedClusterMember, targetId: bigint, signal: AbortSignal): Promise<void>;
  elect(member: EmbeddedClusterMember): number;
  reachChanged(): void;
}

/** What a member's leader gate asks of its cluster. */
export interface MemberChecks {
  /** Refuses a call at once even without a leader (a member change etcd's strict check refuses). */
  precheck(path: string, message: unknown): GateStatus | undefined;
  /** True while the member is a learner: it then refuses what etcd's learners refuse. */
  isLearner(): boolean;
}

/** Opens a member's port, with its leader gate in front of the services it will serve. */
export async function openMember(
  settings: MemberSettings,
  port: number,
  checks: MemberChecks,
): Promise<OpenedMember> {
  const gate = new LeaderGate({
    requestTimeoutMs: settings.requestTimeoutMs,
    precheck: (path, message) => checks.precheck(path, message),
    isLearner: () => checks.isLearner(),
    ...(settings.traits.noQuorumDeadlineExceeded
      ? { proposalTimedOut: PROPOSAL_DEADLINE_EXCEEDED }
      : {}),
  });
  const network = await MemberServer.open(
    {
      port,
      tls: settings.options.tls,
      maxRequestBytes: settings.maxRequestBytes,
      middleware: [gate],
    },
    settings.logger,
  );
  return { gate, network };
}

/** Serves the member's services on its port and makes the member object. */
export function assembleClusterMember(
  cluster: ClusterCore,
  settings: MemberSettings,
  identity: MemberIdentity,
  parts: OpenedMember,
  hooks: ClusterHooks,
): EmbeddedClusterMember {
  // Calls held for a leader time out on the cluster's clock: virtual time, when the cluster has it.
  parts.gate.useClock(cluster.core.clock);
  let member: EmbeddedClusterMember | undefined;
  const served = cluster.assemble(identity, parts.network, {
    leaderView: {
      leader: () => member?.leaderId ?? 0n,
      moveLeader: (targetId, signal) => hooks.moveLeader(member!, targetId, signal),
    },
    // Cut off from the quorum, the member answers from what it had applied then.
    appliedState: () => member?.appliedState,
    dropConnections: () => member!.dropConnections(),
    electLeader: () => hooks.elect(member!),
    pauseChanged: () => hooks.reachChanged(),
    abandonWaits: () => parts.gate.abandonWaits(),
  });
  member = new EmbeddedClusterMember({
    member: served,
    leaderGate: parts.gate,
    control: {
      reachChanged: () => hooks.reachChanged(),
      capture: () => MemberAppliedState.capture(cluster.core),
    },
    logger: settings.logger,
  });
  return member;
}
