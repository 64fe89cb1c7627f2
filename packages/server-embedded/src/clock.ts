// Time reaches the server through this interface so that lease expiry, progress notifications and
// other timers can run on a virtual clock that tests advance, instead of on the wall clock.

/** A scheduled callback that can be cancelled. */
export interface Timer {
  /** Prevents the callback from running; harmless after it ran. */
  cancel(): void;
}

/** A source of time and timers. */
export interface Clock {
  /** Milliseconds since an arbitrary, fixed origin; never goes backwards. */
  now(): number;
  /**
   * Runs `callback` once, after at least `delayMs` milliseconds of this clock's time. A callback
   * may return a promise; a virtual clock waits for it before running the next timer.
   */
  setTimer(callback: () => void, delayMs: number): Timer;
}

/** The real clock: monotonic time and Node.js timers that do not keep the process alive. */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimer(callback, delayMs) {
    const handle = setTimeout(callback, delayMs);
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
};

/** Runs `tick` every `intervalMs` of `clock`'s time until the returned timer is cancelled. */
export function every(clock: Clock, intervalMs: number, tick: () => void): Timer {
  let cancelled = false;
  let current: Timer | undefined;
  const schedule = (): void => {
    current = clock.setTimer(() => {
      if (cancelled) return;
      // Re-armed before the tick runs, so a tick that throws does not stop the schedule.
      schedule();
      tick();
    }, intervalMs);
  };
  schedule();
  return {
    cancel() {
      cancelled = true;
      current?.cancel();
    },
  };
}
