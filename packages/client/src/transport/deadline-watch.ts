// The deadlines of a channel's calls, on one timer: a timer per call (made, then cleared when the
// call ends, nearly always long before its deadline) costs more than the rest of the deadline work.
// The timer is armed for the earliest deadline; calls that end are only forgotten, so it may fire
// for a call already gone, and is then armed again for the earliest one left. It also stays armed
// (unreferenced) once no call is left: a client making one call at a time (a lock contender) would
// otherwise make and clear a timer per call; the next call, with a later deadline, finds it armed.

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
  /** Whether the timer keeps the process alive (only while calls wait). */
  #referenced = false;
  /** After {@link stop}: the timer goes with the last call, as nothing keeps the watch. */
  #stopped = false;
  readonly #expire = (): void => this.#expired();

  /** Fails `call` at `deadline` (epoch ms, in the future) unless it is {@link delete}d first. */
  add(call: AbortableCall, deadline: number): void {
    this.#calls.set(call, deadline);
    if (deadline < this.#armedFor) this.#arm(deadline);
    else if (!this.#referenced) {
      this.#timer?.ref();
      this.#referenced = true;
    }
  }

  /** Forgets `call`; with the last call the timer no longer keeps the process alive. */
  delete(call: AbortableCall): void {
    if (!this.#calls.delete(call) || this.#calls.size > 0) return;
    if (this.#stopped) this.#disarm();
    else if (this.#referenced) {
      this.#timer?.unref();
      this.#referenced = false;
    }
  }

  /** The channel closed: the timer goes now and with every later last call. */
  stop(): void {
    this.#stopped = true;
    if (this.#calls.size === 0) this.#disarm();
  }

  #disarm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    this.#referenced = false;
  }

  #arm(deadline: number): void {
    clearTimeout(this.#timer);
    this.#armedFor = deadline;
    this.#timer = setTimeout(this.#expire, Math.max(1, deadline - Date.now()));
    this.#referenced = true;
  }

  #expired(): void {
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    this.#referenced = false;
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
