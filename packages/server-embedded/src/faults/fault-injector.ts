// Fault injection: what tests do to the server to see how clients cope. Call-level faults (delays,
// injected failures, a pause) act in the call gate, before handlers and after them; state-level
// faults (a leader change, NOSPACE, a compaction, a lease expiring) go through the same paths as
// the real events, so they take raft entries, reach watchers and are persisted like them.
import { EtcdServerError, GrpcCode } from '../errors.js';
import type { Admission, CallGate, GatePolicy, InjectedStatus } from './call-gate.js';
import { type MethodName, resolveMethods } from './methods.js';

/** An injected failure: the status a call is answered with. */
export interface InjectedFailure {
  /** The gRPC status code, e.g. `GrpcCode.UNAVAILABLE`. */
  readonly code: GrpcCode;
  /**
   * The status message. Default: etcd's for the code where it has a usual one
   * (`etcdserver: request timed out` for Unavailable, `context deadline exceeded` for
   * DeadlineExceeded), else `etcdkit embedded server: injected fault`.
   */
  readonly message?: string;
  /** How many calls fail. Default 1. */
  readonly count?: number;
  /**
   * False (default): the call is refused before the server sees it; nothing is applied. True: the
   * server applies the request, then the response is replaced by the failure, so the client
   * cannot know the outcome (etcd's "request timed out" after a commit). Unary methods only.
   */
  readonly afterApply?: boolean;
}

/** A delay of calls, cancelled by calling it. */
export type CancelFault = () => void;

/** What the state-level faults act on (the server wires them). */
export interface FaultTargets {
  /** Closes every client connection; returns how many. */
  dropConnections(): number;
  /** Elects a new leader (this member): a new raft term. Returns it. */
  electLeader(): number;
  /** Raises the NOSPACE alarm for this member, as a full backend does. */
  raiseNoSpace(): void;
  /** Compacts the store at `revision`, as a Compact request does. */
  compact(revision: number): void;
  /** Expires a lease now; false when there is none. */
  expireLease(leaseId: bigint): boolean;
  /** Told when a pause starts (true) or ends (false): a cluster member then leaves or rejoins. */
  pauseChanged?(paused: boolean): void;
}

const DEFAULT_MESSAGES: Partial<Record<GrpcCode, string>> = {
  [GrpcCode.UNAVAILABLE]: EtcdServerError.messageOf('REQUEST_TIMEOUT'),
  [GrpcCode.DEADLINE_EXCEEDED]: 'context deadline exceeded',
};

interface Delay {
  readonly paths: ReadonlySet<string> | undefined;
  readonly ms: number;
}

interface PendingFailure {
  readonly paths: ReadonlySet<string>;
  readonly status: InjectedStatus;
  readonly afterApply: boolean;
  remaining: number;
}

/** The faults of one embedded server (`server.faults`). */
export class FaultInjector {
  readonly #gate: CallGate;
  readonly #targets: FaultTargets;
  readonly #delays = new Set<Delay>();
  readonly #failures: PendingFailure[] = [];

  /** @internal The server creates its injector. */
  constructor(gate: CallGate, targets: FaultTargets) {
    this.#gate = gate;
    this.#targets = targets;
    const policy: GatePolicy = {
      admit: (path) => this.#admit(path),
      idle: () => this.#delays.size === 0 && this.#failures.length === 0,
    };
    gate.setPolicy(policy);
  }

  /**
   * Delays every call of `methods` (default: every method) by `ms` milliseconds of real time
   * before the server sees it; a stream is delayed when it opens. Delays of several faults add
   * up. Returns a function that removes this delay.
   */
  delay(ms: number, methods?: MethodName | readonly MethodName[]): CancelFault {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`bad delay ${ms} ms`);
    const delay: Delay = { ms, paths: methods === undefined ? undefined : pathsOf(methods) };
    this.#delays.add(delay);
    return () => {
      this.#delays.delete(delay);
    };
  }

  /**
   * Fails the next calls of `method` (see {@link InjectedFailure}), after the failures already
   * queued for it. A stream fails as it opens.
   */
  failNext(method: MethodName, failure: InjectedFailure): void {
    const count = failure.count ?? 1;
    if (!Number.isInteger(count) || count < 1) throw new RangeError(`bad count ${count}`);
    this.#failures.push({
      paths: pathsOf(method),
      status: {
        code: failure.code,
        details:
          failure.message ??
          DEFAULT_MESSAGES[failure.code] ??
          'etcdkit embedded server: injected fault',
      },
      afterApply: failure.afterApply ?? false,
      remaining: count,
    });
  }

  /**
   * Pauses the server as if its process were stopped: connections stay open and new ones are
   * accepted, but no call starts, no request is read and nothing is answered until
   * {@link resume}. The server's own timers go on (leases expire meanwhile, as their time
   * passes). HTTP/2 pings are still answered by the transport.
   */
  pause(): void {
    if (this.#gate.paused) return;
    this.#gate.pause();
    this.#targets.pauseChanged?.(true);
  }

  /** Ends a pause: everything held goes on in the order it came. */
  resume(): void {
    if (!this.#gate.paused) return;
    this.#gate.resume();
    this.#targets.pauseChanged?.(false);
  }

  /** True while paused. */
  get paused(): boolean {
    return this.#gate.paused;
  }

  /** Closes every client connection (the server keeps listening). Returns how many. */
  dropConnections(): number {
    return this.#targets.dropConnections();
  }

  /**
   * Simulates a leader change: this member wins a new election, so the raft term goes up by one.
   * Every response produced from now on (calls in flight included) carries the new term; no call
   * fails because of it (combine with {@link failNext} and `etcdserver: leader changed` for
   * that). Returns the new term. On a member of an EmbeddedCluster it is `cluster.elect(member)`:
   * the member leads from now on, every lease gets its full TTL again, and it throws when the
   * member cannot lead (stopped, partitioned, paused, or no quorum).
   */
  changeLeader(): number {
    return this.#targets.electLeader();
  }

  /** Raises the NOSPACE alarm, as a backend over its quota does: writes fail until disarmed. */
  raiseNoSpace(): void {
    this.#targets.raiseNoSpace();
  }

  /** Compacts at `revision` now (watchers behind it are cancelled), as a Compact request would. */
  compact(revision: number): void {
    this.#targets.compact(revision);
  }

  /** Expires a lease now: revoked, its keys deleted. False when there is no such lease. */
  expireLease(leaseId: bigint): boolean {
    return this.#targets.expireLease(leaseId);
  }

  /** Removes every delay and queued failure, and resumes. */
  clear(): void {
    this.#delays.clear();
    this.#failures.length = 0;
    this.resume();
  }

  #admit(path: string): Admission {
    let delayMs = 0;
    for (const delay of this.#delays) {
      if (delay.paths === undefined || delay.paths.has(path)) delayMs += delay.ms;
    }
    const index = this.#failures.findIndex((failure) => failure.paths.has(path));
    if (index === -1) return { delayMs };
    const failure = this.#failures[index]!;
    if (--failure.remaining === 0) this.#failures.splice(index, 1);
    return failure.afterApply
      ? { delayMs, replaceResponse: failure.status }
      : { delayMs, refuse: failure.status };
  }
}

function pathsOf(methods: MethodName | readonly MethodName[]): ReadonlySet<string> {
  const names = typeof methods === 'string' ? [methods] : methods;
  const paths = new Set<string>();
  for (const name of names) for (const path of resolveMethods(name)) paths.add(path);
  return paths;
}
