// Short runs of the KV workloads under faults, on the embedded server and on real etcd. The
// anomalies the checker must catch are made by scripts (scripted.test.ts): on a random schedule
// they happen only when a race goes their way. The long runs (10,000+ operations) are
// `npm run verify`.
import { describe, expect, it } from 'vitest';
import type { TargetSpec } from '../src/target.js';
import { verify } from '../src/verify.js';

// Two faults at least, however slow the machine: the kill-and-leader run has one of each.
const RUN = {
  durationMs: 4_000,
  minFaults: 2,
  clients: 4,
  faultIntervalMs: 600,
  faultDurationMs: 800,
} as const;
const TIMEOUT = 120_000;

describe.each<[string, TargetSpec, TargetSpec]>([
  ['embedded', { kind: 'embedded' }, { kind: 'embedded', members: 3 }],
  ['etcd', { kind: 'etcd' }, { kind: 'etcd', members: 3 }],
])('KV workloads stay linearizable under faults [backend: %s]', (_, single, cluster) => {
  it('register on one member, killed and restarted', { timeout: TIMEOUT }, async () => {
    const result = await verify({ ...RUN, workload: 'register', target: single, faults: ['kill'] });
    expect(result.faults.length).toBeGreaterThanOrEqual(2);
    expect(result.faults.filter((f) => f.error !== undefined)).toEqual([]);
    expect(result.outcomes.ok).toBeGreaterThan(50);
    expect(result.anomalies).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('txn on one member, paused', { timeout: TIMEOUT }, async () => {
    const result = await verify({ ...RUN, workload: 'txn', target: single, faults: ['pause'] });
    expect(result.faults.length).toBeGreaterThanOrEqual(2);
    expect(result.outcomes.ok).toBeGreaterThan(50);
    expect(result.valid).toBe(true);
  });

  it('txn on 3 members, members killed and the leader changed', { timeout: TIMEOUT }, async () => {
    const result = await verify({
      ...RUN,
      workload: 'txn',
      target: cluster,
      faults: ['kill', 'leader'],
    });
    expect(result.faults.map((f) => f.name)).toEqual(expect.arrayContaining(['kill', 'leader']));
    expect(result.faults.filter((f) => f.error !== undefined)).toEqual([]);
    expect(result.outcomes.ok).toBeGreaterThan(50);
    expect(result.valid).toBe(true);
  });

  it('register on 3 members, members paused', { timeout: TIMEOUT }, async () => {
    const result = await verify({
      ...RUN,
      workload: 'register',
      target: cluster,
      faults: ['pause'],
    });
    expect(result.outcomes.ok).toBeGreaterThan(50);
    expect(result.valid).toBe(true);
  });
});
