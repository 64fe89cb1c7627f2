// The embedded server's CPU per lock cycle when clients in several processes contend on one Mutex
// (the recipes suite's cross-process row): an etcdkit-server process of this checkout, and of
// ETCDKIT_BENCH_SERVER_CLI_BEFORE (another checkout's packages/server-embedded/src/cli/main.ts)
// when set, each driven by the same recipes-cycles.ts processes of this checkout (PROCESSES of
// them, CONTENDERS contenders in all, CYCLE_MS a run). A server's CPU is read from /proc (every
// thread's run time) around each run, so it is that process's alone; CPU per cycle is what load
// distorts least (throughput moves with the other work on the machine). Rounds alternate the
// servers ABBA after a warm-up run on each; the table gives medians and the median of the
// rounds' ratios. ETCDKIT_BENCH_SERVER_PROFILE=dir: each server writes a CPU profile there;
// ETCDKIT_BENCH_SERVER_HEAP_PROFILE=dir: a sampling profile of its allocations.
// ETCDKIT_BENCH_SERVER_FLAGS and ETCDKIT_BENCH_SERVER_FLAGS_BEFORE: node flags of each server
// (e.g. --trace-gc, shown with ETCDKIT_BENCH_SERVER_OUTPUT=1: the servers' output is inherited,
// and each run's cycles are printed with the server's pid).
// ETCDKIT_BENCH_SERVER_CLI=path runs another etcdkit-server entry for "now" (a built dist/cli.js runs
// without tsx). Also reports the server's write and read system calls per cycle (/proc/pid/io).
// Run alone: node --conditions=etcdkit-source --import tsx bench/server-contention-cpu.ts
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort } from '../testkit/src/internal/ports.js';
import { median, ratio } from './report.js';
import { processCpuMicros, untilServing } from './server-cpu.js';

/** The write and read system calls the process `pid` has made so far (/proc/pid/io). */
function processSyscalls(pid: number): { writes: number; reads: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? NaN);
  return { writes: field('syscw'), reads: field('syscr') };
}

const PROCESSES = Number(process.env.ETCDKIT_BENCH_CONTENTION_PROCESSES ?? 8);
const CONTENDERS = Number(process.env.ETCDKIT_BENCH_CONTENTION_CONTENDERS ?? 32);
const CYCLE_MS = Number(process.env.ETCDKIT_BENCH_CONTENTION_MS ?? 3000);
const ROUNDS = Number(process.env.ETCDKIT_BENCH_CONTENTION_ROUNDS ?? 4);
const BEFORE = process.env.ETCDKIT_BENCH_SERVER_CLI_BEFORE;
const REPO = fileURLToPath(new URL('../', import.meta.url));
const CLI =
  process.env.ETCDKIT_BENCH_SERVER_CLI ??
  fileURLToPath(new URL('../packages/server-embedded/src/cli/main.ts', import.meta.url));
const CYCLES = fileURLToPath(new URL('./recipes-cycles.ts', import.meta.url));

interface Server {
  readonly name: string;
  readonly endpoint: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/**
 * A module that samples the process's allocations (every 16 KiB allocated, garbage included,
 * which --heap-prof leaves out) and writes them as a .heapprofile into `dir` when it is told to
 * stop (SIGTERM): where the server's bytes allocated per cycle come from.
 */
export function allocationSampler(dir: string): string {
  const file = join(dir, 'allocation-sampler.mjs');
  writeFileSync(
    file,
    `import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
const session = new Session();
session.connect();
session.post('HeapProfiler.startSampling', {
  samplingInterval: 16384,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
process.once('SIGTERM', () => {
  session.post('HeapProfiler.stopSampling', (error, result) => {
    if (!error) writeFileSync(${JSON.stringify(dir)} + '/server-' + process.pid + '.heapprofile', JSON.stringify(result.profile));
    process.exit(0);
  });
});
`,
  );
  return pathToFileURL(file).href;
}

async function startServer(
  name: string,
  cli: string,
  nodeFlags: readonly string[] = [],
): Promise<Server> {
  const endpoint = `http://127.0.0.1:${await freePort()}`;
  const profileDir = process.env.ETCDKIT_BENCH_SERVER_PROFILE;
  const heapDir = process.env.ETCDKIT_BENCH_SERVER_HEAP_PROFILE;
  const child = spawn(
    process.execPath,
    [
      ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
      ...(heapDir ? ['--import', allocationSampler(heapDir)] : []),
      ...nodeFlags,
      // A built CLI (dist/cli.js) runs as is; sources run through tsx.
      ...(cli.endsWith('.js') ? [] : ['--conditions=etcdkit-source', '--import', 'tsx']),
      cli,
      '--listen-client-urls',
      endpoint,
    ],
    // tsx maps the @etcdkit/* imports through the tsconfig.json of the checkout it runs in.
    // (A bundle outside any checkout runs from this one.)
    {
      cwd: cli.includes('/packages/') ? cli.slice(0, cli.lastIndexOf('/packages/')) : REPO,
      stdio: process.env.ETCDKIT_BENCH_SERVER_OUTPUT ? 'inherit' : 'ignore',
    },
  );
  await untilServing(endpoint, child);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  return { name, endpoint, pid: child.pid!, stop };
}

interface Done {
  readonly id: number;
  readonly cycles: number;
  readonly ms: number;
  readonly cpuMs: number;
}

/** The recipes-cycles.ts processes, shared by every server. */
class Contenders {
  readonly #children: ChildProcess[] = [];
  #next = 0;

  constructor(count: number) {
    for (let i = 0; i < count; i++) {
      this.#children.push(fork(CYCLES, [], { execArgv: process.execArgv, stdio: 'inherit' }));
    }
  }

  /** One run of CONTENDERS contenders on a fresh lock of `server`: cycles, and each side's CPU. */
  async run(
    server: Server,
    ms: number,
  ): Promise<{
    cycles: number;
    serverUs: number;
    clientMs: number;
    writes: number;
    reads: number;
  }> {
    const id = this.#next++;
    const name = `bench/contention/${id}`;
    const count = this.#children.length;
    const answers = this.#children.map((child, i) => {
      const contenders = Math.floor(CONTENDERS / count) + (i < CONTENDERS % count ? 1 : 0);
      const ready = this.#answer(child, id, false);
      const done = this.#answer(child, id, true);
      child.send({ id, endpoint: server.endpoint, name, contenders, ms });
      return { child, ready, done };
    });
    await Promise.all(answers.map((answer) => answer.ready));
    const before = processCpuMicros(server.pid);
    const callsBefore = processSyscalls(server.pid);
    for (const { child } of answers) child.send({ id, go: true });
    const done = await Promise.all(answers.map((answer) => answer.done));
    const serverUs = processCpuMicros(server.pid) - before;
    const calls = processSyscalls(server.pid);
    if (process.env.ETCDKIT_BENCH_SERVER_OUTPUT) {
      // Beside the servers' own output (e.g. --trace-gc), which names their pids.
      const cycles = done.reduce((sum, d) => sum + d.cycles, 0);
      console.error(`[bench] ${server.name} pid ${server.pid} run ${id}: ${cycles} cycles`);
    }
    return {
      writes: calls.writes - callsBefore.writes,
      reads: calls.reads - callsBefore.reads,
      cycles: done.reduce((sum, d) => sum + d.cycles, 0),
      serverUs,
      clientMs: done.reduce((sum, d) => sum + d.cpuMs, 0),
    };
  }

  #answer(child: ChildProcess, id: number, final: boolean): Promise<Done> {
    return new Promise((resolve) => {
      const listener = (message: Done) => {
        if (message.id !== id || 'cycles' in message !== final) return;
        child.off('message', listener);
        resolve(message);
      };
      child.on('message', listener);
    });
  }

  close(): void {
    for (const child of this.#children) child.kill('SIGTERM');
  }
}

/** Node flags from a space-separated list (an env variable; none when unset). */
function flagsOf(list: string | undefined): string[] {
  return list?.split(' ').filter((flag) => flag.length > 0) ?? [];
}

/** One run's figures per lock cycle. */
interface Sample {
  readonly rate: number;
  readonly us: number;
  readonly writes: number;
  readonly reads: number;
}

async function report(): Promise<Array<Record<string, string>>> {
  const servers = [await startServer('now', CLI, flagsOf(process.env.ETCDKIT_BENCH_SERVER_FLAGS))];
  if (BEFORE !== undefined) {
    servers.push(
      await startServer('before', BEFORE, flagsOf(process.env.ETCDKIT_BENCH_SERVER_FLAGS_BEFORE)),
    );
  }
  const contenders = new Contenders(PROCESSES);
  const samples = new Map(servers.map((s) => [s.name, [] as Sample[]]));
  try {
    for (const server of servers) await contenders.run(server, CYCLE_MS);
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 4 === 1 || round % 4 === 2 ? [...servers].reverse() : servers;
      for (const server of order) {
        const { cycles, serverUs, writes, reads } = await contenders.run(server, CYCLE_MS);
        samples.get(server.name)!.push({
          rate: cycles / (CYCLE_MS / 1000),
          us: serverUs / cycles,
          writes: writes / cycles,
          reads: reads / cycles,
        });
      }
    }
  } finally {
    contenders.close();
    for (const server of servers) await server.stop();
  }
  const now = samples.get('now')!;
  const before = samples.get('before');
  const row = (name: string, of: (s: Sample) => number, digits: number) => {
    const line: Record<string, string> = { row: name, now: median(now.map(of)).toFixed(digits) };
    if (before !== undefined) {
      line.before = median(before.map(of)).toFixed(digits);
      line['now / before'] = ratio(median(now.map((s, i) => of(s) / of(before[i]!))), 1);
    }
    return line;
  };
  return [
    row('server CPU per lock cycle, µs', (s) => s.us, 0),
    row('server socket writes per lock cycle', (s) => s.writes, 1),
    row('server socket reads per lock cycle', (s) => s.reads, 1),
    row('lock cycles/s', (s) => s.rate, 0),
  ];
}

/** The cross-process contention CPU suite: see the header. */
export const serverContentionCpuSuite = {
  name: 'server-contention-cpu',
  description: `the embedded server's CPU per Mutex lock cycle, ${CONTENDERS} contenders over ${PROCESSES} processes against one etcdkit-server process (from /proc), ${CYCLE_MS} ms runs${BEFORE === undefined ? '' : ', this checkout beside ETCDKIT_BENCH_SERVER_CLI_BEFORE'}; medians of ${ROUNDS} rounds, servers alternated ABBA; the ratio is the median of the rounds' ratios`,
  report,
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(serverContentionCpuSuite.description);
  console.table(await report());
}
