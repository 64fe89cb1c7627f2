// Every gRPC call passes through one gate, the first layer of the server's gRPC engine (nearest
// the wire; net/call-middleware.ts), on its way in and out. On the way in it may hold the call (a
// pause, a delay) or refuse it with a chosen status (an injected failure) before any handler sees
// it; on the way out it holds each response message and status until what the server did is
// durable (the data dir's fsync) and while the server is paused, or replaces a response with an
// injected failure. Holding keeps order: within a call, messages in each direction pass in the
// order they came, each after the one before it.
//
// When nothing is paused, delayed, failing or waiting for the disk, every step passes
// synchronously, so the gate costs nothing measurable.
import { GrpcCode } from '../errors.js';
import { closedLatch, type Latch } from '../latch.js';

/** A status to answer a call with instead of its own. */
export interface InjectedStatus {
  readonly code: GrpcCode;
  readonly details: string;
}

/** What happens to a call arriving now. */
export interface Admission {
  /** Hold the call this long first, in ms (0: not at all). */
  readonly delayMs: number;
  /** Answer this and never run the handler. */
  readonly refuse?: InjectedStatus;
  /** Run the handler, then answer this instead of its response (unary calls). */
  readonly replaceResponse?: InjectedStatus;
}

/** What the gate asks about each call. */
export interface GatePolicy {
  /** Decides about a call of `path` as it arrives (after a pause ends). */
  admit(path: string): Admission;
  /** True when every call arriving now would be admitted at once, untouched (no faults set). */
  idle?(): boolean;
}

/** What a data dir reports: resolves once every change made so far is on disk. */
export type DurabilityBarrier = () => Promise<void> | undefined;

/** Sent when the disk failed under a response: etcd stops in that case; this member stops answering. */
const DURABILITY_FAILED: InjectedStatus = {
  code: GrpcCode.UNAVAILABLE,
  details: 'etcdkit embedded server: the data dir could not be written; the change is not durable',
};

/** The gate of one server. */
export class CallGate {
  #pausedUntil: Latch | undefined;
  #policy: GatePolicy = { admit: () => ({ delayMs: 0 }) };
  #barrier: DurabilityBarrier = () => undefined;

  /** True while paused. */
  get paused(): boolean {
    return this.#pausedUntil !== undefined;
  }

  /** Sets what decides about arriving calls. */
  setPolicy(policy: GatePolicy): void {
    this.#policy = policy;
  }

  /** Sets what responses wait for before they leave (the data dir). */
  setBarrier(barrier: DurabilityBarrier): void {
    this.#barrier = barrier;
  }

  /** Holds every call, message and response from now on (connections stay open). */
  pause(): void {
    if (this.#pausedUntil !== undefined) return;
    this.#pausedUntil = closedLatch();
  }

  /** Lets everything held by a pause go on, in the order it came. */
  resume(): void {
    const paused = this.#pausedUntil;
    this.#pausedUntil = undefined;
    paused?.open();
  }

  /** Sent when a response's changes could not be made durable. */
  readonly durabilityFailed: InjectedStatus = DURABILITY_FAILED;

  /**
   * Whether a call arriving now passes the way in untouched: not paused, and the policy injects
   * nothing. Such a call may skip the gate's bookkeeping (net/h2-registry.ts).
   */
  admitsAtOnce(): boolean {
    return this.#pausedUntil === undefined && this.#policy.idle?.() === true;
  }

  /** Resolves once a pause ends; undefined when not paused. */
  whilePaused(): Promise<void> | undefined {
    return this.#pausedUntil?.opened;
  }

  /**
   * What a response waits for before it leaves: the end of a pause and the data dir's barrier;
   * undefined when it may leave now. Rejects when the data dir failed.
   */
  outbound(): Promise<void> | undefined {
    const paused = this.whilePaused();
    const durable = this.#barrier();
    if (paused === undefined) return durable;
    return durable === undefined ? paused : Promise.all([paused, durable]).then(() => {});
  }

  /**
   * Holds an arriving call through a pause and its delay, then hands the policy's decision to
   * `decided`; undefined (pass at once) when there is nothing to wait for.
   */
  admissionGate(decided: (admission: Admission) => void, path: string): Promise<void> | undefined {
    const paused = this.whilePaused();
    if (paused === undefined) {
      const admission = this.#policy.admit(path);
      decided(admission);
      if (admission.delayMs <= 0) return undefined;
      // A pause that starts during the delay holds the call too.
      return sleep(admission.delayMs).then(() => this.whilePaused());
    }
    return paused.then(() => this.admissionGate(decided, path));
  }
}

/**
 * The gate's steps for one call (the engine's CallSteps, net/call-middleware.ts): the arrival,
 * each request message, the half-close, each response message and the status, each passed on in
 * order once the gate lets it.
 */
export class GatedCall {
  readonly #inbound = new OrderedSteps();
  readonly #outbound = new OrderedSteps();
  /** The gate answered the call itself: nothing else passes either way. */
  #refused = false;
  #replacement: InjectedStatus | undefined;
  readonly #outboundGate = (): Promise<void> | undefined => this.#gate.outbound();
  readonly #onOutboundFailure = (): void => this.#refuse(DURABILITY_FAILED);

  readonly #gate: CallGate;
  readonly #path: string;
  /** Ends the call with `status` (a refusal, a replaced response, a failed disk). */
  readonly #answer: (status: InjectedStatus) => void;

  constructor(gate: CallGate, path: string, answer: (status: InjectedStatus) => void) {
    this.#gate = gate;
    this.#path = path;
    this.#answer = answer;
  }

  /** Runs `next` once the call is admitted; a refused call is answered instead. */
  arrive(next: () => void): void {
    let admission: Admission | undefined;
    this.#inbound.run(
      () =>
        this.#gate.admissionGate((decided) => {
          admission = decided;
        }, this.#path),
      () => {
        if (admission?.refuse !== undefined) {
          this.#refuse(admission.refuse);
          return;
        }
        this.#replacement = admission?.replaceResponse;
        next();
      },
    );
  }

  /** Passes a request message on, after any pause. */
  receive(_message: unknown, next: () => void): void {
    this.#passIn(next);
  }

  /** Passes the client's half-close on, after any pause (and after every message before it). */
  halfClose(next: () => void): void {
    this.#passIn(next);
  }

  #passIn(next: () => void): void {
    this.#inbound.run(
      () => this.#gate.whilePaused(),
      () => {
        if (!this.#refused) next();
      },
    );
  }

  /** Sends a response message once responses may leave (or the injected replacement instead). */
  sendMessage(next: () => void): void {
    this.#outbound.run(
      this.#outboundGate,
      () => {
        if (this.#refused) return;
        if (this.#replacement !== undefined) {
          this.#refuse(this.#replacement);
          return;
        }
        next();
      },
      this.#onOutboundFailure,
    );
  }

  /** Sends the call's status once responses may leave. */
  sendStatus(next: () => void): void {
    this.#outbound.run(
      this.#outboundGate,
      () => {
        if (!this.#refused) next();
      },
      this.#onOutboundFailure,
    );
  }

  /** Nothing to let go of: what the gate holds ends with the call's connection or its pause. */
  cancelled(): void {}

  #refuse(status: InjectedStatus): void {
    this.#refused = true;
    this.#answer(status);
  }
}

/**
 * Steps of one direction of one call, run in order, each once its gate opens. A step whose gate
 * is open and that has nobody ahead of it runs at once, synchronously.
 */
class OrderedSteps {
  #waiting = 0;
  #tail: Promise<void> = Promise.resolve();

  run(
    gate: () => Promise<void> | undefined,
    step: () => void,
    onGateFailure: (error: unknown) => void = () => {},
  ): void {
    if (this.#waiting === 0) {
      const wait = gate();
      if (wait === undefined) {
        step();
        return;
      }
      this.#hold(wait, step, onGateFailure);
      return;
    }
    this.#hold(
      this.#tail.then(() => gate()),
      step,
      onGateFailure,
    );
  }

  #hold(
    wait: Promise<void> | undefined,
    step: () => void,
    onGateFailure: (error: unknown) => void,
  ): void {
    this.#waiting++;
    this.#tail = Promise.resolve(wait)
      .then(step, onGateFailure)
      // A step only hands the message on to the call; if that throws, the call is gone anyway, and
      // the steps after it must still run.
      .catch(() => {})
      .finally(() => {
        this.#waiting--;
      });
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
