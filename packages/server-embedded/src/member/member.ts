// One member over a server core: its services on its port, its fault injector, and its stop and
// start. The single server and every member of a simulated cluster are this same object.
import type { MemberIdentity } from '../consensus/member-identity.js';
import type { EtcdVersionTraits } from '../etcd-version.js';
import { FaultInjector } from '../faults/fault-injector.js';
import type { AppliedState, LeaderView, ServiceContext } from '../services/context.js';
import type { WatchableStore } from '../watch/watchable-store.js';
import type { MemberServer, ServedServices } from './member-server.js';
import { compactCore, type ServerCore, serviceContext } from './server-core.js';

/** What a member asks of what runs it: the single server, or a simulated cluster. */
export interface MemberHost {
  readonly leaderView: LeaderView;
  /** What the member answers from while cut off from the quorum; undefined when it is not. */
  appliedState?(): AppliedState | undefined;
  /** Closes the member's client connections; returns how many. */
  dropConnections(): number;
  /** Elects a new leader (a fault); returns the new raft term. */
  electLeader(): number;
  /** Told when a pause starts or ends. */
  pauseChanged?(paused: boolean): void;
  /** Gives up the calls held in front of the services (a cluster member's leader gate). */
  abandonWaits?(): void;
}

/** What a member serves with besides the core, its identity and its port. */
export interface MemberOptions {
  /** The release Status reports. */
  readonly version: string;
  readonly traits: EtcdVersionTraits;
  readonly progressNotifyIntervalMs?: number;
}

/** A member serving `identity`'s services over a core on its own port. */
export class Member {
  readonly identity: MemberIdentity;
  readonly network: MemberServer;
  readonly #served: ServedServices;
  readonly faults: FaultInjector;
  readonly #host: MemberHost;

  /** Serves `identity`'s services over `core` on `network`, with their fault injector. */
  constructor(
    core: ServerCore,
    identity: MemberIdentity,
    network: MemberServer,
    host: MemberHost,
    options: MemberOptions,
  ) {
    this.identity = identity;
    this.network = network;
    this.#host = host;
    const base = serviceContext(core, identity, options, host.leaderView);
    const context: ServiceContext =
      host.appliedState === undefined
        ? base
        : { ...base, appliedState: () => host.appliedState?.() };
    this.#served = network.serve(context, {
      progressNotifyIntervalMs: options.progressNotifyIntervalMs,
    });
    this.faults = new FaultInjector(network.gate, {
      dropConnections: () => host.dropConnections(),
      electLeader: () => host.electLeader(),
      raiseNoSpace: () => core.services.alarms.raiseNoSpace(identity.memberId),
      compact: (revision) => compactCore(core, revision),
      expireLease: (leaseId) => core.services.leases.expire(leaseId),
      pauseChanged: (paused) => host.pauseChanged?.(paused),
    });
  }

  /** The watchers of this member's Watch service, Lock and Election waits. */
  get watchable(): WatchableStore {
    return this.#served.watchable;
  }

  /** Connections from clients open now. */
  get connectionCount(): number {
    return this.network.listeners.connectionCount;
  }

  /** Closes every client connection and keeps listening; returns how many. */
  dropConnections(): number {
    return this.network.listeners.dropConnections();
  }

  /**
   * Stops listening, as a crash would: every connection closes, calls in flight fail, streams
   * end. The state stays, and {@link listen} serves it again.
   */
  async stopListening(): Promise<void> {
    // Before the connections close: their cancelled calls must not undo what they queued.
    this.#served.dropWaits();
    await this.network.listeners.close();
    // Their connections are gone; what is still held is given up, the streams end now.
    this.#host.abandonWaits?.();
    this.#served.closeWatchStreams();
  }

  /** Listens again on the same port(s). */
  listen(): Promise<void> {
    return this.network.listeners.listen();
  }

  /** Ends the member for good: waits, streams, watchers, listeners and the gRPC server. */
  async close(): Promise<void> {
    this.#served.dropWaits();
    this.#served.closeWatchStreams();
    this.#served.watchable.close();
    await this.network.listeners.close();
    this.#host.abandonWaits?.();
    this.network.engine.shutdown();
  }
}
