// A simulated etcd cluster in one process: several members, each with its own endpoint and member
// id, serving one shared store. There is no replication to simulate: a healthy etcd cluster answers
// the same from every member, and that is what one store gives. What is simulated is what clients
// see when members fail: a member can be stopped (its port refuses connections), partitioned or
// paused (it knows of no leader, see LeaderGate), and the cluster elects a new leader, with a new
// raft term, whenever the members that can reach each other are a quorum; without one there is
// no leader anywhere, no write succeeds and no lease expires. A member cut off from the quorum
// answers what it may alone from a copy of what it had applied then (applied-state.ts), since the
// quorum goes on changing the shared store.
//
// Compared with a real etcd 3.4 cluster (test/conformance/cluster-conformance.test.ts), three
// things are not copied, all of them timing or term numbers, none the answers themselves:
// - A member learns at once that it has no leader. A real follower learns it an election timeout
//   after the leader's last heartbeat, and a leader that hears from no quorum steps down after one
//   (raft's check quorum); until then it still names the old leader (itself, for the leader).
// - Every election takes the next term. etcd 3.4 runs without pre-vote: a member alone starts an
//   election, in a new term, at every election timeout, and the leader elected once it is back
//   among a quorum takes a term above all of them (a real member alone for 14 s with a 500 ms
//   election timeout came back in term 21, not 3); a split vote costs a term too. Status and
//   response headers show the term of the last entry applied, so the growing term of a lone
//   member is not seen until then; neither cluster shows it.
// - A partitioned member that heals rejoins under the same leader. A real one comes back with the
//   higher term of its own elections, and by raft's rules its answer to the leader's next
//   heartbeat makes the leader step down: a new election, a short time without a leader
//   everywhere, a later term (the testkit cannot partition a real cluster; by hand, a 3.4.23
//   member cut off in a network namespace for a few seconds came back with the cluster in term 46,
//   up from 4).

import type { AuthStore } from '../auth/auth-store.js';
import type { Clock, Timer } from '../clock.js';
import type { EmbeddedEtcdOptions } from '../embedded-etcd.js';
import { DEFAULT_ETCD_VERSION } from '../embedded-etcd.js';
import { EtcdServerError } from '../errors.js';
import { FaultInjector } from '../faults/fault-injector.js';
import type { LeaseTable } from '../lease/lease-table.js';
import type { MvccStore } from '../mvcc/store.js';
import { createLogger, type ServerLogger } from '../server/logger.js';
import { type MemberIdentity, randomId } from '../server/member.js';
import { MemberServer } from '../server/member-server.js';
import {
  compactCore,
  createServerCore,
  renewLeases,
  type ServerCore,
  serviceContext,
  startLeaderWork,
} from '../server/server-core.js';
import type { ServiceContext } from '../services/context.js';
import type { VirtualClock } from '../virtual-clock.js';
import { MemberAppliedState } from './applied-state.js';
import { EmbeddedClusterMember } from './cluster-member.js';
import { LeaderGate } from './leader-gate.js';

/** Options of {@link EmbeddedCluster.start}. Every limit defaults to etcd's default. */
export interface EmbeddedClusterOptions
  extends Pick<
    EmbeddedEtcdOptions,
    | 'tls'
    | 'authTokenTtlSeconds'
    | 'logger'
    | 'autoCompaction'
    | 'maxTxnOps'
    | 'maxRequestBytes'
    | 'quotaBackendBytes'
    | 'clock'
    | 'minLeaseTtl'
    | 'leaseCheckIntervalMs'
    | 'version'
    | 'clusterId'
    | 'watchProgressNotifyIntervalMs'
  > {
  /** How many members, 1 to 9. Default 3. */
  readonly members?: number;
  /** The members' ports on 127.0.0.1, in member order. Default: free ports chosen by the system. */
  readonly ports?: readonly number[];
  /**
   * How long a member without a leader holds a call that needs one before it fails it as etcd 3.4
   * does (a write with Unknown "context deadline exceeded", a linearizable read with Unavailable
   * "etcdserver: request timed out", a lease keep-alive or time-to-live with "etcdserver: no
   * leader"), in ms of real time. Default 7000, etcd's request timeout with
   * its default election timeout (5 s + 2 x 1 s). `Infinity`: held until the member has a leader.
   */
  readonly requestTimeoutMs?: number;
}

/** etcd's request timeout with the default election timeout: 5 s + 2 x 1 s. */
const DEFAULT_REQUEST_TIMEOUT_MS = 7_000;
const MAX_MEMBERS = 9;

/** Several etcd members in this process, serving one store (see the file comment). */
export class EmbeddedCluster {
  /** The members, in order (`member0`, `member1`...). */
  readonly members: readonly EmbeddedClusterMember[];
  /** Every member's client URL, in member order: give them all to a client. */
  readonly endpoints: readonly string[];
  /** The cluster id of every member's response headers. */
  readonly clusterId: bigint;
  /** The etcd version the members claim (Status' `version`). */
  readonly version: string;
  /** The MVCC store every member serves. */
  readonly store: MvccStore;
  /** The leases and the keys attached to them. */
  readonly leases: LeaseTable;
  /** The cluster's time; a {@link VirtualClock} when started with `clock: 'virtual'`. */
  readonly clock: Clock;
  /** Users, roles, permissions and tokens (tokens are valid on every member, as in etcd). */
  readonly auth: AuthStore;
  private readonly core: ServerCore;
  private readonly logger: ServerLogger;
  private readonly leaderWork: () => Timer[];
  private timers: Timer[] = [];
  private currentLeader: EmbeddedClusterMember | undefined;
  private stopped: Promise<void> | undefined;

  private constructor(init: {
    members: EmbeddedClusterMember[];
    clusterId: bigint;
    version: string;
    core: ServerCore;
    logger: ServerLogger;
    leaderWork: () => Timer[];
  }) {
    this.members = init.members;
    this.endpoints = init.members.map((member) => member.endpoint);
    this.clusterId = init.clusterId;
    this.version = init.version;
    this.core = init.core;
    this.store = init.core.store;
    this.leases = init.core.leaseTable;
    this.clock = init.core.clock;
    this.auth = init.core.auth;
    this.logger = init.logger;
    this.leaderWork = init.leaderWork;
  }

  /** Starts a cluster with a fresh, empty store (revision 1); the first member leads. */
  static start(
    options: EmbeddedClusterOptions & { readonly clock: 'virtual' | VirtualClock },
  ): Promise<EmbeddedCluster & { readonly clock: VirtualClock }>;
  static start(options?: EmbeddedClusterOptions): Promise<EmbeddedCluster>;
  static async start(options: EmbeddedClusterOptions = {}): Promise<EmbeddedCluster> {
    const count = options.members ?? 3;
    if (!Number.isInteger(count) || count < 1 || count > MAX_MEMBERS) {
      throw new RangeError(`members must be an integer from 1 to ${MAX_MEMBERS}, got ${count}`);
    }
    if (options.ports !== undefined && options.ports.length !== count) {
      throw new RangeError(
        `ports must list one port per member (${count}), got ${options.ports.length}`,
      );
    }
    const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    if (Number.isNaN(requestTimeoutMs) || requestTimeoutMs <= 0) {
      throw new RangeError(`requestTimeoutMs must be positive, got ${requestTimeoutMs}`);
    }
    const maxRequestBytes = options.maxRequestBytes ?? 1.5 * 1024 * 1024;
    const logger = createLogger(options.logger);
    const gates: LeaderGate[] = [];
    const networks: MemberServer[] = [];
    try {
      for (let i = 0; i < count; i++) {
        const gate = new LeaderGate({ requestTimeoutMs });
        const network = await MemberServer.open(
          {
            port: options.ports?.[i] ?? 0,
            tls: options.tls,
            maxRequestBytes,
            interceptors: [gate.interceptor()],
          },
          logger,
        );
        gates.push(gate);
        networks.push(network);
      }
    } catch (error) {
      for (const network of networks) {
        await network.listeners.close();
        network.server.forceShutdown();
      }
      throw error;
    }
    const clusterId = options.clusterId ?? randomId();
    const identities = networks.map(
      (network, i): MemberIdentity => ({
        clusterId,
        memberId: randomId(),
        name: `member${i}`,
        // There are no peer listeners; these only tell the members apart in MemberList.
        peerUrls: [`http://127.0.0.1:${network.listeners.urls[0]!.port + 10_000}`],
        clientUrls: network.advertisedUrls,
      }),
    );
    const version = options.version ?? DEFAULT_ETCD_VERSION;
    const core = createServerCore({
      ...options,
      member: identities[0]!,
      maxRequestBytes,
      clientCertAuth: options.tls?.clientCertAuth === true,
    });
    for (const identity of identities.slice(1)) core.services.membership.addStarted(identity);
    // The members need the cluster and the cluster needs the members: bound once both exist.
    let cluster: EmbeddedCluster | undefined;
    const members = identities.map((identity, i) => {
      const network = networks[i]!;
      let member: EmbeddedClusterMember | undefined;
      const context: ServiceContext = {
        ...serviceContext(core, identity, version, {
          leader: () => member?.leaderId ?? 0n,
          moveLeader: (targetId, signal) => cluster?.moveLeader(member!, targetId, signal),
        }),
        // Cut off from the quorum, the member answers from what it had applied then.
        appliedState: () => member?.appliedState,
      };
      const served = network.serve(context, {
        progressNotifyIntervalMs: options.watchProgressNotifyIntervalMs,
      });
      const faults = new FaultInjector(network.gate, {
        dropConnections: () => member!.dropConnections(),
        electLeader: () => cluster!.elect(member!),
        raiseNoSpace: () => core.services.alarms.raiseNoSpace(identity.memberId),
        compact: (revision) => compactCore(core, revision),
        expireLease: (leaseId) => core.services.leases.expire(leaseId),
        pauseChanged: () => cluster?.reachChanged(),
      });
      member = new EmbeddedClusterMember({
        identity,
        network,
        served,
        leaderGate: gates[i]!,
        faults,
        control: {
          reachChanged: () => cluster?.reachChanged(),
          capture: () => MemberAppliedState.capture(core),
        },
        logger,
      });
      return member;
    });
    cluster = new EmbeddedCluster({
      members,
      clusterId,
      version,
      core,
      logger,
      leaderWork: () =>
        startLeaderWork(core, {
          leaseCheckIntervalMs: options.leaseCheckIntervalMs,
          autoCompaction: options.autoCompaction,
          logger,
        }),
    });
    cluster.lead(members[0]!, { newTerm: false });
    logger.info('started embedded cluster', {
      'etcd-version': version,
      'cluster-id': clusterId.toString(16),
      members: members.map((member) => `${member.name}=${member.endpoint}`),
    });
    return cluster;
  }

  /** The member that leads now; undefined while the cluster has no quorum. */
  get leader(): EmbeddedClusterMember | undefined {
    return this.currentLeader;
  }

  /** The raft term: it goes up by one with every election. */
  get term(): number {
    return this.core.proposals.term;
  }

  /** The member with this name or member id. */
  member(nameOrId: string | bigint): EmbeddedClusterMember | undefined {
    return this.members.find((m) => m.name === nameOrId || m.memberId === nameOrId);
  }

  /**
   * Makes `member` the leader in a new term, as a leader transfer does (etcd's MoveLeader). It
   * must be reachable (running, not partitioned, not paused) and the cluster must have a quorum.
   * Returns the new term. When it already leads, it wins a new election (the term still moves).
   */
  elect(member: EmbeddedClusterMember): number {
    if (this.stopped !== undefined) throw new Error('the cluster is stopped');
    if (!this.members.includes(member)) throw new RangeError('not a member of this cluster');
    if (!member.reachable) {
      throw new Error(`${member.name} cannot lead: it is stopped, partitioned or paused`);
    }
    if (this.currentLeader === undefined) {
      throw new Error(`${member.name} cannot lead: the cluster has no quorum`);
    }
    this.lead(member, { newTerm: true });
    return this.term;
  }

  /** Stops every member; calls in flight fail. Safe to call twice. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.logger.info('stopping embedded cluster', {});
      for (const timer of this.timers) timer.cancel();
      this.timers = [];
      await Promise.all(this.members.map((member) => member.close()));
      this.logger.info('stopped embedded cluster', {});
    })();
    return this.stopped;
  }

  /** Stops the cluster, for `await using cluster = await EmbeddedCluster.start()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /**
   * @internal MoveLeader sent to `from`: etcd's checks, in etcd's order. A transfer to a member
   * that cannot be reached never completes, and etcd waits for it on the call's own context: the
   * call is answered by nothing but its end (`signal`).
   */
  moveLeader(from: EmbeddedClusterMember, targetId: bigint, signal: AbortSignal): Promise<void> {
    if (this.currentLeader !== from) throw new EtcdServerError('NOT_LEADER');
    const target = this.members.find((member) => member.memberId === targetId);
    if (target === undefined) throw new EtcdServerError('BAD_LEADER_TRANSFEREE');
    if (target.reachable) {
      if (target !== from) this.lead(target, { newTerm: true });
      return Promise.resolve();
    }
    return new Promise((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  }

  /** @internal A member's reach changed: elect, or lose the leader, as raft would. */
  reachChanged(): void {
    if (this.stopped !== undefined) return;
    const reachable = this.members.filter((member) => member.reachable);
    const quorum = Math.floor(this.members.length / 2) + 1;
    if (reachable.length < quorum) {
      if (this.currentLeader !== undefined) {
        this.logger.warn('the cluster lost its quorum: no leader', {
          reachable: reachable.map((member) => member.name),
        });
        this.currentLeader = undefined;
        for (const timer of this.timers) timer.cancel();
        this.timers = [];
      }
      this.tellMembers();
      return;
    }
    const leader = this.currentLeader;
    if (leader?.reachable) {
      this.tellMembers();
      return;
    }
    // The next reachable member after the old leader wins the election.
    const from = leader === undefined ? 0 : this.members.indexOf(leader) + 1;
    const ordered = [...this.members.slice(from), ...this.members.slice(0, from)];
    this.lead(ordered.find((member) => member.reachable)!, { newTerm: true });
  }

  /**
   * `member` leads from now on. A new term is a new election: its empty entry takes a log index,
   * and the new leader gives every lease its full TTL again (etcd's lessor Promote).
   */
  private lead(member: EmbeddedClusterMember, options: { newTerm: boolean }): void {
    if (options.newTerm) {
      this.core.proposals.electLeader();
      renewLeases(this.core.leaseTable, this.core.clock);
    }
    const previous = this.currentLeader;
    this.currentLeader = member;
    if (previous === undefined) this.timers = this.leaderWork();
    if (previous !== member) {
      this.logger.info('elected leader', { name: member.name, term: this.term });
    }
    this.tellMembers();
  }

  /** Each member learns who leads, as far as it can see. */
  private tellMembers(): void {
    const leaderId = this.currentLeader?.memberId ?? 0n;
    for (const member of this.members) member.setLeader(member.reachable ? leaderId : 0n);
  }
}
