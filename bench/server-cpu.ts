// Server CPU per operation and throughput: the etcdkit-server process against a real etcd process
// (/usr/bin/etcd: raft, WAL, fsync), both answering the same client (etcdkit over its node:http2
// transport, in this process). A server's CPU is read from /proc (every thread's schedstat run
// time, in ns), before and after a fixed number of put, get or txn calls, so it is that process's
// alone. Each round runs every row on both servers, the servers' order alternating between rounds;
// the table gives the median over the rounds and the ratio etcdkit / etcd. In-process start is the
// median time EmbeddedEtcd.start() takes here. ETCDKIT_BENCH_SCALE multiplies the operation counts.
// Reports numbers; asserts nothing. Skipped (with a line saying so) where /usr/bin/etcd is missing.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cmp, Etcd, op } from '../packages/client/src/index.js';
import { EmbeddedEtcd } from '../packages/server-embedded/src/index.js';
import { freePort, freePorts } from '../testkit/src/internal/ports.js';

const SCALE = Number(process.env.ETCDKIT_BENCH_SCALE ?? '1') || 1;
const OPS = Math.round(4_000 * SCALE);
const IN_FLIGHT = 16;
const ROUNDS = 5;
const ETCD = '/usr/bin/etcd';
const REPO = fileURLToPath(new URL('../', import.meta.url));
const CLI = fileURLToPath(new URL('../packages/server-embedded/src/cli/main.ts', import.meta.url));

/** CPU time the process `pid` has used so far, in µs: the sum over its threads. */
function processCpuMicros(pid: number): number {
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

async function untilServing(endpoint: string, child: ChildProcess): Promise<void> {
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

async function startEtcdkitServer(): Promise<ServerProcess> {
  const endpoint = `http://127.0.0.1:${await freePort()}`;
  const child = spawn(
    process.execPath,
    ['--conditions=etcdkit-source', '--import', 'tsx', CLI, '--listen-client-urls', endpoint],
    { cwd: REPO, stdio: 'ignore', env: { ...process.env, ...profileEnv() } },
  );
  await untilServing(endpoint, child);
  return { name: 'etcdkit-server', endpoint, pid: child.pid!, stop: stopper(child) };
}

/** ETCDKIT_BENCH_SERVER_PROFILE=dir: the etcdkit-server process writes a CPU profile there. */
function profileEnv(): NodeJS.ProcessEnv {
  const dir = process.env.ETCDKIT_BENCH_SERVER_PROFILE;
  return dir ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}` } : {};
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
  const samples = new Map<string, Sample[]>();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? servers : [...servers].reverse();
      for (const server of order) {
        for (const row of rows) {
          const key = `${row.name}\u0000${server.name}`;
          samples.set(key, [...(samples.get(key) ?? []), await measure(server, row)]);
        }
      }
    }
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
  const table: Record<string, string>[] = [];
  for (const row of rows) {
    const per: Record<string, number> = {};
    for (const server of servers) {
      const taken = samples.get(`${row.name}\u0000${server.name}`) ?? [];
      const cpu = median(taken.map((s) => s.cpuMicrosPerOp));
      per[server.name] = cpu;
      table.push({
        row: row.name,
        server: server.name,
        'server CPU µs/op': cpu.toFixed(1),
        'ops/s': Math.round(median(taken.map((s) => s.opsPerSecond))).toLocaleString('en-US'),
      });
    }
    table.push({
      row: row.name,
      server: 'etcdkit / etcd',
      'server CPU µs/op': `${((per['etcdkit-server']! / per.etcd!) * 100).toFixed(0)} %`,
      'ops/s': '',
    });
  }
  const start = await inProcessStartMs();
  table.push({
    row: 'in-process start (EmbeddedEtcd.start), first / median of 7 more',
    server: 'etcdkit',
    'server CPU µs/op': `${start.first.toFixed(1)} / ${start.median.toFixed(1)} ms`,
    'ops/s': '',
  });
  return table;
}

export const serverCpuSuite = {
  name: 'server-cpu',
  description: `server CPU per put, get and txn (from /proc) and ops/s, etcdkit-server vs real etcd, same client (etcdkit over node:http2); medians of ${ROUNDS} rounds, order alternating`,
  report,
};
