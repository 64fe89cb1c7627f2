// The verification matrix: every workload on every server under every fault it supports, plus
// the runs that must fail. `npm run verify` runs it and writes docs/verification.md's table.
import type { FaultName, TargetSpec } from '../target.js';
import type { VerifyOptions, VerifyResult } from '../verify.js';

/** One run of the matrix and the verdict it must reach. */
export interface MatrixCell {
  readonly name: string;
  readonly options: VerifyOptions;
  readonly expect: boolean;
}

/** How big each run is. */
export interface MatrixSize {
  /** Operations per KV run. */
  readonly ops: number;
  /** Upper bound on a KV run's time, in ms. */
  readonly maxMs: number;
  /** Time of a lock run, in ms. */
  readonly lockMs: number;
}

/** The full matrix (minutes) and the short one CI runs. */
export const MATRIX_SIZES = {
  full: { ops: 10_000, maxMs: 240_000, lockMs: 30_000 },
  short: { ops: 600, maxMs: 8_000, lockMs: 9_000 },
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
          options: { ...kv, workload, target: server.target, faults: [fault] },
          expect: true,
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
    cells.push({
      name: `lock unfenced on ${server.name}, client-pause`,
      options: { ...lock, target: server.target, fenced: false },
      expect: false,
    });
    cells.push({
      name: `lock fenced on ${server.name}, client-pause`,
      options: { ...lock, target: server.target, fenced: true },
      expect: true,
    });
  }
  // Leases expired by virtual time while a holder runs on in its critical section (the lock's
  // anomaly without a stopped process); the embedded targets run on a virtual clock for it.
  for (const server of short ? [SERVERS[1]!] : [SERVERS[0]!, SERVERS[1]!]) {
    for (const fenced of [false, true]) {
      cells.push({
        name: `lock ${fenced ? 'fenced' : 'unfenced'} on ${server.name}, lease-expiry`,
        options: { ...lock, target: server.target, fenced, faults: ['lease-expiry'] },
        expect: fenced,
      });
    }
  }
  for (const [server, fault] of [
    [SERVERS[1]!, 'partition'],
    [SERVERS[3]!, 'kill'],
  ] as const) {
    cells.push({
      name: `watch on ${server.name}, ${fault}`,
      options: {
        workload: 'watch',
        clients: 6,
        durationMs: size.lockMs,
        target: server.target,
        faults: [fault],
        faultIntervalMs: 1_000,
        faultDurationMs: 1_500,
      },
      expect: true,
    });
  }
  // lease-expiry: every leader's lease expires at once and its key goes; the next must win.
  for (const [server, fault] of [
    [SERVERS[1]!, 'kill'],
    [SERVERS[3]!, 'kill'],
    ...(short ? [] : ([[SERVERS[1]!, 'lease-expiry']] as const)),
  ] as const) {
    cells.push({
      name: `election on ${server.name}, ${fault}`,
      options: {
        workload: 'election',
        clients: 6,
        durationMs: size.lockMs,
        target: server.target,
        faults: [fault],
        faultIntervalMs: 1_000,
        faultDurationMs: 1_500,
      },
      expect: true,
    });
  }
  // By time, not by operations: the anomaly needs the fault to have happened, and reads after it.
  const catches = {
    workload: 'register',
    clients: 6,
    durationMs: short ? 6_000 : 20_000,
  } as const;
  cells.push({
    name: 'register, serializable reads, on embedded x3, partition',
    options: {
      ...catches,
      target: { kind: 'embedded', members: 3 },
      serializable: true,
      faults: ['partition'],
      faultIntervalMs: 300,
      faultDurationMs: 2_000,
    },
    expect: false,
  });
  cells.push({
    name: 'register on an in-memory etcdkit-server, kill -9',
    options: {
      ...catches,
      // Two clients: the server on its own HTTP/2 made six write 850,000 operations in 40 s, more
      // than the checker decides in its budget; the loss shows in any read after a restart.
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
  });
  return [...cells, ...rest];
}

/** One row of the results table. */
export function resultRow(cell: MatrixCell, result: VerifyResult | Error): string {
  if (result instanceof Error)
    return `| ${cell.name} | - | - | error: ${result.message.split('\n')[0]} | ${cell.expect} | FAILED |`;
  const o = result.outcomes;
  const ok = result.valid === cell.expect ? 'as expected' : 'UNEXPECTED';
  return `| ${cell.name} | ${result.ops} | ${o.ok} / ${o.fail} / ${o.unknown} | ${result.valid}${result.anomalies.length > 0 ? ` (${result.anomalies.length} anomalies)` : ''} | ${cell.expect} | ${ok} |`;
}

/** The header of the results table. */
export const RESULTS_HEADER = [
  '| run | ops | ok / fail / unknown | valid | expected | |',
  '| --- | --- | --- | --- | --- | --- |',
];
