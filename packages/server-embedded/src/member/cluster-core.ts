// What the members of one cluster share: the server core they serve, its elections and its
// leader's background work. The single server is a cluster of one member over it
// (embedded-etcd.ts); a simulated cluster runs several (cluster/embedded-cluster.ts).
import type { Timer } from '../clock.js';
import type { MemberIdentity } from '../consensus/member-identity.js';
import type { EtcdVersionTraits } from '../etcd-version.js';
import type { ServerLogger } from '../logger.js';
import type { AutoCompactionOptions } from '../maintenance/auto-compaction.js';
import { Member, type MemberHost } from './member.js';
import type { MemberServer } from './member-server.js';
import {
  createServerCore,
  renewLeases,
  type ServerCore,
  type ServerCoreOptions,
  startLeaderWork,
} from './server-core.js';

/** Options of a {@link ClusterCore}, besides those of its server core. */
export interface ClusterCoreOptions extends ServerCoreOptions {
  /** The etcd version every member answers as. */
  readonly traits: EtcdVersionTraits;
  /** The release every member's Status reports; default the version's own. */
  readonly version?: string;
  readonly logger: ServerLogger;
  readonly watchProgressNotifyIntervalMs?: number;
  readonly leaseCheckIntervalMs?: number;
  readonly autoCompaction?: AutoCompactionOptions;
}

/** One server core, the members assembled over it, and who leads them (see the file comment). */
export class ClusterCore {
  /** The state every member serves. */
  readonly core: ServerCore;
  /** The release Status reports. */
  readonly version: string;
  /** The etcd version the members answer as. */
  readonly traits: EtcdVersionTraits;
  readonly #options: ClusterCoreOptions;
  #elect: () => number;
  /** The leader's timers; undefined while nobody leads. */
  #leaderTimers: Timer[] | undefined;

  /** A fresh, empty core (revision 1); `options.member` starts its raft ids and member list. */
  constructor(options: ClusterCoreOptions) {
    this.#options = options;
    this.traits = options.traits;
    this.version = options.version ?? options.traits.release;
    this.core = createServerCore(options);
    this.#elect = () => this.core.proposals.electLeader();
  }

  /** Elections go through `elect` from now on (a data dir logs every term). */
  recordTermsWith(elect: () => number): void {
    this.#elect = elect;
  }

  /** The one way a member is made: `identity` serving this core on `network`. */
  assemble(identity: MemberIdentity, network: MemberServer, host: MemberHost): Member {
    return new Member(this.core, identity, network, host, {
      version: this.version,
      traits: this.traits,
      progressNotifyIntervalMs: this.#options.watchProgressNotifyIntervalMs,
    });
  }

  /** The raft term goes up by one, as an election does; nothing else changes. Returns it. */
  nextTerm(): number {
    return this.#elect();
  }

  /**
   * A leader is elected (a restart, a transfer, a lost leader replaced): a new term, and it gives
   * every lease its full TTL again, as etcd's lessor Promote does. Returns the new term.
   */
  electLeader(): number {
    const term = this.#elect();
    renewLeases(this.core.leaseTable, this.core.clock);
    return term;
  }

  /** Someone leads: lease expiry and auto-compaction run (started once). */
  startLeaderWork(): void {
    this.#leaderTimers ??= startLeaderWork(this.core, {
      leaseCheckIntervalMs: this.#options.leaseCheckIntervalMs,
      autoCompaction: this.#options.autoCompaction,
      logger: this.#options.logger,
    });
  }

  /** Nobody leads (no quorum, a restart, the stop): the leader's timers stop. */
  stopLeaderWork(): void {
    for (const timer of this.#leaderTimers ?? []) timer.cancel();
    this.#leaderTimers = undefined;
  }
}
