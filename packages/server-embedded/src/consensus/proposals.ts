// What is left of raft in a single-member server: the term and log index that Status and response
// headers report, and the size limit etcd enforces when it proposes a request. etcd wraps every
// write request in an InternalRaftRequest with a request header and rejects it when that encoding
// is over --max-request-bytes, so the limit bites a few bytes before the request's own size; the
// wrapper is sized here exactly as etcd would encode it.
import { EtcdServerError } from '../errors.js';

/** Who sent a proposal, as its request header carries it (auth's AuthInfo has this shape). */
export interface Requester {
  readonly username: string;
  readonly revision: number;
}

/** InternalRaftRequest field numbers of the requests that go through raft. */
export const ProposalKind = {
  put: 4,
  deleteRange: 5,
  txn: 6,
  compaction: 7,
  leaseGrant: 8,
  leaseRevoke: 9,
  alarm: 10,
  // Every auth request (AuthEnable 1000 ... AuthRoleRevokePermission 1204): these field numbers
  // all take a two-byte tag, so one of them sizes any of them exactly.
  auth: 1000,
  // Membership changes are raft configuration changes, not InternalRaftRequests; they take a log
  // entry all the same, and no request size limit applies to them.
  confChange: 0,
} as const;

/** An InternalRaftRequest field number. */
export type ProposalKind = (typeof ProposalKind)[keyof typeof ProposalKind];

/** A fresh single-member etcd has won its first election (term 2) and applied 4 entries. */
const INITIAL_TERM = 2;
const INITIAL_INDEX = 4;

/** The raft log of a single member: every proposal is committed and applied at once. */
export class ProposalLog {
  #currentTerm = INITIAL_TERM;
  #appliedIndex = INITIAL_INDEX;
  readonly #maxRequestBytes: number;
  readonly #requestIds: RequestIdGenerator;

  constructor(options: { memberId: bigint; maxRequestBytes: number }) {
    this.#maxRequestBytes = options.maxRequestBytes;
    this.#requestIds = new RequestIdGenerator(options.memberId);
  }

  /** The raft term; it moves only with a leader change (an election after a restart, a fault). */
  get term(): number {
    return this.#currentTerm;
  }

  /**
   * A new leader was elected (this member again): the term goes up by one and the new leader's
   * empty entry takes a log index, as in raft. Returns the new term.
   */
  electLeader(): number {
    this.#currentTerm++;
    this.#appliedIndex++;
    return this.#currentTerm;
  }

  /** Sets the term and index recovered from a data dir (before the member serves anything). */
  restore(term: number, index: number): void {
    this.#currentTerm = term;
    this.#appliedIndex = index;
  }

  /** The index of the last applied entry (Status' raftIndex and raftAppliedIndex). */
  get index(): number {
    return this.#appliedIndex;
  }

  /**
   * Proposes a request whose encoding is `requestBytes` long: rejects it when the wrapped request
   * is over the limit, otherwise appends it to the log. The caller applies it afterwards; a request
   * that then fails (a missing lease, a compacted revision) still used its log entry, as in etcd.
   * `requester` is who sent it, when auth is on: etcd writes the user into the request's header.
   */
  propose(kind: ProposalKind, requestBytes: number, requester?: Requester): void {
    const id = this.#requestIds.next();
    const header = fieldSize(100, requestHeaderSize(id, requester));
    if (
      kind !== ProposalKind.confChange &&
      header + fieldSize(kind, requestBytes) > this.#maxRequestBytes
    ) {
      throw new EtcdServerError('REQUEST_TOO_LARGE');
    }
    this.#appliedIndex++;
  }

  /**
   * A fresh request id. etcd draws one for a lease grant that asks for no particular id and uses
   * it, sign bit cleared, as the lease id; the proposal then draws its own.
   */
  nextRequestId(): bigint {
    return this.#requestIds.next();
  }
}

/** etcd's request ids: the member id's low 16 bits, then milliseconds (40 bits) and a counter. */
class RequestIdGenerator {
  readonly #prefix: bigint;
  #suffix: bigint;

  constructor(memberId: bigint) {
    this.#prefix = (memberId & 0xffffn) << 48n;
    this.#suffix = (BigInt(Date.now()) & 0xff_ffff_ffffn) << 8n;
  }

  next(): bigint {
    this.#suffix = (this.#suffix + 1n) & 0xffff_ffff_ffffn;
    return this.#prefix | this.#suffix;
  }
}

/**
 * Size of the RequestHeader etcd puts on a proposal: the request id, and with auth on the user and
 * auth revision of whoever sent it (empty values are not encoded, as in proto3).
 */
function requestHeaderSize(id: bigint, requester: Requester | undefined): number {
  let size = 1 + varintSize(id);
  if (requester === undefined) return size;
  const username = Buffer.byteLength(requester.username, 'utf8');
  if (username > 0) size += fieldSize(2, username);
  if (requester.revision > 0) size += 1 + varintSize(BigInt(requester.revision));
  return size;
}

/** Size of a length-delimited field: tag, length, payload. */
function fieldSize(fieldNumber: number, payloadBytes: number): number {
  return varintSize(BigInt(fieldNumber << 3)) + varintSize(BigInt(payloadBytes)) + payloadBytes;
}

function varintSize(value: bigint): number {
  let size = 1;
  while (value >= 0x80n) {
    value >>= 7n;
    size++;
  }
  return size;
}
