// Cluster membership: list, add, remove, update and promote members. Changes go through raft like
// writes and are never retried once sent (a repeated add would add a second member).
import type { CallOptions, Rpc } from '../connection/types.js';
import { etcdserverpb_Cluster as methods } from '../generated/methods.js';
import type { etcdserverpb } from '../generated/protocol.js';
import { type ResponseHeader, toResponseHeader } from '../header.js';
import { jsonReady } from '../json.js';

/** One member of the cluster. */
export interface Member {
  /** The member id (raft node id). */
  readonly id: bigint;
  /** The member's `--name`; empty for a member that was added but has not started yet. */
  readonly name: string;
  /** URLs the other members reach it on. */
  readonly peerUrls: readonly string[];
  /** URLs clients reach it on; empty for a member that has not started yet. */
  readonly clientUrls: readonly string[];
  /** True for a learner: a non-voting member that receives the log and can be promoted. */
  readonly isLearner: boolean;
}

/** The members of the cluster, as a member-changing or listing call reports them. */
export interface MemberList {
  /** Every member, in the order the server lists them. */
  readonly members: readonly Member[];
  readonly header: ResponseHeader;
}

/** The answer of {@link ClusterClient.memberAdd}. */
export interface MemberAdded extends MemberList {
  /** The new member. Start it with `--initial-cluster-state existing`. */
  readonly member: Member;
}

/** Options of {@link ClusterClient.memberList}. */
export interface MemberListOptions extends CallOptions {
  /**
   * Ask for a linearizable list (etcd 3.5+), confirmed with the leader, instead of the answering
   * member's local view, which may briefly lag behind a membership change. Older servers ignore it.
   * Default false.
   */
  readonly linearizable?: boolean;
}

/** Options of {@link ClusterClient.memberAdd}. */
export interface MemberAddOptions extends CallOptions {
  /**
   * Add the member as a learner (etcd 3.4+): it does not vote and does not count for quorum until
   * promoted with {@link ClusterClient.memberPromote}. Default false.
   */
  readonly isLearner?: boolean;
}

/** Cluster membership operations. */
export class ClusterClient {
  readonly #rpc: Rpc;

  constructor(rpc: Rpc) {
    this.#rpc = rpc;
  }

  /** Lists the members. Retried across endpoints like any read. */
  async memberList(options: MemberListOptions = {}): Promise<MemberList> {
    const response = await this.#rpc.unary(
      methods.MemberList,
      { linearizable: options.linearizable ?? false },
      'read',
      options,
    );
    return toMemberList(response);
  }

  /**
   * Adds a member reachable on `peerUrls`. The cluster then waits for it to start; until it does,
   * a voting member counts against quorum, which is why adding a learner first is safer.
   */
  async memberAdd(
    peerUrls: readonly string[],
    options: MemberAddOptions = {},
  ): Promise<MemberAdded> {
    const response = await this.#rpc.unary(
      methods.MemberAdd,
      { peerURLs: [...peerUrls], isLearner: options.isLearner ?? false },
      'write',
      options,
    );
    return jsonReady({ ...toMemberList(response), member: toMember(response.member ?? {}) });
  }

  /** Removes a member. Unknown ids fail with MemberNotFoundError. */
  async memberRemove(id: bigint, options: CallOptions = {}): Promise<MemberList> {
    const response = await this.#rpc.unary(methods.MemberRemove, { ID: id }, 'write', options);
    return toMemberList(response);
  }

  /** Replaces the peer URLs of a member. URLs another member uses fail with PeerUrlExistsError. */
  async memberUpdate(
    id: bigint,
    peerUrls: readonly string[],
    options: CallOptions = {},
  ): Promise<MemberList> {
    const response = await this.#rpc.unary(
      methods.MemberUpdate,
      { ID: id, peerURLs: [...peerUrls] },
      'write',
      options,
    );
    return toMemberList(response);
  }

  /**
   * Promotes a learner to a voting member. Fails with LearnerNotReadyError while the learner's log
   * is behind the leader's, and with MemberNotLearnerError for a voting member.
   */
  async memberPromote(id: bigint, options: CallOptions = {}): Promise<MemberList> {
    const response = await this.#rpc.unary(methods.MemberPromote, { ID: id }, 'write', options);
    return toMemberList(response);
  }
}

interface MembersResponse {
  readonly header?: etcdserverpb.ResponseHeader.$Properties | null;
  readonly members?: etcdserverpb.Member.$Properties[] | null;
}

function toMemberList(response: MembersResponse): MemberList {
  return jsonReady({
    members: (response.members ?? []).map(toMember),
    header: toResponseHeader(response.header),
  });
}

function toMember(member: etcdserverpb.Member.$Properties): Member {
  return jsonReady({
    id: member.ID ?? 0n,
    name: member.name ?? '',
    peerUrls: member.peerURLs ?? [],
    clientUrls: member.clientURLs ?? [],
    isLearner: member.isLearner ?? false,
  });
}
