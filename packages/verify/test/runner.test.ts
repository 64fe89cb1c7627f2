// The fault schedule: a run lasts its duration, and longer when it must see its faults through.
import { describe, expect, it } from 'vitest';
import type { Target } from '../src/target.js';
import { runWithFaults, sleep } from '../src/workloads/runner.js';

/** A target whose only fault takes `applyMs` to apply, as a slow restart would. */
function slowTarget(applyMs: number): Target & { applied: number } {
  const target = {
    description: 'hand-built',
    endpoints: [],
    applied: 0,
    faults: {
      kill: async () => {
        await sleep(applyMs);
        target.applied++;
        return async () => {};
      },
    },
    stop: async () => {},
  };
  return target;
}

describe('runWithFaults', () => {
  const clientUntilStopped = (_: number, signal: AbortSignal) =>
    new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));

  it('ends at its duration without minFaults, even before any fault', async () => {
    const target = slowTarget(200);
    const events = await runWithFaults(
      target,
      { durationMs: 30, clients: 2 },
      { faults: ['kill'], faultIntervalMs: 100 },
      clientUntilStopped,
    );
    expect(events).toEqual([]);
    expect(target.applied).toBe(0);
  });

  it('goes on past its duration until minFaults faults have been applied and healed', async () => {
    const target = slowTarget(200);
    const events = await runWithFaults(
      target,
      { durationMs: 30, clients: 2, minFaults: 2 },
      { faults: ['kill'], faultIntervalMs: 100, faultDurationMs: 50 },
      clientUntilStopped,
    );
    expect(events.map((e) => [e.name, e.error])).toEqual([
      ['kill', undefined],
      ['kill', undefined],
    ]);
    expect(target.applied).toBe(2);
  });

  it('ignores minFaults when the target can do none of the faults', async () => {
    const events = await runWithFaults(
      slowTarget(0),
      { durationMs: 30, clients: 1, minFaults: 3 },
      { faults: ['partition'] },
      clientUntilStopped,
    );
    expect(events).toEqual([]);
  });
});
