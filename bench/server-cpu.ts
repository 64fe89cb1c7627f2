// Server CPU per operation and throughput: the etcdkit-server process (on its own HTTP/2) against
// a real etcd process (/usr/bin/etcd: raft, WAL, fsync), all answering
// the same client (etcdkit over its node:http2 transport, in this process). A server's CPU is read
// from /proc (every thread's schedstat run time, in ns), before and after a fixed number of put,
// get or txn calls, so it is that process's alone. Each round runs every row on every server back
// to back, the order reversed every other round; the table gives the medians over the rounds, and
// server / etcd as the median of the rounds' ratios (each ran under the same machine load).
// In-process start is the time of the first EmbeddedEtcd.start() in this process and the median of
// the next seven. ETCDKIT_BENCH_SCALE multiplies the operation counts.
// Reports numbers; asserts nothing. Skipped (with a line saying so) where /usr/bin/etcd is missing.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cmp, Etcd, op } from '../packages/client/src/index.js';
import { EmbeddedEtcd } from '../packages/server-embedded/src/index.js';
import { freePort, freePorts } from '../testkit/src/internal/ports.js';
import type { ChartBar } from './report.js';

const SCALE = Number(process.env.ETCDKIT_BENCH_SCALE ?? '1') || 1;
const OPS = Math.round(4_000 * SCALE);
const IN_FLIGHT = 16;
const ROUNDS = 5;
const ETCD = '/usr/bin/etcd';
const REPO = fileURLToPath(new URL('../', import.meta.url));
/**
 * ETCDKIT_BENCH_SERVER_CLI=path: another etcdkit-server entry for this checkout's row (a bundle
 * such as bench/findings/server-cpu.md's runs without tsx), e.g. beside a baseline bundled alike.
 */
const CLI =
  process.env.ETCDKIT_BENCH_SERVER_CLI ??
  fileURLToPath(new URL('../packages/server-embedded/src/cli/main.ts', import.meta.url));
/**
 * ETCDKIT_BENCH_SERVER_FLAGS: node flags of every etcdkit-server (space-separated, e.g.
 * --trace-gc); ETCDKIT_BENCH_SERVER_OUTPUT=1 shows their output instead of dropping it.
 */
const SERVER_FLAGS = (process.env.ETCDKIT_BENCH_SERVER_FLAGS ?? '')
  .split(' ')
  .filter((flag) => flag.length > 0);

/** CPU time the process `pid` has used so far, in µs: the sum over its threads. */
export function processCpuMicros(pid: number): number {
  let ns = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return ns / 1000;
}

interface ServerProcess {
  readonly name: string;
  readonly endpoint: string;
  readonly pid: number;
  stop(): Promise<void>;
}

export async function untilServing(endpoint: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  const probe = new Etcd({ endpoints: [endpoint], transport: 'http2' });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode})`);
      try {
        await probe.get('bench/probe');
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } finally {
    await probe.close();
  }
}

function stopper(child: ChildProcess, cleanup: () => void = () => {}): () => Promise<void> {
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    cleanup();
  };
}

/**
 * ETCDKIT_BENCH_BASELINE_CLI=path/to/cli/main.ts (another checkout's): that etcdkit-server runs
 * too, named for its checkout's commit, for a before/after comparison in the same run.
 */
const BASELINE_CLI = process.env.ETCDKIT_BENCH_BASELINE_CLI;

/**
 * The checkout a CLI's sources belong to (the folder above `packages/`): it runs from there, as
 * tsx maps the @etcdkit/* imports through the tsconfig.json of its working directory.
 */
function checkoutOf(cli: string): string {
  const at = cli.lastIndexOf('/packages/');
  return at < 0 ? REPO : cli.slice(0, at);
}

/** What the baseline is called in the rows: its checkout's commit, when git can tell. */
function baselineName(cli: string): string {
  try {
    const commit = execFileSync('git', ['-C', checkoutOf(cli), 'rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return `etcdkit-server at ${commit}`;
  } catch {
    return 'baseline';
  }
}

async function startEtcdkitServer(
  name = 'etcdkit-server',
  cli = CLI,
  extraArgs: readonly string[] = [],
): Promise<ServerProcess> {
  const endpoint = `http://127.0.0.1:${await freePort()}`;
  const child = spawn(
    process.execPath,
    [
      ...profileFlags(),
      ...SERVER_FLAGS,
      // A built CLI (dist/cli.js) runs as installed; the sources through tsx.
      ...(cli.endsWith('.ts') ? ['--conditions=etcdkit-source', '--import', 'tsx'] : []),
      cli,
      '--listen-client-urls',
      endpoint,
      ...extraArgs,
    ],
    { cwd: checkoutOf(cli), stdio: process.env.ETCDKIT_BENCH_SERVER_OUTPUT ? 'inherit' : 'ignore' },
  );
  await untilServing(endpoint, child);
  if (process.env.ETCDKIT_BENCH_SERVER_OUTPUT) console.error(`[bench] ${name} pid ${child.pid}`);
  return { name, endpoint, pid: child.pid!, stop: stopper(child) };
}

/**
 * ETCDKIT_BENCH_SERVER_PROFILE=dir: the etcdkit-server process writes a CPU profile there (as node
 * flags: Node 20 refuses --cpu-prof in NODE_OPTIONS).
 */
function profileFlags(): string[] {
  const dir = process.env.ETCDKIT_BENCH_SERVER_PROFILE;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}

async function startRealEtcd(): Promise<ServerProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'etcdkit-bench-etcd-'));
  const [clientPort, peerPort] = await freePorts(2);
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const child = spawn(
    ETCD,
    [
      '--data-dir',
      dataDir,
      '--listen-client-urls',
      client,
      '--advertise-client-urls',
      client,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      `default=${peer}`,
      '--log-level',
      'error',
    ],
    { stdio: 'ignore' },
  );
  await untilServing(client, child);
  return {
    name: 'etcd',
    endpoint: client,
    pid: child.pid!,
    stop: stopper(child, () => rmSync(dataDir, { recursive: true, force: true })),
  };
}

async function inParallel(total: number, inFlight: number, call: () => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next++ < total) await call();
    }),
  );
}

type Call = (etcd: Etcd) => Promise<unknown>;

const calls: ReadonlyArray<readonly [string, Call]> = [
  ['put', (etcd) => etcd.put('bench/key', 'value')],
  ['get', (etcd) => etcd.get('bench/key')],
  [
    'txn',
    (etcd) =>
      etcd
        .txn()
        .if(cmp.value('bench/key', '==', 'value'))
        .then(op.put('bench/key', 'value'))
        .else(op.get('bench/key'))
        .commit(),
  ],
];

const rows = [1, IN_FLIGHT].flatMap((inFlight) =>
  calls.map(([name, call]) => ({
    name: `${name}, ${inFlight} in flight (${OPS})`,
    inFlight,
    call,
  })),
);

interface Sample {
  cpuMicrosPerOp: number;
  opsPerSecond: number;
}

async function measure(server: ServerProcess, row: (typeof rows)[number]): Promise<Sample> {
  const etcd = new Etcd({ endpoints: [server.endpoint], transport: 'http2' });
  try {
    // Warm-up: the connection, and the server's code paths for this call.
    await inParallel(Math.min(500, OPS), row.inFlight, () => row.call(etcd));
    const cpu = processCpuMicros(server.pid);
    const started = performance.now();
    await inParallel(OPS, row.inFlight, () => row.call(etcd));
    const wallMs = performance.now() - started;
    return {
      cpuMicrosPerOp: (processCpuMicros(server.pid) - cpu) / OPS,
      opsPerSecond: (OPS / wallMs) * 1000,
    };
  } finally {
    await etcd.close();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Wall time of EmbeddedEtcd.start() in this process, in ms: the first, and the median of 7 more. */
async function inProcessStartMs(): Promise<{ first: number; median: number }> {
  const times: number[] = [];
  for (let i = 0; i <= 7; i++) {
    const started = performance.now();
    const server = await EmbeddedEtcd.start();
    times.push(performance.now() - started);
    await server.stop();
  }
  return { first: times[0]!, median: median(times.slice(1)) };
}

async function report() {
  if (!existsSync(ETCD)) return [{ row: `skipped: ${ETCD} is not installed` }];
  const servers = [await startEtcdkitServer(), await startRealEtcd()];
  if (BASELINE_CLI) {
    servers.push(await startEtcdkitServer(baselineName(BASELINE_CLI), BASELINE_CLI));
  }
  const others = servers.filter((server) => server.name !== 'etcd');
  const samples = new Map<string, Sample[]>();
  // etcdkit's CPU over etcd's, per row and round: each pair ran back to back, under the same load.
  const ratios = new Map<string, number[]>();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const row of rows) {
        const order = round % 2 === 0 ? servers : [...servers].reverse();
        const cpu: Record<string, number> = {};
        for (const server of order) {
          const key = `${row.name}\u0000${server.name}`;
          const sample = await measure(server, row);
          cpu[server.name] = sample.cpuMicrosPerOp;
          samples.set(key, [...(samples.get(key) ?? []), sample]);
        }
        for (const { name } of others) {
          const key = `${row.name}\u0000${name}`;
          ratios.set(key, [...(ratios.get(key) ?? []), cpu[name]! / cpu.etcd!]);
        }
      }
    }
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
  const table: Record<string, string>[] = [];
  const chart: ChartBar[] = [];
  for (const row of rows) {
    for (const server of servers) {
      const taken = samples.get(`${row.name}\u0000${server.name}`) ?? [];
      table.push({
        row: row.name,
        server: server.name,
        'server CPU µs/op': median(taken.map((s) => s.cpuMicrosPerOp)).toFixed(1),
        'ops/s': Math.round(median(taken.map((s) => s.opsPerSecond))).toLocaleString('en-US'),
      });
    }
    for (const { name } of others) {
      const ratio = median(ratios.get(`${row.name}\u0000${name}`) ?? []);
      if (name === 'etcdkit-server') {
        chart.push({
          group: 'server CPU per op, etcdkit-server (in memory) / a durable etcd 3.4 (raft, fsync)',
          label: row.name,
          ratio,
        });
      }
      table.push({
        row: row.name,
        server: `${name === 'etcdkit-server' ? 'etcdkit' : name} / etcd`,
        'server CPU µs/op': `${(ratio * 100).toFixed(0)} %`,
        'ops/s': '',
      });
    }
  }
  const start = await inProcessStartMs();
  table.push({
    row: 'in-process start (EmbeddedEtcd.start), first / median of 7 more',
    server: 'etcdkit',
    'server CPU µs/op': `${start.first.toFixed(1)} / ${start.median.toFixed(1)} ms`,
    'ops/s': '',
  });
  return { rows: table, chart };
}

export const serverCpuSuite = {
  name: 'server-cpu',
  description: `server CPU per put, get and txn (from /proc) and ops/s, etcdkit-server (its own HTTP/2) vs real etcd, same client (etcdkit over node:http2); medians of ${ROUNDS} rounds, each row run on every server back to back, the order reversed every other round; the ratio is the median of the rounds' ratios`,
  report,
};
