// Cluster membership of a server that is one started member, always the leader. What etcd allows
// there is allowed here: adding a learner (which never starts, since it has no process behind it),
// updating peer URLs, removing the learner. What etcd refuses is refused with etcd's error, checked
// in etcd's order: removing the only voting member, promoting a voting member or a learner that is
// not in sync (ours never is), too many learners, peer URLs already in use, unknown or removed ids.
// Adding a voting member is the one thing etcd accepts and this server cannot honour: the new member
// would never start and a real single member would then lose quorum; it is answered Unimplemented.
// Every change that passes the checks made before proposing takes a raft log entry, as in etcd.
import { createHash } from 'node:crypto';
import { EtcdServerError } from '../errors.js';
import type { MemberIdentity } from './member.js';
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

/** The members of the cluster this server is the only started member of. */
export class Membership {
  /** This server's member id. */
  readonly selfId: bigint;
  private readonly proposals: ProposalLog;
  private readonly members = new Map<bigint, Member>();
  /** Ids removed from the cluster; etcd never lets them back. */
  private readonly removed = new Set<bigint>();
  /** Wall-clock milliseconds, which new member ids are derived from. */
  private readonly wallClock: () => number;
  private readonly changeListeners = new Set<(state: MembershipState) => void>();

  /** `wallClock` (default Date.now) is for tests of the ids of added members. */
  constructor(self: MemberIdentity, proposals: ProposalLog, wallClock: () => number = Date.now) {
    this.selfId = self.memberId;
    this.proposals = proposals;
    this.wallClock = wallClock;
    this.members.set(self.memberId, {
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
    this.members.set(member.memberId, {
      id: member.memberId,
      name: member.name,
      peerUrls: [...member.peerUrls],
      clientUrls: [...member.clientUrls],
      isLearner: false,
    });
  }

  /** Calls `listener` with the new state after every change from now on. Returns an unsubscribe. */
  subscribe(listener: (state: MembershipState) => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** The members and removed ids now. */
  state(): MembershipState {
    return { members: this.list(), removed: [...this.removed] };
  }

  /**
   * Replaces the state with one recovered from a data dir. This member keeps the name and client
   * URLs it was started with, as a restarted etcd member publishes its new attributes.
   */
  restore(state: MembershipState): void {
    const self = this.members.get(this.selfId);
    this.members.clear();
    this.removed.clear();
    for (const member of state.members) this.members.set(member.id, member);
    for (const id of state.removed) this.removed.add(id);
    const recovered = this.members.get(this.selfId);
    if (self !== undefined) {
      this.members.set(this.selfId, {
        ...(recovered ?? self),
        name: self.name,
        clientUrls: self.clientUrls,
      });
    }
  }

  /** Every member, by id (as etcd lists them). */
  list(): Member[] {
    return [...this.members.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** The member with this id, if it is in the cluster. */
  get(id: bigint): Member | undefined {
    return this.members.get(id);
  }

  /**
   * MemberAdd: a learner that never starts. A voting member is refused (see the file comment),
   * unless etcd would refuse it anyway for its peer URLs.
   */
  add(peerUrls: readonly string[], isLearner: boolean): Member {
    const urls = parsePeerUrls(peerUrls);
    if (!isLearner && this.urlsFree(urls, undefined))
      throw new EtcdServerError('VOTING_MEMBER_ADD');
    this.proposals.propose(ProposalKind.confChange, 0);
    const id = memberIdOf(urls, this.wallClock());
    // Checked in etcd's order. The id depends on the URLs and the second only, so adding the same
    // URLs twice within a second finds the first member (or its removal).
    if (this.removed.has(id)) throw new EtcdServerError('MEMBER_NOT_FOUND');
    if (this.members.has(id)) throw new EtcdServerError('MEMBER_EXISTS');
    if (!this.urlsFree(urls, undefined)) throw new EtcdServerError('PEER_URL_EXISTS');
    const learners = this.list().filter((m) => m.isLearner).length;
    if (learners + 1 > MAX_LEARNERS) throw new EtcdServerError('TOO_MANY_LEARNERS');
    const member: Member = { id, name: '', peerUrls: urls, clientUrls: [], isLearner: true };
    this.members.set(id, member);
    this.changed();
    return member;
  }

  /**
   * MemberRemove: a learner may go; the only voting member may not, and the voting members of a
   * simulated cluster are fixed (refused as not supported).
   */
  remove(id: bigint): void {
    const member = this.members.get(id);
    if (member !== undefined && !member.isLearner) {
      // etcd's strict reconfiguration check: without this member, no started voting member is
      // left. With several (a simulated cluster) etcd would remove it; these members are fixed.
      const voters = this.list().filter((m) => !m.isLearner).length;
      throw new EtcdServerError(voters > 1 ? 'VOTING_MEMBER_REMOVE' : 'MEMBER_NOT_ENOUGH_STARTED');
    }
    this.proposals.propose(ProposalKind.confChange, 0);
    if (member === undefined) throw new EtcdServerError('MEMBER_NOT_FOUND');
    this.members.delete(id);
    this.removed.add(id);
    this.changed();
  }

  /** MemberUpdate: new peer URLs, taken as given (etcd does not parse them here). */
  update(id: bigint, peerUrls: readonly string[]): void {
    this.proposals.propose(ProposalKind.confChange, 0);
    const member = this.members.get(id);
    if (member === undefined) throw new EtcdServerError('MEMBER_NOT_FOUND');
    if (!this.urlsFree(peerUrls, id)) throw new EtcdServerError('PEER_URL_EXISTS');
    this.members.set(id, { ...member, peerUrls: [...peerUrls] });
    this.changed();
  }

  /**
   * MemberPromote. etcd first asks raft whether the member is in sync: an unknown id is not found,
   * and a learner here never is in sync since it never started. A voting member passes that check
   * and is refused when the change is applied.
   */
  promote(id: bigint): void {
    const member = this.members.get(id);
    if (member === undefined) throw new EtcdServerError('MEMBER_NOT_FOUND');
    if (member.isLearner) throw new EtcdServerError('LEARNER_NOT_READY');
    this.proposals.propose(ProposalKind.confChange, 0);
    throw new EtcdServerError('MEMBER_NOT_LEARNER');
  }

  private changed(): void {
    if (this.changeListeners.size === 0) return;
    const state = this.state();
    for (const listener of this.changeListeners) listener(state);
  }

  /** True when no member but `except` has any of `urls`. */
  private urlsFree(urls: readonly string[], except: bigint | undefined): boolean {
    for (const member of this.members.values()) {
      if (member.id !== except && member.peerUrls.some((url) => urls.includes(url))) return false;
    }
    return true;
  }
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
