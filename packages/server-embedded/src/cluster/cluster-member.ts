// One member of a simulated cluster: its own endpoint, member id, call gate and leader gate, over
// the store the whole cluster shares. What a test does to a member (stop, start, partition, pause)
// changes what it can reach; the cluster then decides who leads and what each member knows.

import type { FaultInjector } from '../faults/fault-injector.js';
import { closedLatch } from '../latch.js';
import type { ServerLogger } from '../logger.js';
import type { Member } from '../member/member.js';
import type { AppliedState } from '../services/context.js';
import type { WatchableStore } from '../watch/watchable-store.js';
import type { LeaderGate } from './leader-gate.js';

/** What a member tells its cluster, and asks it. */
export interface MemberControl {
  /** The member's reach changed (stopped, started, partitioned, healed, paused, resumed). */
  reachChanged(): void;
  /** The state the cluster is in now: what a member that loses its leader has applied. */
  capture(): AppliedState;
}

/** @internal What the cluster builds a member from. */
export interface ClusterMemberParts {
  /** The member serving, assembled over the cluster's core. */
  readonly member: Member;
  readonly leaderGate: LeaderGate;
  readonly control: MemberControl;
  readonly logger: ServerLogger;
}

/** Options of {@link EmbeddedClusterMember.restart}. */
export interface MemberRestartOptions {
  /** How long the member stays down (its port refuses connections), in ms. Default 0. */
  readonly downtimeMs?: number;
}

/** A member of an {@link EmbeddedCluster}. */
export class EmbeddedClusterMember {
  /** The member's name (`member0`, `member1`...), as MemberList reports it. */
  readonly name: string;
  /** The member id of its response headers, Status and MemberList. */
  readonly memberId: bigint;
  /** Its client URL, `http://127.0.0.1:PORT` (`https://` with TLS). */
  readonly endpoint: string;
  /** The port of {@link endpoint}; it stays the same across stop and start. */
  readonly port: number;
  /**
   * Fault injection on this member only: delays, failures, a pause. A pause also takes the member
   * out of the cluster (a stopped process sends no heartbeats), like {@link pause}.
   */
  readonly faults: FaultInjector;
  /** The watchers of this member's Watch service (tests may count them). */
  readonly watchable: WatchableStore;
  readonly #member: Member;
  readonly #leaderGate: LeaderGate;
  readonly #control: MemberControl;
  readonly #logger: ServerLogger;
  #isRunning = true;
  #isPartitioned = false;
  #isRemoved = false;
  /** Undefined until the cluster first tells it who leads (a member may start without a leader). */
  #knownLeader: bigint | undefined;
  #applied: AppliedState | undefined;
  // Stops and starts run one after the other, so a stop never races a listen.
  #lifecycle: Promise<void> = Promise.resolve();
  #ended = false;
  readonly #exit = closedLatch();

  /** @internal Members are made by EmbeddedCluster.start(). */
  constructor(parts: ClusterMemberParts) {
    const { member } = parts;
    this.name = member.identity.name;
    this.memberId = member.identity.memberId;
    this.#member = member;
    this.#leaderGate = parts.leaderGate;
    this.faults = member.faults;
    this.watchable = member.watchable;
    this.#control = parts.control;
    this.#logger = parts.logger;
    const url = member.network.listeners.urls[0]!;
    this.endpoint = member.network.advertisedUrls[0] ?? `http://127.0.0.1:${url.port}`;
    this.port = url.port;
  }

  /** True unless stopped. */
  get running(): boolean {
    return this.#isRunning;
  }

  /** True between {@link partition} and {@link heal}. */
  get partitioned(): boolean {
    return this.#isPartitioned;
  }

  /** True while paused ({@link pause} or `faults.pause()`). */
  get paused(): boolean {
    return this.faults.paused;
  }

  /** True once MemberRemove took it out of the cluster (its port closes a moment later). */
  get removed(): boolean {
    return this.#isRemoved;
  }

  /**
   * True when the member can reach the others: running, not partitioned, not paused, not removed.
   */
  get reachable(): boolean {
    return this.#isRunning && !this.#isPartitioned && !this.faults.paused && !this.#isRemoved;
  }

  /**
   * Resolves once the member is gone for good, as an etcd process exits: after it was removed from
   * the cluster (its port refuses connections from then on), or when the cluster stops.
   */
  exited(): Promise<void> {
    return this.#exit.opened;
  }

  /** The leader's member id as this member knows it; `0n` when it knows of none. */
  get leaderId(): bigint {
    return this.#knownLeader ?? 0n;
  }

  /** True when this member leads the cluster. */
  get isLeader(): boolean {
    return this.#knownLeader === this.memberId;
  }

  /** Connections from clients open now. */
  get connectionCount(): number {
    return this.#member.connectionCount;
  }

  /**
   * Stops the member as a crash would: its port refuses connections, every connection closes and
   * calls in flight fail (nothing they did not already do is applied). If it led, the others elect
   * a new leader when they still have a quorum. The cluster's data stays.
   */
  stop(): Promise<void> {
    return this.#inOrder(() => this.#stopNow());
  }

  /** Starts a stopped member again on the same port; it catches up at once. */
  start(): Promise<void> {
    return this.#inOrder(() => this.#startNow());
  }

  /** {@link stop}, then after `downtimeMs`, {@link start}. */
  restart(options: MemberRestartOptions = {}): Promise<void> {
    return this.#inOrder(async () => {
      await this.#stopNow();
      const downtime = options.downtimeMs ?? 0;
      if (downtime > 0) await new Promise((resolve) => setTimeout(resolve, downtime));
      await this.#startNow();
    });
  }

  /**
   * Cuts the member off from the other members (its clients still reach it). It knows of no
   * leader from now on: calls with require-leader fail with "etcdserver: no leader" and its open
   * require-leader streams end with it; calls that need the leader are held until {@link heal}
   * or the request timeout; serializable reads, read-only serializable txns, watches, Status,
   * Hash, HashKV and Snapshot see the state as it is now, whatever the others do meanwhile. If it
   * led, the others elect a new leader when they have a quorum.
   */
  partition(): void {
    if (this.#isPartitioned || this.#ended) return;
    this.#isPartitioned = true;
    this.#logger.info('member partitioned', { name: this.name });
    this.#control.reachChanged();
  }

  /** Ends a {@link partition}: the member rejoins, catches up, and held calls go on. */
  heal(): void {
    if (!this.#isPartitioned || this.#ended) return;
    this.#isPartitioned = false;
    this.#logger.info('member healed', { name: this.name });
    this.#control.reachChanged();
  }

  /**
   * Pauses the member as SIGSTOP would: connections stay open, nothing is answered, and the other
   * members, missing its heartbeats, elect a new leader if it led (see `faults.pause()`).
   */
  pause(): void {
    this.faults.pause();
  }

  /** Ends a {@link pause}: held calls go on, and the member rejoins. */
  resume(): void {
    this.faults.resume();
  }

  /** Closes every client connection of this member (it keeps listening). Returns how many. */
  dropConnections(): number {
    const dropped = this.#member.dropConnections();
    this.#logger.info('dropped client connections', { name: this.name, connections: dropped });
    return dropped;
  }

  /**
   * @internal What the member had applied when it lost its leader, which it answers from alone;
   * undefined while it has one (it is then up to date with the cluster).
   */
  get appliedState(): AppliedState | undefined {
    return this.#applied;
  }

  /** @internal The cluster tells the member who leads as it can see (0n: nobody). */
  setLeader(leaderId: bigint): void {
    if (leaderId === this.#knownLeader) return;
    const had = this.#knownLeader;
    this.#knownLeader = leaderId;
    if (leaderId === 0n) {
      this.#logger.info('member lost its leader', { name: this.name });
      // Captured before anything else can change the shared state: this is all it applied (a
      // learner cut off before its promotion has it already).
      const applied = this.#applied ?? this.#control.capture();
      this.#applied = applied;
      this.#leaderGate.loseLeader();
      // Its watchers go on from what it applied: replays up to it, progress at it, nothing newer.
      this.watchable.hold(applied);
    } else {
      if (had === 0n) this.#logger.info('member found a leader', { name: this.name });
      // Caught up with the cluster at once: it answers from the shared state again, and its
      // watchers catch up from the shared history (canceled if it was compacted past them).
      this.#applied = undefined;
      this.watchable.release();
      this.#leaderGate.regainLeader();
    }
  }

  /**
   * @internal The cluster tells a learner who leads as it can see. A learner never campaigns, so
   * raft never clears the leader it knows (a follower's is cleared when its election timer fires,
   * which a learner's never does): cut off (0n), it goes on naming the last leader it heard from,
   * and calls sent with require-leader pass, as on etcd 3.4.23 (a learner still named its leader
   * with every voting member killed); it answers from what it had applied, as any member cut off.
   */
  setLearnerLeader(leaderId: bigint): void {
    if (leaderId !== 0n || this.#knownLeader === undefined) {
      if (leaderId !== 0n && this.#applied !== undefined && leaderId === this.#knownLeader) {
        // Reached again by the leader it names: caught up at once.
        this.#applied = undefined;
        this.watchable.release();
      }
      this.setLeader(leaderId);
      return;
    }
    if (this.#applied !== undefined) return;
    this.#logger.info('learner cut off from its leader', { name: this.name });
    const applied = this.#control.capture();
    this.#applied = applied;
    this.watchable.hold(applied);
  }

  /**
   * @internal MemberRemove took the member out of the cluster: it knows of no leader from now on
   * (it hears from no peer), and after `exitAfterMs` it ends as a removed etcd member does: its
   * process exits, its port refuses connections. The delay lets the answer to a MemberRemove it
   * served itself go out.
   */
  removeFromCluster(exitAfterMs: number): void {
    if (this.#isRemoved || this.#ended) return;
    this.#isRemoved = true;
    this.setLeader(0n);
    this.#logger.warn('the member has been permanently removed from the cluster', {
      name: this.name,
    });
    const timer = setTimeout(() => void this.close(), exitAfterMs);
    timer.unref();
  }

  /** @internal Ends the member for good (the cluster stops, or it was removed). */
  async close(): Promise<void> {
    if (this.#ended) return this.#exit.opened;
    this.#ended = true;
    await this.#lifecycle;
    this.faults.clear();
    await this.#member.close();
    this.#isRunning = false;
    this.#exit.open();
  }

  #inOrder(step: () => Promise<void>): Promise<void> {
    if (this.#isRemoved) {
      return Promise.reject(new Error(`${this.name} was removed from the cluster`));
    }
    if (this.#ended) return Promise.reject(new Error('the cluster is stopped'));
    const next = this.#lifecycle.then(step);
    this.#lifecycle = next.catch(() => {});
    return next;
  }

  async #stopNow(): Promise<void> {
    if (!this.#isRunning || this.#ended) return;
    this.#logger.info('stopping member', { name: this.name });
    await this.#member.stopListening();
    this.#isRunning = false;
    this.#control.reachChanged();
  }

  async #startNow(): Promise<void> {
    if (this.#isRunning || this.#ended) return;
    await this.#member.listen();
    this.#isRunning = true;
    this.#logger.info('started member', { name: this.name, endpoint: this.endpoint });
    this.#control.reachChanged();
  }
}
