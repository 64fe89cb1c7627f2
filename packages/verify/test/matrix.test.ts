// The verification matrix: the short one (CI's gate) holds no run whose verdict needs luck, and a
// run is judged by the anomaly it had to find, not only by its verdict.
import { describe, expect, it } from 'vitest';
import type { Anomaly } from '../src/checker/check.js';
import { judge, MATRIX_SIZES, type MatrixCell, matrixCells } from '../src/matrix/matrix.js';
import type { VerifyResult } from '../src/verify.js';

const short = matrixCells(MATRIX_SIZES.short, true);
const full = matrixCells(MATRIX_SIZES.full, false);
const named = (cells: MatrixCell[], name: string) => cells.find((c) => c.name === name)!;

/** A result with these verdict and anomalies, nothing else of interest. */
function result(valid: boolean, anomalies: Anomaly[], extra: object = {}): VerifyResult {
  return {
    workload: 'register',
    target: 'hand-built',
    valid,
    ops: 0,
    outcomes: { ok: 0, fail: 0, unknown: 0 },
    anomalies,
    faults: [],
    history: [],
    check: { valid, ops: 0, partitions: 0, undecided: 0, elapsedMs: 0 },
    runMs: 0,
    ...extra,
  };
}

const anomaly = (ids: number[], ops: Partial<Anomaly['ops'][number]>[] = []): Anomaly => ({
  model: 'm',
  kind: 'not-linearizable',
  ops: ids.map((id, i) => ({
    id,
    process: 0,
    input: {},
    output: undefined,
    status: 'ok',
    start: 0,
    end: 1,
    ...ops[i],
  })),
  minimal: true,
  timeline: [],
  explanation: '',
});

describe('the short matrix', () => {
  it('gates on every run, and each run that must fail is scripted or holds its fault until it happened', () => {
    expect(short.every((c) => c.gates)).toBe(true);
    const mustFail = short.filter((c) => !c.expect).map((c) => [c.name, c.anomaly?.name]);
    expect(mustFail).toEqual([
      ['lock unfenced on embedded, client-pause', 'lost increment'],
      ['lock unfenced on etcd, client-pause', 'lost increment'],
      ['lock unfenced on embedded x3, lease-expiry', 'lost increment'],
      [
        'register, serializable read from a cut-off member, on embedded x3, scripted',
        'stale read: put v1, put v2, get -> v1',
      ],
      [
        'register on an in-memory etcdkit-server, kill -9, scripted',
        'lost write: put v1, get -> absent',
      ],
    ]);
  });

  it('runs every random-schedule row until a fault has been applied and healed', () => {
    const scheduled = short.flatMap((c) =>
      'script' in c.run || c.run.workload === 'lock' ? [] : [[c.name, c.run.minFaults]],
    );
    expect(scheduled).toHaveLength(12);
    for (const [name, minFaults] of scheduled) expect([name, minFaults]).toEqual([name, 1]);
  });

  it('leaves the random-schedule anomalies to the full matrix, where they do not gate', () => {
    const random = full.filter((c) => !c.gates).map((c) => c.name);
    expect(random).toEqual([
      'register, serializable reads, on embedded x3, partition',
      'register on an in-memory etcdkit-server, kill -9',
    ]);
    for (const name of random) expect(short.map((c) => c.name)).not.toContain(name);
  });
});

describe('judge', () => {
  const scripted = named(short, 'register on an in-memory etcdkit-server, kill -9, scripted');
  const lock = named(short, 'lock unfenced on embedded, client-pause');

  it('wants a scripted run to report exactly the operations its script made conflict', () => {
    const expected = { expectedAnomaly: [0, 3] };
    expect(judge(scripted, result(false, [anomaly([0, 3])], expected))).toEqual({
      verdict: 'as expected (lost write: put v1, get -> absent)',
      fails: false,
    });
    for (const anomalies of [[anomaly([0, 2])], [anomaly([0, 3]), anomaly([5, 6])]])
      expect(judge(scripted, result(false, anomalies, expected))).toEqual({
        verdict: 'UNEXPECTED (not the lost write: put v1, get -> absent)',
        fails: true,
      });
    expect(judge(scripted, result(true, [], expected))).toEqual({
      verdict: 'UNEXPECTED',
      fails: true,
    });
  });

  it('wants the lock runs to show two critical sections that read the same value and wrote', () => {
    const increment = (from: number) => ({
      input: { type: 'increment', from },
      output: { type: 'increment', wrote: true },
    });
    const lost = anomaly([1, 2, 3], [increment(0), increment(1), increment(1)]);
    expect(judge(lock, result(false, [lost])).fails).toBe(false);
    const other = anomaly([1, 2], [increment(0), increment(1)]);
    expect(judge(lock, result(false, [other]))).toEqual({
      verdict: 'UNEXPECTED (not the lost increment)',
      fails: true,
    });
  });

  it('reports a random-schedule miss without failing the matrix, and fails on an error', () => {
    const random = named(full, 'register, serializable reads, on embedded x3, partition');
    expect(judge(random, result(true, []))).toEqual({
      verdict: 'UNEXPECTED, not gating: the schedule did not provoke it this run',
      fails: false,
    });
    expect(judge(random, new Error('no target'))).toEqual({ verdict: 'FAILED', fails: true });
  });
});
