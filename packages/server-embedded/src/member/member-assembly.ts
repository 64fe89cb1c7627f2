// One member over a server core: its services on its port and its fault injector. The single
// server (EmbeddedEtcd) and every member of a simulated cluster are put together here alone.
import type { MemberIdentity } from '../consensus/member-identity.js';
import { FaultInjector } from '../faults/fault-injector.js';
import type { AppliedState, LeaderView, ServiceContext } from '../services/context.js';
import type { MemberServer, ServedServices } from './member-server.js';
import { compactCore, type ServerCore, serviceContext } from './server-core.js';

/** What a member asks of what runs it: the single server, or a simulated cluster. */
export interface MemberHost {
  readonly leaderView: LeaderView;
  /** What the member answers from while cut off from the quorum; undefined when it is not. */
  appliedState?(): AppliedState | undefined;
  /** Closes the member's client connections; returns how many. */
  dropConnections(): number;
  /** Elects a new leader (a fault or a restart); returns the new raft term. */
  electLeader(): number;
  /** Told when a pause starts or ends. */
  pauseChanged?(paused: boolean): void;
}

/** What {@link assembleMember} needs besides the core, the member and its port. */
export interface MemberAssemblyOptions {
  readonly version: string;
  readonly progressNotifyIntervalMs?: number;
}

/** A member serving: the context its services answer from, the services, its faults. */
export interface AssembledMember {
  readonly context: ServiceContext;
  readonly served: ServedServices;
  readonly faults: FaultInjector;
}

/** Serves `identity`'s services over `core` on `network`, with their fault injector. */
export function assembleMember(
  core: ServerCore,
  identity: MemberIdentity,
  network: MemberServer,
  host: MemberHost,
  options: MemberAssemblyOptions,
): AssembledMember {
  const base = serviceContext(core, identity, options.version, host.leaderView);
  const context: ServiceContext =
    host.appliedState === undefined ? base : { ...base, appliedState: () => host.appliedState?.() };
  const served = network.serve(context, {
    progressNotifyIntervalMs: options.progressNotifyIntervalMs,
  });
  const faults = new FaultInjector(network.gate, {
    dropConnections: () => host.dropConnections(),
    electLeader: () => host.electLeader(),
    raiseNoSpace: () => core.services.alarms.raiseNoSpace(identity.memberId),
    compact: (revision) => compactCore(core, revision),
    expireLease: (leaseId) => core.services.leases.expire(leaseId),
    pauseChanged: (paused) => host.pauseChanged?.(paused),
  });
  return { context, served, faults };
}
