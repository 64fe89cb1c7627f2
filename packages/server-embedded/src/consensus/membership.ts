// Cluster membership as etcd's RaftCluster keeps it, shared by every member of a server or a
// simulated cluster: etcd 3.4's checks with its strict reconfiguration check, in etcd's order and
// with its errors (docs/embedded-server.md, "Cluster" and "Membership changes").
import { createHash } from 'node:crypto';
import { EtcdServerError } from '../errors.js';
import type { MemberIdentity } from './member-identity.js';
import { ProposalKind, type ProposalLog } from './proposals.js';

/** A member as MemberList reports it. */
export interface Member {
  readonly id: bigint;
  /** Empty for a member that never started. */
  readonly name: string;
  readonly peerUrls: readonly string[];
  /** Empty for a member that never started. */
  readonly clientUrls: readonly string[];
  readonly isLearner: boolean;
}

/** Everything membership remembers: what a data dir keeps of it. */
export interface MembershipState {
  readonly members: readonly Member[];
  /** Ids removed from the cluster, never accepted again. */
  readonly removed: readonly bigint[];
}

/** etcd's default --max-learners. */
const MAX_LEARNERS = 1;

/** What the members of a simulated cluster know of each other (etcd's raft transport). */
export interface PeerHealth {
  /** True when member `local` is connected to member `peer` now (both up and in reach). */
  connected(local: bigint, peer: bigint): boolean;
  /**
   * True when the leader's log has reached learner `id` (etcd's promotion check: the learner has
   * matched at least 90% of the leader's log). Without it, no learner is ever in sync.
   */
  inSync?(id: bigint): boolean;
}

/** The members of a server alone, or of a simulated cluster (see the file comment). */
export class Membership {
  /** This server's member id. */
  readonly selfId: bigint;
  readonly #proposals: ProposalLog;
  readonly #members = new Map<bigint, Member>();
  /** Ids removed from the cluster; etcd never lets them back. */
  readonly #removed = new Set<bigint>();
  /** Wall-clock milliseconds, which new member ids are derived from. */
  readonly #wallClock: () => number;
  readonly #changeListeners = new Set<(state: MembershipState) => void>();
  /** Set by a simulated cluster: voting members may then be added and removed. */
  #peers: PeerHealth | undefined;

  /** `wallClock` (default Date.now) is for tests of the ids of added members. */
  constructor(self: MemberIdentity, proposals: ProposalLog, wallClock: () => number = Date.now) {
    this.selfId = self.memberId;
    this.#proposals = proposals;
    this.#wallClock = wallClock;
    this.#members.set(self.memberId, {
      id: self.memberId,
      name: self.name,
      peerUrls: [...self.peerUrls],
      clientUrls: [...self.clientUrls],
      isLearner: false,
    });
  }

  /**
   * Adds a voting member that started together with this one (the other members of a simulated
   * cluster). Not a membership change: it takes no log entry and tells no listener.
   */
  addStarted(member: MemberIdentity): void {
    this.#members.set(member.memberId, {
      id: member.memberId,
      name: member.name,
      peerUrls: [...member.peerUrls],
      clientUrls: [...member.clientUrls],
      isLearner: false,
    });
  }

  /**
   * Lets voting members be added and removed, with etcd's strict reconfiguration check on `peers`
   * (a simulated cluster, whose added members can be started).
   */
  allowVotingChanges(peers: PeerHealth, options: { addNeedsConnectedQuorum?: boolean } = {}): void {
    this.#peers = peers;
    this.#addNeedsConnectedQuorum = options.addNeedsConnectedQuorum === true;
  }

  /**
   * etcd 3.5 on: an add needs the local member connected to a quorum of the voters with the new
   * one counted (isConnectedToQuorumAfterAddingNewMemberSince); 3.4 needs every voter connected.
   */
  #addNeedsConnectedQuorum = false;

  /**
   * An added member starts: it publishes its name and client URLs (etcd's publish, a raft request
   * of its own), and counts as started from now on.
   */
  publish(id: bigint, name: string, clientUrls: readonly string[]): void {
    const member = this.#members.get(id);
    if (member === undefined) throw new EtcdServerError('MEMBER_NOT_FOUND');
    this.#proposals.propose(ProposalKind.confChange, 0);
    this.#members.set(id, { ...member, name, clientUrls: [...clientUrls] });
    this.#changed();
  }

  /** Calls `listener` with the new state after every change from now on. Returns an unsubscribe. */
  subscribe(listener: (state: MembershipState) => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  /** The members and removed ids now. */
  state(): MembershipState {
    return { members: this.list(), removed: [...this.#removed] };
  }

  /**
   * Replaces the state with one recovered from a data dir. This member keeps the name and client
   * URLs it was started with, as a restarted etcd member publishes its new attributes.
   */
  restore(state: MembershipState): void {
    const self = this.#members.get(this.selfId);
    this.#members.clear();
    this.#removed.clear();
    for (const member of state.members) this.#members.set(member.id, member);
    for (const id of state.removed) this.#removed.add(id);
    const recovered = this.#members.get(this.selfId);
    if (self !== undefined) {
      this.#members.set(this.selfId, {
        ...(recovered ?? self),
        name: self.name,
        clientUrls: self.clientUrls,
      });
    }
  }

  /** Every member, by id (as etcd lists them). */
  list(): Member[] {
    return [...this.#members.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The member with this id, if it is in the cluster. */
  get(id: bigint): Member | undefined {
    return this.#members.get(id);
  }

  /**
   * MemberAdd, asked of member `local`: a member that is not started. Alone (no peers), a server
   * adds learners only (see the file comment), unless etcd would refuse the add anyway for its
   * peer URLs.
   */
  add(peerUrls: readonly string[], isLearner: boolean, local: bigint = this.selfId): Member {
    const urls = parsePeerUrls(peerUrls);
    if (this.#peers === undefined) {
      if (!isLearner && this.#urlsFree(urls, undefined)) {
        throw new EtcdServerError('VOTING_MEMBER_ADD');
      }
    } else {
      this.checkAdd(isLearner, local);
    }
    this.#proposals.propose(ProposalKind.confChange, 0);
    const id = memberIdOf(urls, this.#wallClock());
    // Checked in etcd's order. The id depends on the URLs and the second only, so adding the same
    // URLs twice within a second finds the first member (or its removal).
    if (this.#removed.has(id)) throw new EtcdServerError('MEMBER_NOT_FOUND');
    if (this.#members.has(id)) throw new EtcdServerError('MEMBER_EXISTS');
    if (!this.#urlsFree(urls, undefined)) throw new EtcdServerError('PEER_URL_EXISTS');
    if (isLearner) {
      const learners = this.list().filter((m) => m.isLearner).length;
      if (learners + 1 > MAX_LEARNERS) throw new EtcdServerError('TOO_MANY_LEARNERS');
    }
    const member: Member = { id, name: '', peerUrls: urls, clientUrls: [], isLearner };
    this.#members.set(id, member);
    this.#changed();
    return member;
  }

  /**
   * MemberRemove, asked of member `local`. A learner may always go. Alone, the only voting member
   * may not; in a simulated cluster, a voting member goes when etcd's strict check lets it.
   */
  remove(id: bigint, local: bigint = this.selfId): void {
    const member = this.#members.get(id);
    if (member?.isLearner !== true) {
      if (this.#peers === undefined) {
        // Alone, a voting member is the server itself, and without it no started member is left.
        if (member !== undefined) throw new EtcdServerError('MEMBER_NOT_ENOUGH_STARTED');
      } else {
        // An unknown id is checked too (etcd does), and then found missing when applied.
        this.checkRemove(id, local);
      }
    }
    this.#proposals.propose(ProposalKind.confChange, 0);
    if (member === undefined) throw new EtcdServerError('MEMBER_NOT_FOUND');
    this.#members.delete(id);
    this.#removed.add(id);
    this.#changed();
  }

  /**
   * etcd's strict reconfiguration check of an add (see the file comment), which is made before
   * proposing: it answers at once, even without a leader.
   */
  checkAdd(isLearner: boolean, local: bigint): void {
    const peers = this.#peers;
    if (peers === undefined) return;
    const voters = this.#voters();
    if (!isLearner) {
      const members = voters.length + 1;
      const started = voters.filter(isStarted).length;
      // A second member added to a single one is etcd's exception (restoring a cluster).
      const restoring = started === 1 && members === 2;
      if (!restoring && started < quorumOf(members)) {
        throw new EtcdServerError('MEMBER_NOT_ENOUGH_STARTED');
      }
    }
    if (this.#addNeedsConnectedQuorum) {
      // A single member may always add one; else self and the peers it reaches must be a quorum.
      const connected = voters.filter((m) => m.id === local || peers.connected(local, m.id));
      if (voters.length > 1 && connected.length < quorumOf(voters.length + 1)) {
        throw new EtcdServerError('UNHEALTHY');
      }
      return;
    }
    // etcd 3.4 asks this of learners too: a voting member not started blocks every add.
    if (voters.some((m) => m.id !== local && !peers.connected(local, m.id))) {
      throw new EtcdServerError('UNHEALTHY');
    }
  }

  /**
   * etcd's strict reconfiguration check of a removal (see the file comment), made before
   * proposing. A learner passes it.
   */
  checkRemove(id: bigint, local: bigint): void {
    const peers = this.#peers;
    if (peers === undefined || this.#members.get(id)?.isLearner === true) return;
    const voters = this.#voters();
    const left = voters.filter((m) => m.id !== id);
    if (left.filter(isStarted).length < quorumOf(left.length)) {
      throw new EtcdServerError('MEMBER_NOT_ENOUGH_STARTED');
    }
    // A member out of reach is no part of the active quorum: it may go.
    if (id !== local && !peers.connected(local, id)) return;
    const active = voters.filter((m) => m.id === local || peers.connected(local, m.id)).length;
    if (active - 1 < quorumOf(voters.length - 1)) throw new EtcdServerError('UNHEALTHY');
  }

  /** MemberUpdate: new peer URLs, taken as given (etcd does not parse them here). */
  update(id: bigint, peerUrls: readonly string[]): void {
    this.#proposals.propose(ProposalKind.confChange, 0);
    const member = this.#members.get(id);
    if (member === undefined) throw new EtcdServerError('MEMBER_NOT_FOUND');
    if (!this.#urlsFree(peerUrls, id)) throw new EtcdServerError('PEER_URL_EXISTS');
    this.#members.set(id, { ...member, peerUrls: [...peerUrls] });
    this.#changed();
  }

  /**
   * MemberPromote, checked in etcd's order: whether the learner is in sync with the leader (an
   * unknown id passes, and is found missing when applied; a server alone has no learner started,
   * so none is ever in sync), then the strict check (the started voting members and the learner,
   * counted as started, must be a quorum of the voting members with it). A voting member passes
   * both and is refused when the change is applied. The learner becomes a voting member: the
   * quorum counts it from now on.
   */
  promote(id: bigint): void {
    const member = this.#members.get(id);
    if (member === undefined) throw new EtcdServerError('MEMBER_NOT_FOUND');
    if (member.isLearner) {
      if (this.#peers?.inSync?.(id) !== true) throw new EtcdServerError('LEARNER_NOT_READY');
      const voters = this.#voters();
      if (voters.filter(isStarted).length + 1 < quorumOf(voters.length + 1)) {
        throw new EtcdServerError('MEMBER_NOT_ENOUGH_STARTED');
      }
    }
    this.#proposals.propose(ProposalKind.confChange, 0);
    if (!member.isLearner) throw new EtcdServerError('MEMBER_NOT_LEARNER');
    this.#members.set(id, { ...member, isLearner: false });
    this.#changed();
  }

  #voters(): Member[] {
    return this.list().filter((m) => !m.isLearner);
  }

  #changed(): void {
    if (this.#changeListeners.size === 0) return;
    const state = this.state();
    for (const listener of this.#changeListeners) listener(state);
  }

  /** True when no member but `except` has any of `urls`. */
  #urlsFree(urls: readonly string[], except: bigint | undefined): boolean {
    for (const member of this.#members.values()) {
      if (member.id !== except && member.peerUrls.some((url) => urls.includes(url))) return false;
    }
    return true;
  }
}

/** etcd's IsStarted: a member has a name once it has started and published it. */
function isStarted(member: Member): boolean {
  return member.name !== '';
}

/** The quorum of `members` voting members. */
export function quorumOf(members: number): number {
  return Math.floor(members / 2) + 1;
}

/**
 * The id etcd gives a member added through MemberAdd: the first 8 bytes (big-endian) of the SHA-1
 * of its sorted peer URLs joined, then the Unix time in seconds (the cluster name is empty there).
 */
export function memberIdOf(sortedPeerUrls: readonly string[], wallClockMs: number): bigint {
  const seconds = Math.floor(wallClockMs / 1000);
  const digest = createHash('sha1')
    .update(`${sortedPeerUrls.join('')}${seconds}`)
    .digest();
  return digest.readBigUInt64BE(0);
}

/**
 * Peer URLs as etcd's types.NewURLs takes them: at least one; each http(s) URL "host:port" with no
 * path, or a unix(s) URL; trimmed, scheme lower-cased, sorted.
 */
export function parsePeerUrls(urls: readonly string[]): string[] {
  if (urls.length === 0) throw new EtcdServerError('MEMBER_BAD_URLS');
  return urls.map(parsePeerUrl).sort();
}

function parsePeerUrl(input: string): string {
  const url = input.trim();
  const match = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/s.exec(url);
  if (match === null) throw new EtcdServerError('MEMBER_BAD_URLS');
  const scheme = match[1]!.toLowerCase();
  const authority = match[2]!;
  const rest = match[3]!;
  if (scheme === 'unix' || scheme === 'unixs') return `${scheme}://${authority}${rest}`;
  if (scheme !== 'http' && scheme !== 'https') throw new EtcdServerError('MEMBER_BAD_URLS');
  if (rest.startsWith('/') || !hasHostPort(authority.slice(authority.lastIndexOf('@') + 1))) {
    throw new EtcdServerError('MEMBER_BAD_URLS');
  }
  return `${scheme}://${authority}${rest}`;
}

/** Go's net.SplitHostPort succeeds: "host:port" or "[ipv6]:port", one colon outside brackets. */
function hasHostPort(host: string): boolean {
  if (host.startsWith('[')) return /^\[[^\]]*\]:[^:]*$/.test(host);
  return host.split(':').length === 2;
}
