// Jepsen's lock scenario: a worker SIGSTOPped in its critical section until its lease expires.
import { describe, expect, it } from 'vitest';
import type { CounterInput } from '../src/models/counter.js';
import type { TargetSpec } from '../src/target.js';
import { verify } from '../src/verify.js';
import { expectLostIncrement, refusedIncrements } from './lock-checks.js';

const RUN = {
  workload: 'lock',
  clients: 3,
  durationMs: 9_000,
  faults: ['client-pause'],
  faultIntervalMs: 300,
} as const;
const TIMEOUT = 120_000;

describe.each<[string, TargetSpec]>([
  ['embedded', { kind: 'embedded' }],
  ['etcd', { kind: 'etcd' }],
])('lock-guarded counter with client pauses [backend: %s]', (_, target) => {
  it('unfenced: the paused worker writes after its lease expired and an increment is lost', {
    timeout: TIMEOUT,
  }, async () => {
    const result = await verify({ ...RUN, target, fenced: false });
    expect(result.faults.filter((f) => f.name === 'client-pause').length).toBeGreaterThanOrEqual(1);
    expect(result.valid).toBe(false);
    expectLostIncrement(result);
  });

  it('fenced with Hold.txn: the stale write is refused and the counter is right', {
    timeout: TIMEOUT,
  }, async () => {
    const result = await verify({ ...RUN, target, fenced: true });
    expect(result.faults.filter((f) => f.name === 'client-pause').length).toBeGreaterThanOrEqual(1);
    expect(result.anomalies).toEqual([]);
    expect(result.valid).toBe(true);
    expect(refusedIncrements(result)).toBeGreaterThanOrEqual(1);
    // The final read counts the increments that wrote (and those whose write ended unknown, if
    // they landed).
    const wrote = result.history.filter(
      (op) => op.status === 'ok' && (op.output as { wrote?: boolean }).wrote === true,
    ).length;
    const final = result.history.find((op) => (op.input as CounterInput).type === 'read')!;
    const value = (final.output as { value: number }).value;
    expect(value).toBeGreaterThanOrEqual(wrote);
    expect(value).toBeLessThanOrEqual(wrote + result.outcomes.unknown);
  });
});
