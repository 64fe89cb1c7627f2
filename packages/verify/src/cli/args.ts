// The etcdkit-verify command line, parsed into what verify() takes.
import { parseArgs } from 'node:util';
import type { FaultName, TargetSpec } from '../target.js';
import { type VerifyOptions, WORKLOADS, type WorkloadName } from '../verify.js';

/** Usage text of `etcdkit-verify`. */
export const USAGE = `Usage: etcdkit-verify --workload ${WORKLOADS.join('|')} [options]

Records a workload against etcd, decides whether its history was linearizable, and reports
the anomalies. Exit code 0 when valid, 1 when not, 2 when undecided, 64 on bad usage,
70 when the run could not be made (e.g. a target or fault not available here).

Target (one of):
  --endpoints URLS       comma-separated client URLs of a running cluster (no faults)
  --embedded             etcdkit's embedded server in this process (default)
  --etcd-binary PATH     real etcd processes started on loopback from PATH
  --etcdkit-server       the etcdkit-server bin as an in-memory child process (loses data on kill)
  --members N            members of an embedded or etcd cluster (default 1)

Workload:
  --fenced               lock: fence the counter's writes with the lock (Hold.txn)
  --serializable         serializable reads, each client on one member (not linearizable)
  --faults LIST          comma-separated: pause,kill,partition,leader,restart,lease-expiry,
                         client-pause (lease-expiry: embedded only, on a virtual clock)
  --time DURATION        how long to run: 500ms, 10s, 2m (default 10s)
  --ops N                stop after N operations
  --clients N            concurrent clients (default 8)
  --check-budget DURATION  how long the checker may search (default 60s)

Output:
  --report FILE          write an HTML report (timeline per process, the conflict marked)
  --history FILE         write the recorded history as JSON
  --json                 print one JSON object as the last line
  --help
`;

/** A usage error: bad or missing flags. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** What the command line asks for. */
export interface CliRequest {
  readonly options: VerifyOptions;
  readonly fenced: boolean;
  readonly report?: string;
  readonly historyFile?: string;
  readonly json: boolean;
}

const FAULTS: readonly string[] = [
  'pause',
  'kill',
  'partition',
  'leader',
  'restart',
  'lease-expiry',
  'client-pause',
];

/** Parses a duration such as `250ms`, `10s`, `1.5m` into ms. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text);
  if (m === null)
    throw new UsageError(
      `${flag} takes a duration such as 500ms, 10s or 2m, got ${JSON.stringify(text)}`,
    );
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * unit;
}

function positiveInteger(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`${flag} takes a positive integer, got ${JSON.stringify(text)}`);
  return n;
}

/** Parses `argv` (without node and the script); `undefined` for `--help`. */
export function parseCli(argv: readonly string[]): CliRequest | undefined {
  let values: ReturnType<typeof parse>['values'];
  try {
    values = parse(argv).values;
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) return undefined;
  const workload = values.workload;
  if (workload === undefined) throw new UsageError('--workload is required');
  if (!(WORKLOADS as readonly string[]).includes(workload))
    throw new UsageError(
      `--workload must be one of ${WORKLOADS.join(', ')}, got ${JSON.stringify(workload)}`,
    );
  const targets = [
    values.endpoints !== undefined,
    values.embedded === true,
    values['etcd-binary'] !== undefined,
    values['etcdkit-server'] === true,
  ];
  if (targets.filter(Boolean).length > 1)
    throw new UsageError('give one of --endpoints, --embedded, --etcd-binary, --etcdkit-server');
  const members = positiveInteger(values.members, '--members', 1);
  let target: TargetSpec;
  if (values.endpoints !== undefined) {
    const endpoints = values.endpoints.split(',').filter((url) => url !== '');
    if (endpoints.length === 0) throw new UsageError('--endpoints needs at least one URL');
    target = { kind: 'endpoints', endpoints };
  } else if (values['etcd-binary'] !== undefined)
    target = { kind: 'etcd', binary: values['etcd-binary'], members };
  else if (values['etcdkit-server']) target = { kind: 'etcdkit-server' };
  else target = { kind: 'embedded', members };
  const faults = (values.faults ?? '').split(',').filter((f) => f !== '');
  for (const f of faults)
    if (!FAULTS.includes(f))
      throw new UsageError(`unknown fault ${JSON.stringify(f)}; faults: ${FAULTS.join(', ')}`);
  return {
    options: {
      workload: workload as WorkloadName,
      target,
      durationMs: values.time === undefined ? 10_000 : parseDuration(values.time, '--time'),
      maxOps: values.ops === undefined ? undefined : positiveInteger(values.ops, '--ops', 1),
      clients:
        values.clients === undefined ? undefined : positiveInteger(values.clients, '--clients', 8),
      faults: faults as FaultName[],
      serializable: values.serializable === true,
      fenced: values.fenced === true,
      checkBudgetMs:
        values['check-budget'] === undefined
          ? undefined
          : parseDuration(values['check-budget'], '--check-budget'),
    },
    fenced: values.fenced === true,
    report: values.report,
    historyFile: values.history,
    json: values.json === true,
  };
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      workload: { type: 'string' },
      fenced: { type: 'boolean' },
      serializable: { type: 'boolean' },
      endpoints: { type: 'string' },
      embedded: { type: 'boolean' },
      'etcd-binary': { type: 'string' },
      'etcdkit-server': { type: 'boolean' },
      members: { type: 'string' },
      faults: { type: 'string' },
      time: { type: 'string' },
      ops: { type: 'string' },
      clients: { type: 'string' },
      'check-budget': { type: 'string' },
      report: { type: 'string' },
      history: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
}
