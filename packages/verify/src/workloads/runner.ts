// Running clients and a fault schedule side by side for a while.
import { systemMonotonicMs } from '../recorder.js';
import type { FaultName, Target } from '../target.js';

/** A fault as it happened: its name and when it was on (monotonic ms). */
export interface FaultEvent {
  readonly name: FaultName;
  readonly start: number;
  readonly end: number;
  /** Set when applying or healing it failed. */
  readonly error?: string;
}

/** How long and how hard a workload runs. */
export interface RunLimits {
  /** Stop after this long, in ms. */
  readonly durationMs: number;
  /** Stop after this many operations (whichever comes first). Default unlimited. */
  readonly maxOps?: number;
  /** Concurrent clients. */
  readonly clients: number;
  /**
   * The run goes on past `durationMs` until this many faults have been applied and healed, so a
   * run on a slow machine has its faults too (only with faults the target supports). Default 0.
   */
  readonly minFaults?: number;
}

/** Options of the fault schedule. */
export interface FaultSchedule {
  /** Faults to apply, in turn, those the target cannot are left out. */
  readonly faults: readonly FaultName[];
  /** Quiet time between faults, in ms. Default 1 000. */
  readonly faultIntervalMs?: number;
  /** How long each fault lasts, in ms. Default 1 500. */
  readonly faultDurationMs?: number;
}

/**
 * Process numbers of a client: a client whose operation ended unknown goes on as a new process,
 * as in Jepsen, since the old one may still have that operation in flight.
 */
export class ProcessIds {
  #next = 0;
  /** A fresh process number. */
  fresh(): number {
    return this.#next++;
  }
}

/** Counts operations against a limit shared by all clients. */
export class OpBudget {
  #used = 0;
  readonly #max: number;
  /** @param max how many operations in all */
  constructor(max: number) {
    this.#max = max;
  }
  /** Takes one; false when none are left. */
  take(): boolean {
    if (this.#used >= this.#max) return false;
    this.#used++;
    return true;
  }
  /** How many were taken. */
  get used(): number {
    return this.#used;
  }
}

/**
 * Runs `client(i, signal)` for each of `limits.clients` clients until the duration ends (the
 * signal aborts) or they return, while applying the scheduled faults; heals every fault before
 * returning.
 */
export async function runWithFaults(
  target: Target,
  limits: RunLimits,
  schedule: FaultSchedule,
  client: (index: number, signal: AbortSignal) => Promise<void>,
): Promise<FaultEvent[]> {
  const stop = new AbortController();
  const events: FaultEvent[] = [];
  const faults = schedule.faults.filter((f) => target.faults[f] !== undefined);
  const minFaults = faults.length > 0 ? (limits.minFaults ?? 0) : 0;
  let timeUp = false;
  const stopWhenDone = () => {
    if (timeUp && events.length >= minFaults) stop.abort();
  };
  const timer = setTimeout(() => {
    timeUp = true;
    stopWhenDone();
  }, limits.durationMs);
  const nemesis = (async () => {
    for (let turn = 0; faults.length > 0 && !stop.signal.aborted; turn++) {
      await sleep(schedule.faultIntervalMs ?? 1_000, stop.signal);
      if (stop.signal.aborted) break;
      const name = faults[turn % faults.length]!;
      const start = systemMonotonicMs();
      let heal: (() => Promise<void>) | undefined;
      let error: string | undefined;
      try {
        heal = await target.faults[name]!();
        await sleep(schedule.faultDurationMs ?? 1_500, stop.signal);
      } catch (e) {
        error = String(e);
      }
      try {
        await heal?.();
      } catch (e) {
        error = String(e);
      }
      events.push({
        name,
        start,
        end: systemMonotonicMs(),
        ...(error === undefined ? {} : { error }),
      });
      stopWhenDone();
    }
  })();
  try {
    await Promise.all(
      Array.from({ length: limits.clients }, async (_, i) => {
        await client(i, stop.signal);
      }),
    );
  } finally {
    stop.abort();
    clearTimeout(timer);
    await nemesis;
  }
  return events;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
