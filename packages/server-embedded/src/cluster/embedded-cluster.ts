// A simulated etcd cluster in one process: members on their own ports serving one shared store,
// since a healthy cluster answers the same from every member; what is simulated is what clients
// see when members fail or change (docs/embedded-server.md, "Simulated cluster" and its limits).

import { etcdserverpb_Cluster } from '@etcdkit/client/protocol';
import type { AuthStore } from '../auth/auth-store.js';
import type { Clock } from '../clock.js';
import { type MemberIdentity, randomId } from '../consensus/member-identity.js';
import { type Membership, type MembershipState, quorumOf } from '../consensus/membership.js';
import type { EmbeddedEtcdOptions } from '../embedded-etcd.js';
import { EtcdServerError } from '../errors.js';
import { type EtcdVersion, etcdVersionTraits, parseEtcdVersion } from '../etcd-version.js';
import type { LeaseTable } from '../lease/lease-table.js';
import { createLogger, type ServerLogger } from '../logger.js';
import { ClusterCore } from '../member/cluster-core.js';
import type { MvccStore } from '../mvcc/store.js';
import type { VirtualClock } from '../virtual-clock.js';
import type { EmbeddedClusterMember } from './cluster-member.js';
import type { GateStatus } from './leader-gate.js';
import {
  assembleClusterMember,
  type MemberSettings,
  type OpenedMember,
  openMember,
} from './member-assembly.js';

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
    | 'etcdVersion'
    | 'version'
    | 'clusterId'
    | 'watchProgressNotifyIntervalMs'
  > {
  /** How many members, 1 to 9. Default 3. */
  readonly members?: number;
  /** The members' ports on 127.0.0.1, in member order. Default: free ports chosen by the system. */
  readonly ports?: readonly number[];
  /**
   * How long a member without a leader holds a call that needs one before it fails it as etcd
   * does (a write with "context deadline exceeded": Unknown on 3.4, DeadlineExceeded from 3.5 on;
   * a linearizable read with Unavailable
   * "etcdserver: request timed out", a lease keep-alive or time-to-live with "etcdserver: no
   * leader"), in ms of real time. Default 7000, etcd's request timeout with
   * its default election timeout (5 s + 2 x 1 s). `Infinity`: held until the member has a leader.
   */
  readonly requestTimeoutMs?: number;
}

/** Options of {@link EmbeddedCluster.startAdded}. */
export interface StartAddedOptions {
  /** The name it publishes. Default `memberN`, N the number of members the cluster has had. */
  readonly name?: string;
  /** Its port on 127.0.0.1. Default: a free port chosen by the system. */
  readonly port?: number;
}

/** etcd's request timeout with the default election timeout: 5 s + 2 x 1 s. */
const DEFAULT_REQUEST_TIMEOUT_MS = 7_000;
const MAX_MEMBERS = 9;
/**
 * How long a removed member goes on before its port closes, in ms of real time. etcd's removed
 * member stops once it learns of its removal: from a peer's answer at its next message, or, when it
 * applied the removal itself, 1 s later. A short pause is enough to let the answer to a
 * MemberRemove it served itself go out first.
 */
const REMOVED_MEMBER_EXIT_MS = 100;
/** etcd's readyPercent: a learner is in sync once it has this much of the leader's log. */
const LEARNER_READY_FRACTION = 0.9;

/** Several etcd members in this process, serving one store (see the file comment). */
export class EmbeddedCluster {
  /** The cluster id of every member's response headers. */
  readonly clusterId: bigint;
  /** The etcd release the members claim (Status' `version`), e.g. `3.5.30`. */
  readonly version: string;
  /** The etcd version the members answer as (their behaviour), e.g. `3.5`. */
  readonly etcdVersion: EtcdVersion;
  /** The MVCC store every member serves. */
  readonly store: MvccStore;
  /** The leases and the keys attached to them. */
  readonly leases: LeaseTable;
  /** The cluster's time; a {@link VirtualClock} when started with `clock: 'virtual'`. */
  readonly clock: Clock;
  /** Users, roles, permissions and tokens (tokens are valid on every member, as in etcd). */
  readonly auth: AuthStore;
  /** The core every member serves, its elections and its leader's work. */
  readonly #shared: ClusterCore;
  readonly #settings: MemberSettings;
  readonly #logger: ServerLogger;
  readonly #memberList: EmbeddedClusterMember[] = [];
  /** Members ever started, which default names count. */
  #started = 0;
  /** Started members whose name and client URLs wait for a leader to be published. */
  readonly #unpublished = new Set<EmbeddedClusterMember>();
  /** Removed members, until their port closes. */
  readonly #leaving = new Set<EmbeddedClusterMember>();
  /** Learners out of reach, with the log index they had then (raft's Match for them). */
  readonly #learnerMatch = new Map<bigint, number>();
  #currentLeader: EmbeddedClusterMember | undefined;
  #stopped: Promise<void> | undefined;

  private constructor(settings: MemberSettings, shared: ClusterCore) {
    this.#settings = settings;
    this.clusterId = settings.clusterId;
    this.version = settings.version;
    this.etcdVersion = settings.traits.version;
    this.#shared = shared;
    this.store = shared.core.store;
    this.leases = shared.core.leaseTable;
    this.clock = shared.core.clock;
    this.auth = shared.core.auth;
    this.#logger = settings.logger;
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
    const traits = etcdVersionTraits(parseEtcdVersion(options.etcdVersion));
    const settings: MemberSettings = {
      options,
      requestTimeoutMs,
      maxRequestBytes: options.maxRequestBytes ?? 1.5 * 1024 * 1024,
      clusterId: options.clusterId ?? randomId(),
      version: options.version ?? traits.release,
      traits,
      logger: createLogger(options.logger),
    };
    const { logger, clusterId } = settings;
    // The gates are asked for their member's strict reconfiguration checks once the cluster exists.
    let cluster: EmbeddedCluster | undefined;
    const memberIds = Array.from({ length: count }, () => randomId());
    const opened: OpenedMember[] = [];
    try {
      for (const [i, memberId] of memberIds.entries()) {
        opened.push(
          await openMember(settings, options.ports?.[i] ?? 0, {
            precheck: (path, message) =>
              cluster === undefined ? undefined : cluster.#precheck(memberId, path, message),
            isLearner: () => cluster?.isLearner(memberId) === true,
          }),
        );
      }
    } catch (error) {
      for (const { network } of opened) await network.abandon();
      throw error;
    }
    const identities = opened.map(
      ({ network }, i): MemberIdentity => ({
        clusterId,
        memberId: memberIds[i]!,
        name: `member${i}`,
        // There are no peer listeners; these only tell the members apart in MemberList.
        peerUrls: [`http://127.0.0.1:${network.listeners.urls[0]!.port + 10_000}`],
        clientUrls: network.advertisedUrls,
      }),
    );
    const shared = new ClusterCore({
      ...options,
      member: identities[0]!,
      maxRequestBytes: settings.maxRequestBytes,
      clientCertAuth: options.tls?.clientCertAuth === true,
      traits,
      version: settings.version,
      logger,
    });
    const { membership } = shared.core.services;
    for (const identity of identities.slice(1)) membership.addStarted(identity);
    cluster = new EmbeddedCluster(settings, shared);
    for (const [i, identity] of identities.entries()) {
      cluster.#memberList.push(cluster.#assemble(identity, opened[i]!));
    }
    cluster.#started = count;
    cluster.#watchMembership();
    cluster.#lead(cluster.#memberList[0]!, { newTerm: false });
    logger.info('started embedded cluster', {
      'etcd-version': settings.version,
      'cluster-id': clusterId.toString(16),
      members: cluster.#memberList.map((member) => `${member.name}=${member.endpoint}`),
    });
    return cluster;
  }

  /**
   * The started members in the cluster now, in the order they started (`member0`, `member1`...).
   * A member removed from the cluster leaves this list; one added joins it once started.
   */
  get members(): readonly EmbeddedClusterMember[] {
    return [...this.#memberList];
  }

  /** Every started member's client URL, in member order: give them all to a client. */
  get endpoints(): readonly string[] {
    return this.#memberList.map((member) => member.endpoint);
  }

  /** The member that leads now; undefined while the cluster has no quorum. */
  get leader(): EmbeddedClusterMember | undefined {
    return this.#currentLeader;
  }

  /** The raft term: it goes up by one with every election. */
  get term(): number {
    return this.#shared.core.proposals.term;
  }

  /**
   * How many voting members the cluster has now, started or not: its quorum is a majority of
   * them. A member added by MemberAdd counts at once.
   */
  get votingMembers(): number {
    return this.#membership.list().filter((member) => !member.isLearner).length;
  }

  /** The started member with this name or member id. */
  member(nameOrId: string | bigint): EmbeddedClusterMember | undefined {
    return this.#memberList.find((m) => m.name === nameOrId || m.memberId === nameOrId);
  }

  /**
   * Starts the member MemberAdd registered as `id`, as an operator starts etcd with
   * `--initial-cluster-state existing`: it serves on its own endpoint and publishes its name and
   * client URL (MemberList shows them, and it counts as started for etcd's strict checks). A
   * voting member takes part in elections from now on, so the quorum may come back with it. A
   * learner does not vote: it receives the log at once (it is in sync with the leader, so
   * MemberPromote makes it a voting member), and until promoted it refuses every call but Status
   * and serializable Range with "etcdserver: rpc not supported for learner".
   */
  async startAdded(id: bigint, options: StartAddedOptions = {}): Promise<EmbeddedClusterMember> {
    if (this.#stopped !== undefined) throw new Error('the cluster is stopped');
    const added = this.#membership.get(id);
    if (added === undefined) throw new RangeError(`no member ${id.toString(16)} in the cluster`);
    if (added.name !== '' || this.#memberList.some((member) => member.memberId === id)) {
      throw new Error(`member ${id.toString(16)} has already started`);
    }
    const name = options.name ?? `member${this.#started}`;
    if (this.#membership.list().some((member) => member.name === name)) {
      throw new RangeError(`a member is already named ${name}`);
    }
    this.#started++;
    const parts = await openMember(this.#settings, options.port ?? 0, {
      precheck: (path, message) => this.#precheck(id, path, message),
      isLearner: () => this.isLearner(id),
    });
    if (this.#stopped !== undefined || this.#membership.get(id) === undefined) {
      await parts.network.abandon();
      throw new Error(`member ${id.toString(16)} was removed, or the cluster stopped, meanwhile`);
    }
    const member = this.#assemble(
      {
        clusterId: this.clusterId,
        memberId: id,
        name,
        peerUrls: added.peerUrls,
        clientUrls: parts.network.advertisedUrls,
      },
      parts,
    );
    this.#memberList.push(member);
    this.#unpublished.add(member);
    this.#logger.info('started added member', { name, endpoint: member.endpoint });
    this.reachChanged();
    this.#publishStarted();
    return member;
  }

  /**
   * Makes `member` the leader in a new term, as a leader transfer does (etcd's MoveLeader). It
   * must be reachable (running, not partitioned, not paused) and the cluster must have a quorum.
   * Returns the new term. When it already leads, it wins a new election (the term still moves).
   */
  elect(member: EmbeddedClusterMember): number {
    if (this.#stopped !== undefined) throw new Error('the cluster is stopped');
    if (!this.#memberList.includes(member)) throw new RangeError('not a member of this cluster');
    if (!member.reachable) {
      throw new Error(`${member.name} cannot lead: it is stopped, partitioned or paused`);
    }
    if (this.isLearner(member.memberId)) {
      throw new Error(`${member.name} cannot lead: it is a learner`);
    }
    if (this.#currentLeader === undefined) {
      throw new Error(`${member.name} cannot lead: the cluster has no quorum`);
    }
    this.#lead(member, { newTerm: true });
    return this.term;
  }

  /** Stops every member; calls in flight fail. Safe to call twice. */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      this.#logger.info('stopping embedded cluster', {});
      this.#shared.stopLeaderWork();
      const members = [...this.#memberList, ...this.#leaving];
      await Promise.all(members.map((member) => member.close()));
      this.#logger.info('stopped embedded cluster', {});
    })();
    return this.#stopped;
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
    if (this.#currentLeader !== from) throw new EtcdServerError('NOT_LEADER');
    const target = this.#memberList.find((member) => member.memberId === targetId);
    if (target === undefined) throw new EtcdServerError('BAD_LEADER_TRANSFEREE');
    // raft ignores a transfer to a learner, which never leads: it never completes either.
    if (target.reachable && !this.isLearner(targetId)) {
      if (target !== from) this.#lead(target, { newTerm: true });
      return Promise.resolve();
    }
    return new Promise((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  }

  /** @internal A member's reach changed: elect, or lose the leader, as raft would. */
  reachChanged(): void {
    if (this.#stopped !== undefined) return;
    this.#trackLearners();
    // Learners do not vote, and every voting member counts, started or not (a member added but not
    // started is a vote lost).
    const reachable = this.#memberList.filter(
      (member) => member.reachable && !this.isLearner(member.memberId),
    );
    if (reachable.length < quorumOf(this.votingMembers)) {
      if (this.#currentLeader !== undefined) {
        this.#logger.warn('the cluster lost its quorum: no leader', {
          reachable: reachable.map((member) => member.name),
        });
        this.#currentLeader = undefined;
        this.#shared.stopLeaderWork();
      }
      this.#tellMembers();
      return;
    }
    const leader = this.#currentLeader;
    if (leader?.reachable) {
      this.#tellMembers();
      return;
    }
    // The next reachable member after the old leader wins the election (the first one, when the
    // old leader was removed).
    const from = leader === undefined ? 0 : this.#memberList.indexOf(leader) + 1;
    const ordered = [...this.#memberList.slice(from), ...this.#memberList.slice(0, from)];
    this.#lead(ordered.find((member) => reachable.includes(member))!, { newTerm: true });
  }

  /** @internal True while member `id` is a learner (added as one and not promoted). */
  isLearner(id: bigint): boolean {
    return this.#membership.get(id)?.isLearner === true;
  }

  get #membership(): Membership {
    return this.#shared.core.services.membership;
  }

  /**
   * Membership changes from now on go through etcd's strict checks, on what each member is
   * connected to; the cluster follows every change (quorum, removed members).
   */
  #watchMembership(): void {
    this.#membership.allowVotingChanges(
      {
        connected: (local, peer) =>
          this.member(local)?.reachable === true && this.member(peer)?.reachable === true,
        inSync: (id) => this.#learnerInSync(id),
      },
      { addNeedsConnectedQuorum: this.#settings.traits.version !== '3.4' },
    );
    this.#membership.subscribe((state) => this.#membershipChanged(state));
  }

  #membershipChanged(state: MembershipState): void {
    if (this.#stopped !== undefined) return;
    const ids = new Set(state.members.map((member) => member.id));
    for (const member of [...this.#memberList]) {
      if (ids.has(member.memberId)) continue;
      this.#memberList.splice(this.#memberList.indexOf(member), 1);
      this.#unpublished.delete(member);
      this.#logger.info('member removed from the cluster', { name: member.name });
      member.removeFromCluster(REMOVED_MEMBER_EXIT_MS);
      this.#leaving.add(member);
      void member.exited().then(() => this.#leaving.delete(member));
    }
    this.reachChanged();
  }

  /**
   * A member without a leader holds a membership change as a proposal, but etcd makes its strict
   * check before proposing: a change it refuses is refused at once, leader or not.
   */
  #precheck(local: bigint, path: string, message: unknown): GateStatus | undefined {
    try {
      if (path === etcdserverpb_Cluster.MemberAdd.path) {
        const request = message as { isLearner?: boolean | null };
        this.#membership.checkAdd(request.isLearner === true, local);
      } else if (path === etcdserverpb_Cluster.MemberRemove.path) {
        this.#membership.checkRemove((message as { ID?: bigint | null }).ID ?? 0n, local);
      }
    } catch (error) {
      if (error instanceof EtcdServerError) return error;
      throw error;
    }
    return undefined;
  }

  /**
   * etcd's check that a learner may be promoted: its log (raft's Match) has at least 90% of the
   * leader's. The log reaches a learner at once while it reaches the leader (there is one store);
   * out of reach, it keeps the index it had, and falls behind as the leader's log grows. A learner
   * never started has nothing.
   */
  #learnerInSync(id: bigint): boolean {
    const learner = this.member(id);
    if (this.#currentLeader === undefined || learner === undefined) return false;
    if (this.#unpublished.has(learner)) return false;
    const index = this.#shared.core.proposals.index;
    const match = learner.reachable ? index : (this.#learnerMatch.get(id) ?? 0);
    return match >= LEARNER_READY_FRACTION * index;
  }

  /** A learner that loses its reach keeps the log it had then (see learnerInSync). */
  #trackLearners(): void {
    for (const member of this.#memberList) {
      const id = member.memberId;
      if (member.reachable || !this.isLearner(id)) this.#learnerMatch.delete(id);
      else if (!this.#learnerMatch.has(id))
        this.#learnerMatch.set(id, this.#shared.core.proposals.index);
    }
  }

  /** Started members publish their name and client URLs once there is a leader to commit them. */
  #publishStarted(): void {
    if (this.#currentLeader === undefined) return;
    for (const member of [...this.#unpublished]) {
      this.#unpublished.delete(member);
      this.#membership.publish(member.memberId, member.name, [member.endpoint]);
    }
  }

  /** A member of this cluster, on its network and leader gate. */
  #assemble(identity: MemberIdentity, parts: OpenedMember): EmbeddedClusterMember {
    return assembleClusterMember(this.#shared, this.#settings, identity, parts, {
      moveLeader: (member, targetId, signal) => this.moveLeader(member, targetId, signal),
      elect: (member) => this.elect(member),
      reachChanged: () => this.reachChanged(),
    });
  }

  /**
   * `member` leads from now on. A new term is a new election: its empty entry takes a log index,
   * and the new leader gives every lease its full TTL again (etcd's lessor Promote).
   */
  #lead(member: EmbeddedClusterMember, options: { newTerm: boolean }): void {
    if (options.newTerm) this.#shared.electLeader();
    const previous = this.#currentLeader;
    this.#currentLeader = member;
    if (previous === undefined) this.#shared.startLeaderWork();
    if (previous !== member) {
      this.#logger.info('elected leader', { name: member.name, term: this.term });
    }
    this.#tellMembers();
    this.#publishStarted();
  }

  /** Each member learns who leads, as far as it can see. */
  #tellMembers(): void {
    const leaderId = this.#currentLeader?.memberId ?? 0n;
    for (const member of this.#memberList) {
      const seen = member.reachable ? leaderId : 0n;
      if (this.isLearner(member.memberId)) member.setLearnerLeader(seen);
      else member.setLeader(seen);
    }
  }
}
