import { describe, expect, it } from 'vitest';
import { checkLinearizable } from '../src/checker/check.js';
import { type ElectionInput, type ElectionOutput, electionModel } from '../src/models/election.js';
import type { TargetSpec } from '../src/target.js';
import { verify } from '../src/verify.js';
import { history } from './histories.js';

type Row = Parameters<typeof history<ElectionInput, ElectionOutput>>[0][number];
const won = (p: number, start: number, end: number, value: string, epoch: bigint): Row => ({
  p,
  start,
  end,
  input: { type: 'campaign', value },
  output: { type: 'campaign', epoch },
});
const leader = (p: number, start: number, end: number, seen?: [bigint, string]): Row => ({
  p,
  start,
  end,
  input: { type: 'leader' },
  output: {
    type: 'leader',
    leader: seen === undefined ? undefined : { epoch: seen[0], value: seen[1] },
  },
});
const resign = (p: number, start: number, end: number, epoch: bigint): Row => ({
  p,
  start,
  end,
  input: { type: 'resign', epoch },
  output: { type: 'done' },
});
const proclaim = (p: number, start: number, end: number, epoch: bigint, value: string): Row => ({
  p,
  start,
  end,
  input: { type: 'proclaim', epoch, value },
  output: { type: 'done' },
});
const check = (rows: Row[]) => checkLinearizable(electionModel(), history(rows));

describe('election model', () => {
  it('accepts leaders in turn with increasing epochs, and reads of the current one', () => {
    expect(
      check([
        won(0, 0, 1, 'a', 5n),
        leader(9, 2, 3, [5n, 'a']),
        proclaim(0, 4, 5, 5n, 'a2'),
        leader(9, 6, 7, [5n, 'a2']),
        resign(0, 8, 9, 5n),
        won(1, 7, 10, 'b', 9n),
        leader(9, 11, 12, [9n, 'b']),
      ]).valid,
    ).toBe(true);
  });

  it('rejects two leaders of one epoch and an epoch that goes back', () => {
    expect(check([won(0, 0, 1, 'a', 5n), won(1, 0, 1, 'b', 5n)]).valid).toBe(false);
    expect(check([won(0, 0, 1, 'a', 5n), resign(0, 2, 3, 5n), won(1, 4, 5, 'b', 4n)]).valid).toBe(
      false,
    );
  });

  it('rejects a read of a leader that was replaced, and a proclaim after the leadership ended', () => {
    const first = [won(0, 0, 1, 'a', 5n), resign(0, 2, 3, 5n), won(1, 4, 5, 'b', 9n)];
    const stale = check([...first, leader(9, 6, 7, [5n, 'a'])]);
    expect(stale.valid).toBe(false);
    expect(stale.anomalies[0]!.ops.map((op) => op.id)).toEqual([0, 2, 3]);
    expect(check([...first, proclaim(0, 6, 7, 5n, 'a2')]).valid).toBe(false);
  });

  it('learns the epoch of a campaign whose answer was lost from a read', () => {
    const lost: Row = {
      p: 0,
      start: 0,
      input: { type: 'campaign', value: 'a' },
      status: 'unknown',
    };
    expect(check([lost, leader(9, 5, 6, [7n, 'a']), won(1, 7, 8, 'b', 9n)]).valid).toBe(true);
    expect(check([lost, leader(9, 5, 6, [7n, 'a']), won(1, 7, 8, 'b', 6n)]).valid).toBe(false);
  });
});

describe.each<[string, TargetSpec]>([
  ['embedded', { kind: 'embedded', members: 3 }],
  ['etcd', { kind: 'etcd', members: 3 }],
])('election workload [backend: %s]', (_, target) => {
  it('stays valid while members are killed', { timeout: 120_000 }, async () => {
    const result = await verify({
      workload: 'election',
      target,
      clients: 4,
      durationMs: 5_000,
      faults: ['kill'],
      faultIntervalMs: 800,
      faultDurationMs: 800,
    });
    const campaigns = result.history.filter(
      (op) => (op.input as ElectionInput).type === 'campaign' && op.status === 'ok',
    );
    expect(campaigns.length).toBeGreaterThan(3);
    expect(result.anomalies).toEqual([]);
    expect(result.valid).toBe(true);
  });
});
