// A clock that only moves when a test says so. Timers run in due-time order (ties in the order they
// were set), each one seeing now() equal to its own due time, so what happens during an advance is
// the same on every run: a lease granted for 5 s is revoked when the clock passes 5 s, never before,
// however slow the machine.
import type { Clock, Timer } from './clock.js';

interface PendingTimer {
  readonly due: number;
  /** Order of setting, to break ties between timers due at the same time. */
  readonly sequence: number;
  readonly callback: () => unknown;
  cancelled: boolean;
}

/** A {@link Clock} that tests advance by hand: `await server.clock.advance(5_000)`. */
export class VirtualClock implements Clock {
  #current: number;
  #sequence = 0;
  readonly #pending: PendingTimer[] = [];
  /** Advances asked for and not finished yet; each runs after the one before it. */
  #outstanding = 0;
  #tail: Promise<void> = Promise.resolve();

  /** `startMs` is the clock's time before the first advance (default 0). */
  constructor(startMs = 0) {
    this.#current = startMs;
  }

  now(): number {
    return this.#current;
  }

  setTimer(callback: () => void, delayMs: number): Timer {
    const timer: PendingTimer = {
      due: this.#current + Math.max(0, delayMs),
      sequence: this.#sequence++,
      callback,
      cancelled: false,
    };
    this.#pending.push(timer);
    return {
      cancel: () => {
        timer.cancelled = true;
      },
    };
  }

  /** Number of timers waiting to run (cancelled ones excluded). */
  get pendingTimers(): number {
    return this.#pending.filter((timer) => !timer.cancelled).length;
  }

  /**
   * Moves time forward by `ms`, running every timer that falls due on the way, in order, including
   * timers those timers set. Synchronous callbacks run before this returns; a callback that returns
   * a promise is awaited before the next one runs, so await the result. If callbacks throw, the
   * other due timers still run and the returned promise rejects with the first error.
   *
   * The jump is instant, and clients refresh their leases on real time, so it models every client
   * being stalled for `ms` (a GC pause, a partition): a lease not refreshed within the jump (one
   * whose remaining TTL is shorter) expires, even one a client keeps alive.
   */
  advance(ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) {
      return Promise.reject(new RangeError(`cannot advance a clock by ${ms} ms`));
    }
    this.#outstanding++;
    const run = (): Promise<void> => this.#runFor(ms);
    // With nothing in progress, run now: synchronous callbacks then finish before this returns.
    const result = this.#outstanding === 1 ? run() : this.#tail.then(run, run);
    this.#tail = result.catch(() => undefined);
    return result;
  }

  /** Moves time forward to `time` (no-op if it is already past). See {@link advance}. */
  advanceTo(time: number): Promise<void> {
    return this.advance(Math.max(0, time - this.#current));
  }

  async #runFor(ms: number): Promise<void> {
    const target = this.#current + ms;
    let firstError: { error: unknown } | undefined;
    try {
      for (let timer = this.#takeNext(target); timer; timer = this.#takeNext(target)) {
        this.#current = timer.due;
        try {
          const result = timer.callback();
          if (isThenable(result)) await result;
        } catch (error) {
          firstError ??= { error };
        }
      }
      this.#current = Math.max(this.#current, target);
    } finally {
      // Inside the run, not after it, so that an advance that ran synchronously is over at once.
      this.#outstanding--;
    }
    if (firstError !== undefined) throw firstError.error;
  }

  /** Removes and returns the earliest timer due at or before `target`. */
  #takeNext(target: number): PendingTimer | undefined {
    let best = -1;
    for (let i = 0; i < this.#pending.length; i++) {
      const timer = this.#pending[i]!;
      if (timer.cancelled || timer.due > target) continue;
      const chosen = this.#pending[best];
      if (
        chosen === undefined ||
        timer.due < chosen.due ||
        (timer.due === chosen.due && timer.sequence < chosen.sequence)
      ) {
        best = i;
      }
    }
    // Cancelled timers are dropped as they are passed over, so the list stays short.
    const taken = best === -1 ? undefined : this.#pending[best];
    for (let i = this.#pending.length - 1; i >= 0; i--) {
      if (this.#pending[i]!.cancelled || i === best) this.#pending.splice(i, 1);
    }
    return taken;
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
