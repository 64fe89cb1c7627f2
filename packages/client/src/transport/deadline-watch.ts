// The deadlines of a channel's calls, on one timer: a timer per call (made, then cleared when the
// call ends, nearly always long before its deadline) costs more than the rest of the deadline work.
// The timer is armed for the earliest deadline; calls that end are only forgotten, so it may fire
// for a call already gone, and is then armed again for the earliest one left.

import type { AbortableCall } from './abort-watch.js';
import { failure } from './failures.js';
import { GrpcStatus } from './types.js';

/** Fails calls with DeadlineExceeded once their deadline (epoch ms) passes. */
export class DeadlineWatch {
  /** Calls waiting, with their deadlines. */
  readonly #calls = new Map<AbortableCall, number>();
  #timer: NodeJS.Timeout | undefined;
  /** The deadline the timer is armed for; Infinity when it is not armed. */
  #armedFor = Number.POSITIVE_INFINITY;

  /** Fails `call` at `deadline` (epoch ms, in the future) unless it is {@link delete}d first. */
  add(call: AbortableCall, deadline: number): void {
    this.#calls.set(call, deadline);
    if (deadline < this.#armedFor) this.#arm(deadline);
  }

  /** Forgets `call`; the timer stops with the last call. */
  delete(call: AbortableCall): void {
    if (!this.#calls.delete(call) || this.#calls.size > 0) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
  }

  #arm(deadline: number): void {
    clearTimeout(this.#timer);
    this.#armedFor = deadline;
    this.#timer = setTimeout(() => this.#expire(), Math.max(1, deadline - Date.now()));
  }

  #expire(): void {
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    const now = Date.now();
    const expired: AbortableCall[] = [];
    let next = Number.POSITIVE_INFINITY;
    for (const [call, deadline] of this.#calls) {
      if (deadline <= now) expired.push(call);
      else if (deadline < next) next = deadline;
    }
    for (const call of expired) {
      this.#calls.delete(call);
      call.abort(failure(GrpcStatus.DeadlineExceeded, 'Deadline exceeded', call.sent));
    }
    // Aborting a call can start others (a retry on this channel): they armed the timer themselves.
    if (next < this.#armedFor && this.#calls.size > 0) this.#arm(next);
  }
}
