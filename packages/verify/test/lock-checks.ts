// What the lock workload's tests check of a run's counter history.
import { expect } from 'vitest';
import type { CounterInput, CounterOutput } from '../src/models/counter.js';
import type { VerifyResult } from '../src/verify.js';

/** The first anomaly holds two critical sections that read the same value: an increment lost. */
export function expectLostIncrement(result: VerifyResult): void {
  const froms = result.anomalies[0]!.ops.flatMap((op) => {
    const input = op.input as CounterInput;
    return input.type === 'increment' ? [input.from] : [];
  });
  expect(new Set(froms).size).toBeLessThan(froms.length);
}

/** Critical sections whose write the fence refused. */
export function refusedIncrements(result: VerifyResult): number {
  return result.history.filter(
    (op) =>
      (op.output as CounterOutput | undefined)?.type === 'increment' &&
      !(op.output as { wrote: boolean }).wrote,
  ).length;
}
