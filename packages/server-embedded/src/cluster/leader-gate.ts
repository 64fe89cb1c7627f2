// The middleware in front of a cluster member's services (net/call-middleware.ts), after its call
// gate: without a leader, and as a learner, it answers as an etcd 3.4 member does
// (docs/embedded-server.md, "What a member without a leader answers" and "Membership changes").
import {
  etcdserverpb_Auth,
  etcdserverpb_Cluster,
  etcdserverpb_KV,
  etcdserverpb_Lease,
  etcdserverpb_Maintenance,
  v3electionpb_Election,
  v3lockpb_Lock,
} from '@etcdkit/client/protocol';
import type { RangeRequest, TxnRequest } from '../api/requests.js';
import { type Clock, systemClock, type Timer } from '../clock.js';
import { EtcdServerError, GrpcCode } from '../errors.js';
import { isReadOnlyTxn } from '../kv/txn.js';
import { closedLatch, type Latch } from '../latch.js';
import type {
  CallArrival,
  CallMiddleware,
  CallSteps,
  MiddlewareStatus,
} from '../net/call-middleware.js';
import { isLocalRange, isLocalTxn } from '../services/local-reads.js';

/** Paths whose every call is a raft proposal. */
const PROPOSAL_PATHS: ReadonlySet<string> = new Set([
  etcdserverpb_KV.Put.path,
  etcdserverpb_KV.DeleteRange.path,
  etcdserverpb_KV.Compact.path,
  etcdserverpb_Lease.LeaseGrant.path,
  etcdserverpb_Lease.LeaseRevoke.path,
  ...Object.values(etcdserverpb_Auth)
    .filter((method) => method !== etcdserverpb_Auth.Authenticate)
    .map((method) => method.path),
  etcdserverpb_Cluster.MemberAdd.path,
  etcdserverpb_Cluster.MemberRemove.path,
  etcdserverpb_Cluster.MemberUpdate.path,
  etcdserverpb_Maintenance.Alarm.path,
  ...Object.values(v3lockpb_Lock).map((method) => method.path),
  ...Object.values(v3electionpb_Election).map((method) => method.path),
]);

/**
 * Paths whose calls the member forwards to the leader: lease renewals and TTL queries, and
 * MemberPromote (only the leader knows whether the learner is in sync: etcd's promoteMember).
 */
const FORWARDED_PATHS: ReadonlySet<string> = new Set([
  etcdserverpb_Lease.LeaseKeepAlive.path,
  etcdserverpb_Lease.LeaseTimeToLive.path,
  etcdserverpb_Cluster.MemberPromote.path,
]);

/** etcd 3.4's isRPCSupportedForLearner: what a learner serves of the unary calls. */
function supportedForLearner(path: string, message: unknown): boolean {
  if (path === etcdserverpb_Maintenance.Status.path) return true;
  return path === etcdserverpb_KV.Range.path && isLocalRange(message as RangeRequest);
}

/**
 * How a request is served by a member without a leader: held until the leader is back, then
 * failed as a proposal, a linearizable read or a forwarded call fails; or answered alone.
 */
type Need = 'proposal' | 'read-index' | 'forward' | 'local';

function needOf(path: string, message: unknown): Need {
  if (PROPOSAL_PATHS.has(path)) return 'proposal';
  if (FORWARDED_PATHS.has(path)) return 'forward';
  if (path === etcdserverpb_KV.Range.path || path === etcdserverpb_KV.RangeStream.path) {
    return isLocalRange(message as RangeRequest) ? 'local' : 'read-index';
  }
  if (path === etcdserverpb_KV.Txn.path) {
    const txn = message as TxnRequest;
    if (!isReadOnlyTxn(txn)) return 'proposal';
    return isLocalTxn(txn) ? 'local' : 'read-index';
  }
  if (path === etcdserverpb_Auth.Authenticate.path) return 'read-index';
  if (path === etcdserverpb_Cluster.MemberList.path) {
    return (message as { linearizable?: boolean | null }).linearizable === true
      ? 'read-index'
      : 'local';
  }
  return 'local';
}

/** Whether a request of this need waits for the leader. */
function waitsForLeader(need: Need): need is 'proposal' | 'read-index' | 'forward' {
  return need === 'proposal' || need === 'read-index' || need === 'forward';
}

/** A status the gate ends a call with. */
export interface GateStatus {
  readonly grpcCode: GrpcCode;
  readonly message: string;
}

const NO_LEADER: GateStatus = new EtcdServerError('NO_LEADER');
const NOT_SUPPORTED_FOR_LEARNER: GateStatus = new EtcdServerError('NOT_SUPPORTED_FOR_LEARNER');
/** What a call held for the leader fails with after the request timeout, by how it waited. */
const TIMED_OUT: Readonly<Record<'proposal' | 'read-index' | 'forward', GateStatus>> = {
  // etcd 3.4 returns the proposal's context error unmapped, and grpc-go sends it as Unknown.
  proposal: new EtcdServerError('PROPOSAL_TIMEOUT'),
  'read-index': new EtcdServerError('REQUEST_TIMEOUT'),
  forward: NO_LEADER,
};

/**
 * A proposal that timed out on etcd 3.5 and later: grpc-go maps Go's context error to its own
 * status, DeadlineExceeded, with the same words.
 */
export const PROPOSAL_DEADLINE_EXCEEDED: GateStatus = {
  grpcCode: GrpcCode.DEADLINE_EXCEEDED,
  message: EtcdServerError.messageOf('PROPOSAL_TIMEOUT'),
};

/** A wait for the leader that can be given up. */
interface LeaderWait {
  readonly done: Promise<boolean>;
  cancel(): void;
}

/** The leader gate of one member. */
export class LeaderGate implements CallMiddleware {
  readonly #requestTimeoutMs: number;
  /** The time held calls are measured in: the real clock until the cluster gives its own. */
  #clock: Clock = systemClock;
  /** Set while the member knows of no leader: resolved when it has one again. */
  #lost: Latch | undefined;
  /** Ends each open require-leader stream with "no leader". */
  readonly #requireLeaderStreams = new Set<() => void>();
  readonly #waits = new Set<(regained: boolean) => void>();
  readonly #precheck: (path: string, message: unknown) => GateStatus | undefined;
  readonly #isLearner: () => boolean;
  readonly #timedOut: Readonly<Record<'proposal' | 'read-index' | 'forward', GateStatus>>;

  /**
   * `requestTimeoutMs`: how long a call that needs the leader is held; Infinity: forever.
   * `precheck`: what refuses a call at once even without a leader (a checked member change).
   * `isLearner`: true while the member is a learner (default never).
   * `proposalTimedOut`: what a proposal held past the timeout fails with (default etcd 3.4's).
   */
  constructor(options: {
    readonly requestTimeoutMs: number;
    readonly precheck?: (path: string, message: unknown) => GateStatus | undefined;
    readonly isLearner?: () => boolean;
    readonly proposalTimedOut?: GateStatus;
  }) {
    this.#timedOut = { ...TIMED_OUT, proposal: options.proposalTimedOut ?? TIMED_OUT.proposal };
    this.#requestTimeoutMs = options.requestTimeoutMs;
    this.#precheck = options.precheck ?? (() => undefined);
    this.#isLearner = options.isLearner ?? (() => false);
  }

  /**
   * Measures held calls' `requestTimeoutMs` on `clock` from now on (the cluster's clock, which
   * exists only after the member's port is open).
   */
  useClock(clock: Clock): void {
    this.#clock = clock;
  }

  /** The member lost its leader. */
  loseLeader(): void {
    if (this.#lost !== undefined) return;
    this.#lost = closedLatch();
    for (const end of [...this.#requireLeaderStreams]) end();
  }

  /** The member has a leader again: held calls go on. */
  regainLeader(): void {
    const lost = this.#lost;
    this.#lost = undefined;
    lost?.open();
  }

  /** Fails every held call now, as a stopping member does (their connections go anyway). */
  abandonWaits(): void {
    for (const finish of [...this.#waits]) finish(false);
  }

  /** True while a unary call passes untouched: the member has a leader and is no learner. */
  admitsAtOnce(): boolean {
    return this.#lost === undefined && !this.#isLearner();
  }

  #waitForLeader(): LeaderWait {
    const lost = this.#lost;
    if (lost === undefined) return { done: Promise.resolve(true), cancel: () => {} };
    let timer: Timer | undefined;
    let finish = (_regained: boolean): void => {};
    const done = new Promise<boolean>((resolve) => {
      finish = (regained) => {
        timer?.cancel();
        this.#waits.delete(finish);
        resolve(regained);
      };
    });
    this.#waits.add(finish);
    void lost.opened.then(() => finish(true));
    if (Number.isFinite(this.#requestTimeoutMs)) {
      timer = this.#clock.setTimer(() => finish(false), this.#requestTimeoutMs);
    }
    return { done, cancel: () => finish(false) };
  }

  /** The gate's steps for one call (CallMiddleware). */
  open(call: CallArrival, answer: (status: MiddlewareStatus) => void): CallSteps {
    const { path, streaming } = call;
    let ended = false;
    /** A unary call to a learner sent with require-leader: checked once its request is read. */
    let learnerRequiresLeader = false;
    let untrack = (): void => {};
    let pending: LeaderWait | undefined;
    // Inbound steps after a held message wait for it, so messages keep their order.
    let tail: Promise<void> | undefined;
    const end = (error: GateStatus): void => {
      if (ended) return;
      ended = true;
      untrack();
      pending?.cancel();
      answer({ code: error.grpcCode, details: error.message });
    };
    const hold = (need: Need, next: () => void): Promise<void> =>
      (tail ?? Promise.resolve()).then(async () => {
        if (ended) return;
        if (waitsForLeader(need) && this.#lost !== undefined) {
          pending = this.#waitForLeader();
          const regained = await pending.done;
          pending = undefined;
          if (!regained) {
            end(this.#timedOut[need]);
            return;
          }
        }
        if (!ended) next();
      });
    const afterHeld = (next: () => void): void => {
      if (tail === undefined) {
        if (!ended) next();
        return;
      }
      void tail.then(() => {
        if (!ended) next();
      });
    };
    return {
      arrive: (next) => {
        const requireLeader = call.metadata.get('hasleader')[0] === 'true';
        if (this.#isLearner()) {
          if (streaming) {
            end(NOT_SUPPORTED_FOR_LEARNER);
            return;
          }
          learnerRequiresLeader = requireLeader;
          next();
          return;
        }
        if (requireLeader && this.#lost !== undefined) {
          end(NO_LEADER);
          return;
        }
        if (requireLeader && streaming) {
          const endStream = (): void => end(NO_LEADER);
          this.#requireLeaderStreams.add(endStream);
          untrack = () => this.#requireLeaderStreams.delete(endStream);
        }
        next();
      },
      receive: (message, next) => {
        if (ended) return;
        if (this.#isLearner() && !streaming && !supportedForLearner(path, message)) {
          end(NOT_SUPPORTED_FOR_LEARNER);
          return;
        }
        if (learnerRequiresLeader && this.#lost !== undefined) {
          end(NO_LEADER);
          return;
        }
        const need = needOf(path, message);
        if (this.#lost !== undefined) {
          const refused = this.#precheck(path, message);
          if (refused !== undefined) {
            end(refused);
            return;
          }
        }
        if (tail === undefined && !(waitsForLeader(need) && this.#lost !== undefined)) {
          next();
          return;
        }
        const step = hold(need, next);
        tail = step;
        void step.then(() => {
          if (tail === step) tail = undefined;
        });
      },
      halfClose: afterHeld,
      sendMessage: (next) => {
        if (!ended) next();
      },
      sendStatus: (next) => {
        if (ended) return;
        ended = true;
        untrack();
        next();
      },
      cancelled: () => {
        ended = true;
        untrack();
        pending?.cancel();
      },
    };
  }
}
