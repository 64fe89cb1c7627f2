// The optional liveness check of a resuming observation (`leaderCheckIntervalMs`): a silent
// Observe stream proves nothing, so a Leader read tells if it missed a change (docs/elections.md).

import { sleep } from '../connection/sleep.js';
import type { Rpc } from '../connection/types.js';
import { type EtcdError, toEtcdError } from '../errors.js';
import { v3electionpb_Election as methods } from '../generated/methods.js';
import type { v3electionpb } from '../generated/protocol.js';
import { type KeyValue, toKeyValue } from '../key-value.js';

/** @internal The clock and timers of an observation: the system's, or a test's. */
export interface ObserveRuntime {
  now(): number;
  /** Resolves after `ms` or at once when `signal` aborts; never rejects; leaves no timer. */
  sleep(ms: number, signal: AbortSignal): Promise<void>;
  /** In [0, 1), for the backoff's jitter. */
  random(): number;
  /** A timer that does not keep the process alive. */
  setTimer(callback: () => void, ms: number): unknown;
  clearTimer(timer: unknown): void;
}

/** @internal */
export const SYSTEM_RUNTIME: ObserveRuntime = {
  now: Date.now,
  sleep,
  random: Math.random,
  setTimer(callback, ms) {
    const timer = setTimeout(callback, ms);
    // The observation's stream keeps the process alive while it is wanted; the check must not.
    timer.unref();
    return timer;
  },
  clearTimer: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/** The leader value an Observe or Leader response carries, if any. */
export function toLeaderValue(response: v3electionpb.LeaderResponse): KeyValue | undefined {
  return response.kv ? toKeyValue(response.kv, (key) => key) : undefined;
}

/** What the check needs from the observation it watches over. */
export interface ObserveCheckTarget {
  /** True when `kv` is later than the last value the observation yielded (or it yielded none). */
  behind(kv: KeyValue): boolean;
  /** The open stream has not delivered `kv` for an interval: replace it. */
  stale(kv: KeyValue): void;
  /** The election could not be read within the interval (the read's error). */
  unreadable(error: EtcdError): void;
}

/**
 * Compares an observation with the election every `intervalMs`, with one timer (re-armed after
 * each check's read, so reads never overlap) and at most one Leader call at a time.
 */
export class ObserveLivenessCheck {
  readonly #rpc: Rpc;
  readonly #request: v3electionpb.LeaderRequest.$Properties;
  readonly #intervalMs: number;
  readonly #target: ObserveCheckTarget;
  readonly #runtime: ObserveRuntime;
  /** Ends a Leader call in flight when the observation ends. */
  readonly #reads = new AbortController();
  #timer: unknown;
  /** A value the last read found later than the stream's; checked at the next tick. */
  #suspect: KeyValue | undefined;
  #streamOpen = false;
  #stopped = false;

  constructor(
    rpc: Rpc,
    request: v3electionpb.LeaderRequest.$Properties,
    intervalMs: number,
    target: ObserveCheckTarget,
    runtime: ObserveRuntime,
  ) {
    this.#rpc = rpc;
    this.#request = request;
    this.#intervalMs = intervalMs;
    this.#target = target;
    this.#runtime = runtime;
    this.#arm();
  }

  /** A stream was opened: it gets a whole interval to deliver what the election holds. */
  streamOpened(): void {
    this.#streamOpen = true;
    this.#suspect = undefined;
  }

  /** The stream ended; nothing is judged until the next one is open. */
  streamClosed(): void {
    this.#streamOpen = false;
    this.#suspect = undefined;
  }

  /** Stops the timer and any read in flight, for good. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.#timer !== undefined) this.#runtime.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#reads.abort();
  }

  #arm(): void {
    if (this.#stopped) return;
    this.#timer = this.#runtime.setTimer(() => this.#tick(), this.#intervalMs);
  }

  #tick(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    if (!this.#streamOpen) {
      this.#arm();
      return;
    }
    const suspect = this.#suspect;
    this.#suspect = undefined;
    if (suspect !== undefined && this.#target.behind(suspect)) {
      this.#target.stale(suspect);
      this.#arm();
      return;
    }
    this.#rpc
      .unary(methods.Leader, this.#request, 'read', {
        signal: this.#reads.signal,
        timeoutMs: this.#intervalMs,
      })
      .then(
        (response) => {
          const kv = toLeaderValue(response);
          if (this.#streamOpen && kv !== undefined && this.#target.behind(kv)) this.#suspect = kv;
        },
        (error: unknown) => {
          if (this.#streamOpen && !this.#stopped) this.#target.unreadable(toEtcdError(error));
        },
      )
      .finally(() => this.#arm());
  }
}
