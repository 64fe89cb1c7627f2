// The verification matrix: every workload on every server under every fault it supports, plus
// the runs that must fail. `npm run verify` runs it and writes docs/verification.md's table.
import type { CounterInput, CounterOutput } from '../models/counter.js';
import type { FaultName, TargetSpec } from '../target.js';
import type { VerifyOptions, VerifyResult } from '../verify.js';
import type { ScriptedResult, ScriptedRunName } from './scripted.js';

/** What a run that must fail must find: its anomaly, named, and how to recognise it. */
export interface ExpectedAnomaly {
  /** What it is, in a few words (the row names it). */
  readonly name: string;
  /** True when the run's anomalies show it. */
  readonly found: (result: VerifyResult) => boolean;
}

/** One run of the matrix and the verdict it must reach. */
export interface MatrixCell {
  readonly name: string;
  /** A run on a random fault schedule ({@link verify}), or a scripted one (scripted.ts). */
  readonly run: VerifyOptions | { readonly script: ScriptedRunName };
  readonly expect: boolean;
  /** For a run that must fail: the anomaly it must find (any anomaly when absent). */
  readonly anomaly?: ExpectedAnomaly;
  /**
   * False for a run whose expected anomaly needs a race to go its way (a random schedule): its
   * row is reported, and a miss does not fail `npm run verify`. The short matrix (CI) has none.
   */
  readonly gates: boolean;
}

/** A scripted run's anomaly: exactly the operations the script made conflict, nothing else. */
const scriptedAnomaly = (name: string): ExpectedAnomaly => ({
  name,
  found: (result) => {
    const expected = (result as Partial<ScriptedResult>).expectedAnomaly;
    const [anomaly, ...others] = result.anomalies;
    if (expected === undefined || anomaly === undefined || others.length > 0) return false;
    const ids = anomaly.ops.map((op) => op.id).sort((a, b) => a - b);
    return anomaly.minimal && ids.join() === [...expected].sort((a, b) => a - b).join();
  },
});

/** The lock's anomaly: two critical sections that read the same value and both wrote. */
const LOST_INCREMENT: ExpectedAnomaly = {
  name: 'lost increment',
  found: (result) =>
    result.anomalies.some((anomaly) => {
      const froms = anomaly.ops.flatMap((op) => {
        const input = op.input as CounterInput;
        const output = op.output as CounterOutput | undefined;
        const wrote = op.status === 'ok' && output?.type === 'increment' && output.wrote;
        return input.type === 'increment' && wrote ? [input.from] : [];
      });
      return new Set(froms).size < froms.length;
    }),
};

/** How big each run is. */
export interface MatrixSize {
  /** Upper bound on a KV run's operations. */
  readonly ops: number;
  /** Upper bound on a KV run's time, in ms (it goes on until its first fault has healed). */
  readonly maxMs: number;
  /** Time of a lock run, in ms. */
  readonly lockMs: number;
}

/**
 * The full matrix (minutes) and the short one CI runs. A short KV run is timed, not counted: 600
 * operations took under a second, before the first fault (due after 1 s) had begun.
 */
export const MATRIX_SIZES = {
  full: { ops: 10_000, maxMs: 240_000, lockMs: 30_000 },
  short: { ops: 10_000, maxMs: 3_000, lockMs: 9_000 },
} as const satisfies Record<string, MatrixSize>;

const SERVERS: readonly { name: string; target: TargetSpec; faults: readonly FaultName[] }[] = [
  { name: 'embedded', target: { kind: 'embedded' }, faults: ['kill', 'pause', 'leader'] },
  {
    name: 'embedded x3',
    target: { kind: 'embedded', members: 3 },
    faults: ['kill', 'pause', 'partition', 'leader'],
  },
  { name: 'etcd', target: { kind: 'etcd' }, faults: ['kill', 'pause', 'restart'] },
  { name: 'etcd x3', target: { kind: 'etcd', members: 3 }, faults: ['kill', 'pause', 'leader'] },
];

/** The cells of the matrix; `short` keeps one fault per server and workload. */
export function matrixCells(size: MatrixSize, short: boolean): MatrixCell[] {
  const cells: MatrixCell[] = [];
  const kv = {
    maxOps: size.ops,
    durationMs: size.maxMs,
    clients: 8,
    faultIntervalMs: 1_000,
    faultDurationMs: 1_500,
    // However slow the machine, a run has had a fault and its heal while its clients ran.
    minFaults: 1,
  };
  // One fault per server and workload first, the other faults last: a run cut short has covered
  // every server and workload.
  const rest: MatrixCell[] = [];
  for (const server of SERVERS) {
    for (const workload of ['register', 'txn'] as const) {
      const first = server.faults[workload === 'register' ? 0 : 1]!;
      for (const fault of short ? [first] : server.faults) {
        const cell = {
          name: `${workload} on ${server.name}, ${fault}`,
          run: { ...kv, workload, target: server.target, faults: [fault] },
          expect: true,
          gates: true,
        };
        (fault === first ? cells : rest).push(cell);
      }
    }
  }
  const lock = {
    workload: 'lock',
    clients: 3,
    durationMs: size.lockMs,
    faults: ['client-pause'],
    faultIntervalMs: 500,
  } as const;
  for (const server of [SERVERS[0]!, SERVERS[2]!]) {
    // The pause lasts until another worker has written the counter (lock-workload.ts): the
    // paused worker's write comes after that one, every run.
    cells.push({
      name: `lock unfenced on ${server.name}, client-pause`,
      run: { ...lock, target: server.target, fenced: false },
      expect: false,
      anomaly: LOST_INCREMENT,
      gates: true,
    });
    cells.push({
      name: `lock fenced on ${server.name}, client-pause`,
      run: { ...lock, target: server.target, fenced: true },
      expect: true,
      gates: true,
    });
  }
  // Leases expired by virtual time while a holder runs on in its critical section (the lock's
  // anomaly without a stopped process); the embedded targets run on a virtual clock for it.
  for (const server of short ? [SERVERS[1]!] : [SERVERS[0]!, SERVERS[1]!]) {
    for (const fenced of [false, true]) {
      cells.push({
        name: `lock ${fenced ? 'fenced' : 'unfenced'} on ${server.name}, lease-expiry`,
        run: { ...lock, target: server.target, fenced, faults: ['lease-expiry'] },
        expect: fenced,
        ...(fenced ? {} : { anomaly: LOST_INCREMENT }),
        gates: true,
      });
    }
  }
  // Watch and election runs: six clients through one kind of fault, as long as a lock run.
  const throughFault = (
    workload: 'watch' | 'election',
    server: (typeof SERVERS)[number],
    fault: FaultName,
  ): MatrixCell => ({
    name: `${workload} on ${server.name}, ${fault}`,
    gates: true,
    run: {
      workload,
      clients: 6,
      durationMs: size.lockMs,
      target: server.target,
      faults: [fault],
      faultIntervalMs: 1_000,
      faultDurationMs: 1_500,
      minFaults: 1,
    },
    expect: true,
  });
  for (const [server, fault] of [
    [SERVERS[1]!, 'partition'],
    [SERVERS[3]!, 'kill'],
  ] as const) {
    cells.push(throughFault('watch', server, fault));
  }
  // lease-expiry: every leader's lease expires at once and its key goes; the next must win.
  for (const [server, fault] of [
    [SERVERS[1]!, 'kill'],
    [SERVERS[3]!, 'kill'],
    ...(short ? [] : ([[SERVERS[1]!, 'lease-expiry']] as const)),
  ] as const) {
    cells.push(throughFault('election', server, fault));
  }
  // The anomalies the checker must catch, made by a script: the fault comes between chosen
  // operations, so each run has exactly one anomaly to find.
  cells.push({
    name: 'register, serializable read from a cut-off member, on embedded x3, scripted',
    run: { script: 'stale-serializable-read' },
    expect: false,
    anomaly: scriptedAnomaly('stale read: put v1, put v2, get -> v1'),
    gates: true,
  });
  cells.push({
    name: 'register on an in-memory etcdkit-server, kill -9, scripted',
    run: { script: 'lost-on-kill-9' },
    expect: false,
    anomaly: scriptedAnomaly('lost write: put v1, get -> absent'),
    gates: true,
  });
  if (!short) rest.push(...randomCatches());
  return [...cells, ...rest];
}

/**
 * The same anomalies on a random schedule, in the full matrix only: whether a stale read or a read
 * after a restart happens depends on timing, so they are reported and do not gate.
 */
function randomCatches(): MatrixCell[] {
  // By time, not by operations: the anomaly needs the fault to have happened, and reads after it.
  const catches = { workload: 'register', clients: 6, durationMs: 20_000 } as const;
  return [
    {
      name: 'register, serializable reads, on embedded x3, partition',
      run: {
        ...catches,
        target: { kind: 'embedded', members: 3 },
        serializable: true,
        faults: ['partition'],
        faultIntervalMs: 300,
        faultDurationMs: 2_000,
      },
      expect: false,
      gates: false,
    },
    {
      name: 'register on an in-memory etcdkit-server, kill -9',
      run: {
        ...catches,
        // Two clients: the server on its own HTTP/2 made six write 850,000 operations in 40 s,
        // more than the checker decides in its budget; the loss shows in any read after a restart.
        clients: 2,
        durationMs: 40_000,
        target: { kind: 'etcdkit-server' },
        faults: ['kill'],
        // Quiet long enough after each restart for the clients to reconnect (their backoff grows
        // to 10 s while the server is down, seconds on a loaded machine) and read what was lost.
        faultIntervalMs: 11_000,
        faultDurationMs: 100,
      },
      expect: false,
      gates: false,
    },
  ];
}

/** A run's outcome: `as expected`, or why not, and whether that fails the matrix. */
export function judge(
  cell: MatrixCell,
  result: VerifyResult | Error,
): { verdict: string; fails: boolean } {
  if (result instanceof Error) return { verdict: 'FAILED', fails: true };
  let miss: string | undefined;
  if (result.valid !== cell.expect) miss = 'UNEXPECTED';
  else if (cell.anomaly !== undefined && !cell.anomaly.found(result))
    miss = `UNEXPECTED (not the ${cell.anomaly.name})`;
  if (miss === undefined)
    return {
      verdict: cell.anomaly ? `as expected (${cell.anomaly.name})` : 'as expected',
      fails: false,
    };
  return cell.gates
    ? { verdict: miss, fails: true }
    : { verdict: `${miss}, not gating: the schedule did not provoke it this run`, fails: false };
}

/** One row of the results table. */
export function resultRow(cell: MatrixCell, result: VerifyResult | Error): string {
  const { verdict } = judge(cell, result);
  if (result instanceof Error)
    return `| ${cell.name} | - | - | error: ${result.message.split('\n')[0]} | ${cell.expect} | ${verdict} |`;
  const o = result.outcomes;
  return `| ${cell.name} | ${result.ops} | ${o.ok} / ${o.fail} / ${o.unknown} | ${result.valid}${result.anomalies.length > 0 ? ` (${result.anomalies.length} anomalies)` : ''} | ${cell.expect} | ${verdict} |`;
}

/** The header of the results table. */
export const RESULTS_HEADER = [
  '| run | ops | ok / fail / unknown | valid | expected | |',
  '| --- | --- | --- | --- | --- | --- |',
];
