// The recipes' waits, in round trips of the wire: how long a lock or a leadership takes to pass
// from one process to the next, against real etcd 3.4 and the in-process EmbeddedEtcd, with etcd
// 3.4's Go concurrency package beside etcdkit in the same run (see recipes-go.ts). The embedded
// server runs in a child process (memory.ts' ServerProcess), as etcd does: in this process it would
// share the etcdkit contender's event loop, a cost the Go program does not pay.
// - the machine's floor: one byte echoed by another Node process over loopback TCP, GAP_MS apart.
// - put round trip: one put issued GAP_MS after the previous one, the unit every other row is
//   counted in (same server, same run, measured before each block of handoffs), as a handoff's
//   release is; back-to-back puts beside it.
// - mutex handoff: A holds, B calls lock() GAP_MS before A unlocks; from A's unlock() call until
//   B holds. Election failover after resign: the same with campaign() and resign().
// - contended lock cycles/s: N contenders (each its own client and session) lock and unlock one
//   mutex in a loop, in one process, and spread over min(N, 8) processes (recipes-cycles.ts, a
//   pool started and warmed once per server, on the built packages: built-packages.ts; Go: as many
//   processes of its program). Beside the rows over processes, the FIFO handoff floor: as many
//   Node processes pass a turn around a ring, one put and one woken process per turn.
// - failover after the leader's process dies: a child process leads with the server's shortest
//   lease (1 s on the testkit's etcd, 2 s on the embedded server) and is killed (SIGKILL); from the
//   kill until the candidate that queued before it leads. The lease has to expire first, so this is
//   about the TTL (both servers look for expired leases every 500 ms).
// Rounds alternate the contenders' order; rows give medians and p99 over all rounds. Env:
// ETCDKIT_BENCH_ROUNDS (default 3), ETCDKIT_BENCH_SAMPLES (handoffs per contender and round,
// default 300: p99 is then the ninth slowest of 900), ETCDKIT_BENCH_MEASURES (a comma list
// of handoff, resign, cycles, death: only those rows; default all), ETCDKIT_BENCH_WARMUP_MS (how
// long puts, then gapless handoffs of each kind, run before the rounds; default 3000; 0: none),
// ETCDKIT_BENCH_POOL_WARMUP_MS (how long each cycles process first cycles a lock of its own, at
// least the warm-up; default 15000),
// ETCDKIT_BENCH_CONTENDERS (the cycles rows' contender counts, default 2,8,32),
// ETCDKIT_BENCH_SERVERS (etcd, embedded: default both), ETCDKIT_BENCH_CYCLES_PROF (a directory:
// the first cycles process runs with node --cpu-prof into it), ETCDKIT_BENCH_RECIPES_ROOT (another
// checkout whose client and recipes the cycles processes run: before/after, recipes-cycles.ts),
// ETCDKIT_BENCH_CODE (built, source: what the cycles processes and the embedded server run;
// default built; `built,source` adds the sources' cycles rows in the same run).
// The cross-process cycles rows give the CPU time per cycle of the contenders' processes (summed)
// and of the server, which other load on the machine distorts far less than the rates.
// Reports numbers; asserts nothing.
import { type ChildProcess, fork } from 'node:child_process';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Etcd } from '../packages/client/src/index.js';
import { Election, type Lock, Mutex, Session } from '../packages/recipes/src/index.js';
import { startEtcd } from '../testkit/src/index.js';
import { builtPackages, thisCheckout } from './built-packages.js';
import { LoopbackEcho } from './loopback.js';
import { ServerProcess } from './memory.js';
import {
  buildGoProgram,
  type CyclesRun,
  GoProcess,
  type GoProgram,
  goCyclesOverProcesses,
  goSamples,
} from './recipes-go.js';
import type { ChartBar } from './report.js';

const ROUNDS = Number(process.env.ETCDKIT_BENCH_ROUNDS ?? '3') || 3;
const SAMPLES = Number(process.env.ETCDKIT_BENCH_SAMPLES ?? '300') || 300;
const MEASURES = new Set(
  (process.env.ETCDKIT_BENCH_MEASURES ?? 'handoff,resign,cycles,death').split(','),
);
const GAP_MS = 5;
const PUTS = 100;
// Before the rounds, this long of back-to-back puts, then of gapless handoffs of each kind: warmUp.
const WARMUP_MS = Number(process.env.ETCDKIT_BENCH_WARMUP_MS ?? '3000');
// The cycles processes' first warm-up, each on a lock of its own: a contender process's client CPU
// per cycle falls from 4.7 to 1.6-1.9 ms over its first 20-30 s of contended cycles (V8 tiering
// up, bench/findings/recipes.md 2026-12-07): Go's processes are compiled, and a service runs warm.
const POOL_WARMUP_MS = Number(process.env.ETCDKIT_BENCH_POOL_WARMUP_MS ?? '15000');
const CONTENDERS = (process.env.ETCDKIT_BENCH_CONTENDERS ?? '2,8,32').split(',').map(Number);
const SERVERS = new Set((process.env.ETCDKIT_BENCH_SERVERS ?? 'etcd,embedded').split(','));
/** A directory: the first process of each cycles pool runs with `node --cpu-prof` into it. */
const CYCLES_PROFILE_DIR = process.env.ETCDKIT_BENCH_CYCLES_PROF;
/** Another checkout whose client and recipes the cycles processes run (recipes-cycles.ts). */
const RECIPES_ROOT = process.env.ETCDKIT_BENCH_RECIPES_ROOT || undefined;
/**
 * What code the cycles processes run: `built` (each package's dist/, what users run; built-packages.ts)
 * or `source` (the TypeScript under tsx). The first is the etcdkit rows' and the embedded server's;
 * a second adds cycles rows of ours on that code, in the same run (e.g. `built,source`).
 */
type Code = 'built' | 'source';
const CODES = (process.env.ETCDKIT_BENCH_CODE ?? 'built').split(',') as Code[];
const CYCLE_MS = 1_000;
/** The most processes the contenders of a lock cycles row are spread over. */
const PROCESSES = 8;
const leaderScript = fileURLToPath(new URL('./recipes-leader.ts', import.meta.url));
const cyclesScript = fileURLToPath(new URL('./recipes-cycles.ts', import.meta.url));

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const now = () => performance.now();

/** The value at fraction `q` of the sorted samples (nearest rank). */
function quantile(samples: readonly number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
}

/** One server under test. */
interface Server {
  readonly name: string;
  readonly endpoint: string;
  /** The shortest lease it grants, in seconds: the dying leader's TTL. */
  readonly leaderTtl: number;
  /** Its process, whose CPU time the cross-process cycles rows count; undefined if unknown. */
  readonly pid: number | undefined;
  stop(): Promise<void>;
}

async function realEtcd(): Promise<Server> {
  // The testkit's 100 ms election timeout makes etcd's minimum TTL 1 s.
  const etcd = await startEtcd();
  const name = `etcd ${etcd.version}`;
  const pid = etcd.pid;
  return { name, endpoint: etcd.endpoint, leaderTtl: 1, pid, stop: () => etcd.stop() };
}

async function embedded(): Promise<Server> {
  // Its built package (what `etcdkit-server` runs), unless the sources were asked for.
  const built = CODES[0] === 'built' ? await builtPackages(thisCheckout) : undefined;
  const server = await ServerProcess.start(built);
  const endpoint = server.endpoints[0] as string;
  const pid = await pidListeningOn(Number(new URL(endpoint).port));
  // Its default minimum TTL, etcd's with default timing.
  const name = 'EmbeddedEtcd (own process)';
  return { name, endpoint, leaderTtl: 2, pid, stop: () => server.stop() };
}

/** The process of this user listening on TCP `port` (127.0.0.1), from /proc; undefined if none. */
async function pidListeningOn(port: number): Promise<number | undefined> {
  const table = await readFile('/proc/net/tcp', 'utf8').catch(() => '');
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  // Columns: sl, local address, remote address, state (0A: LISTEN), ..., inode (the tenth).
  const inode = table
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find((cols) => cols[1]?.endsWith(`:${hexPort}`) && cols[3] === '0A')?.[9];
  if (inode === undefined) return undefined;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fds = await readdir(`/proc/${entry}/fd`).catch(() => []);
    for (const fd of fds) {
      const target = await readlink(`/proc/${entry}/fd/${fd}`).catch(() => '');
      if (target === `socket:[${inode}]`) return Number(entry);
    }
  }
  return undefined;
}

/**
 * The gRPC messages etcd received and sent so far by method (`Txn in`, `Watch out`), from its
 * Prometheus metrics on the client URL; empty where there are none (the embedded server).
 */
async function grpcMessages(endpoint: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const text = await fetch(`${endpoint}/metrics`)
    .then((response) => (response.ok ? response.text() : ''))
    .catch(() => '');
  const line = /^grpc_server_msg_(received|sent)_total\{grpc_method="(\w+)"[^}]*\} (\d+)/gm;
  for (const [, way, method, count] of text.matchAll(line)) {
    counts.set(`${method} ${way === 'received' ? 'in' : 'out'}`, Number(count));
  }
  return counts;
}

/** Messages per cycle between two {@link grpcMessages} reads: "Txn in 3.1, Watch out 2.0, ...". */
function messagesPerCycle(
  before: Map<string, number>,
  after: Map<string, number>,
  cycles: number,
): string | undefined {
  const cells = [...after]
    .map(([what, count]) => [what, (count - (before.get(what) ?? 0)) / cycles] as const)
    .filter(([, perCycle]) => perCycle >= 0.05)
    .map(([what, perCycle]) => `${what} ${perCycle.toFixed(1)}`);
  return cells.length > 0 ? cells.join(', ') : undefined;
}

/** The CPU milliseconds (user plus system) process `pid` used so far, from /proc; NaN if gone. */
async function cpuMsOf(pid: number | undefined): Promise<number> {
  if (pid === undefined) return Number.NaN;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  // After the command's closing parenthesis: fields 3 on; utime and stime are the 14th and 15th.
  const fields = stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields === undefined) return Number.NaN;
  // In clock ticks of 1/100 s (USER_HZ on Linux).
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** Clients and sessions of one measure, each session on its own client (as separate processes). */
class Sessions {
  readonly #clients: Etcd[] = [];
  readonly sessions: Session[] = [];

  static async open(endpoint: string, count: number): Promise<Sessions> {
    const opened = new Sessions();
    for (let i = 0; i < count; i++) {
      const etcd = new Etcd({ endpoints: [endpoint] });
      opened.#clients.push(etcd);
      opened.sessions.push(await Session.create(etcd, { ttl: 60 }));
    }
    return opened;
  }

  async close(): Promise<void> {
    for (const session of this.sessions) await session.close().catch(() => {});
    for (const etcd of this.#clients) await etcd.close();
  }
}

/**
 * Sequential puts with the etcdkit client: back to back, and each after a GAP_MS pause. The
 * paused ones are the unit: a handoff's release is one write issued after the same pause, and on
 * a machine whose idle cores sleep (a VM) the first call after a pause costs more than one in a
 * busy loop.
 */
async function putRoundTrips(
  endpoint: string,
): Promise<{ paused: number[]; backToBack: number[] }> {
  const etcd = new Etcd({ endpoints: [endpoint] });
  try {
    await etcd.put('bench/rt', 'warm');
    const paused: number[] = [];
    const backToBack: number[] = [];
    for (let i = 0; i < PUTS; i++) {
      const started = now();
      await etcd.put('bench/rt', String(i));
      backToBack.push(now() - started);
    }
    for (let i = 0; i < PUTS; i++) {
      await sleep(GAP_MS);
      const started = now();
      await etcd.put('bench/rt', String(i));
      paused.push(now() - started);
    }
    return { paused, backToBack };
  } finally {
    await etcd.close();
  }
}

/** How a run of handoffs goes: how many, and how long the waiter queues before the release. */
interface Pace {
  readonly count: number;
  readonly gapMs: number;
  /** No more handoffs start after this time (performance.now()). */
  readonly until?: number;
}

const MEASURED: Pace = { count: SAMPLES, gapMs: GAP_MS };

/**
 * Two sessions take turns holding something: each sample times the holder's `release` until the
 * other, which called `acquire` GAP_MS before, holds.
 */
async function handoffs<H>(
  endpoint: string,
  acquire: (session: Session) => Promise<H>,
  release: (held: H) => Promise<void>,
  pace: Pace = MEASURED,
): Promise<number[]> {
  const opened = await Sessions.open(endpoint, 2);
  const sessions = opened.sessions;
  const samples: number[] = [];
  try {
    let held = await acquire(sessions[0]!);
    for (let i = 0; i < pace.count && now() < (pace.until ?? Infinity); i++) {
      let heldAt = 0;
      const waiting = acquire(sessions[(i + 1) % 2]!).then((next) => {
        heldAt = now();
        return next;
      });
      if (pace.gapMs > 0) await sleep(pace.gapMs);
      const started = now();
      await release(held);
      held = await waiting;
      // Until the waiter holds, which may come before the release call returns.
      samples.push(heldAt - started);
    }
    await release(held);
    return samples;
  } finally {
    await opened.close();
  }
}

/**
 * Runs what the rounds measure, back to back and unmeasured, on the etcdkit client and the server.
 * A cold V8 process tiers its hot functions up for thousands of calls, and on two cores each
 * optimizing compile job it starts takes the main thread's core for 1-4 ms (docs/benchmarks.md):
 * without this the p99 rows show the JIT, not the wire. The Go program needs no warm-up; the
 * embedded server it talks to is warmed by this too.
 */
async function warmUp(endpoint: string): Promise<void> {
  if (!(WARMUP_MS > 0)) return;
  const etcd = new Etcd({ endpoints: [endpoint] });
  try {
    const until = now() + WARMUP_MS;
    for (let i = 0; now() < until; i++) await etcd.put('bench/warm', String(i));
  } finally {
    await etcd.close();
  }
  const pace = () => ({ count: Infinity, gapMs: 0, until: now() + WARMUP_MS });
  if (MEASURES.has('handoff') || MEASURES.has('cycles')) {
    await mutexHandoffs(endpoint, 'bench/warm/lock', pace());
  }
  // A contended lock() waits otherwise than a handoff does (more keys ahead: a read confirms the
  // turn), code the handoffs above leave cold.
  if (MEASURES.has('cycles')) {
    for (const n of CONTENDERS) {
      await lockCycles(endpoint, `bench/warm/cycles${n}`, n, WARMUP_MS / CONTENDERS.length);
    }
  }
  if (MEASURES.has('resign') || MEASURES.has('death')) {
    await resignFailovers(endpoint, 'bench/warm/elect', pace());
  }
}

/** From A's unlock() until B, which called lock() GAP_MS before, holds. */
const mutexHandoffs = (endpoint: string, name: string, pace?: Pace) =>
  handoffs(
    endpoint,
    (session) => new Mutex(session, name).lock(),
    (lock: Lock) => lock.unlock(),
    pace,
  );

/** From the leader's resign() until the candidate that campaigned GAP_MS before leads. */
const resignFailovers = (endpoint: string, name: string, pace?: Pace) =>
  handoffs(
    endpoint,
    (session) => new Election(session, name).campaign('candidate'),
    (leadership) => leadership.resign(),
    pace,
  );

/** Lock/unlock cycles per second of `contenders` sessions on one mutex. */
async function lockCycles(
  endpoint: string,
  name: string,
  contenders: number,
  ms = CYCLE_MS,
): Promise<number> {
  const opened = await Sessions.open(endpoint, contenders);
  try {
    let cycles = 0;
    const started = now();
    const deadline = started + ms;
    await Promise.all(
      opened.sessions.map(async (session) => {
        const mutex = new Mutex(session, name);
        while (now() < deadline) {
          await (await mutex.lock()).unlock();
          cycles++;
        }
      }),
    );
    return cycles / ((now() - started) / 1000);
  } finally {
    await opened.close();
  }
}

/** A measure's answers from one process of the pool: its sessions are open, then its cycles. */
type CyclesAnswer = { readonly id: number } & ({ readonly cycles?: undefined } | CyclesDone);

/** A child's cycles, how long they took, its CPU milliseconds and socket writes and reads. */
interface CyclesDone {
  readonly cycles: number;
  readonly ms: number;
  readonly cpuMs: number;
  readonly writes: number;
  readonly reads: number;
}

/**
 * Processes of recipes-cycles.ts that run a lock cycles measure together, each with its share of
 * the contenders: started once per server and warmed like the bench process (a cold process
 * would measure V8 tiering its code up).
 */
class CyclesProcesses {
  readonly #children: ChildProcess[];
  #next = 0;

  private constructor(children: ChildProcess[]) {
    this.#children = children;
  }

  static async start(endpoint: string, count: number, code: Code): Promise<CyclesProcesses> {
    const profile = (i: number) =>
      i === 0 && CYCLES_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${CYCLES_PROFILE_DIR}`] : [];
    // Built: the checkout's dist/ (built-packages.ts sets the flags and tsconfig that keep them
    // apart from the sources). Another checkout's sources: tsx maps @etcdkit/* by the tsconfig it
    // finds, so the children run with that checkout's, or its recipes would import our client.
    const built = code === 'built' ? await builtPackages() : undefined;
    const sourceEnv = RECIPES_ROOT
      ? { ...process.env, TSX_TSCONFIG_PATH: `${RECIPES_ROOT}/tsconfig.json` }
      : process.env;
    const env = { ...(built?.env ?? sourceEnv), ETCDKIT_BENCH_CODE: code };
    const children = Array.from({ length: count }, (_, i) =>
      fork(cyclesScript, [], {
        execArgv: [...(built?.execArgv ?? process.execArgv), ...profile(i)],
        stdio: 'inherit',
        env,
        cwd: RECIPES_ROOT ?? process.cwd(),
      }),
    );
    const pool = new CyclesProcesses(children);
    if (WARMUP_MS > 0) {
      // Each process on a lock of its own first: spread, a process runs a few of the cycles only,
      // and V8 tiers a function up after thousands of calls.
      await pool.#run(
        endpoint,
        children.map((child, i) => ({ child, name: `bench/warm/own${i}`, contenders: 2 })),
        Math.max(WARMUP_MS, POOL_WARMUP_MS),
      );
      for (const n of CONTENDERS) {
        await pool.cycles(endpoint, `bench/warm/spread${n}`, n, WARMUP_MS / CONTENDERS.length);
        await pool.inOne(endpoint, `bench/warm/one${n}`, n, WARMUP_MS / CONTENDERS.length);
      }
      await pool.floor(endpoint, 'bench/warm/floor', count, WARMUP_MS / 2);
    }
    return pool;
  }

  /** Cycles/s of `contenders` all in one process (the pool's first). */
  inOne(endpoint: string, name: string, contenders: number, ms = CYCLE_MS): Promise<CyclesRun> {
    return this.#run(
      endpoint,
      [{ child: this.#children[0] as ChildProcess, name, contenders }],
      ms,
    );
  }

  /**
   * Turns/s passed around a ring of `ring` processes, each put waking exactly the next one
   * (recipes-cycles.ts, Measure.floor): the floor of a FIFO handoff across processes.
   */
  floor(endpoint: string, name: string, ring: number, ms = CYCLE_MS): Promise<CyclesRun> {
    const places = this.#children.slice(0, ring);
    const shares = places.map((child, index) => ({
      child,
      name,
      contenders: 1,
      floor: { index, ring },
    }));
    return this.#run(endpoint, shares, ms);
  }

  /** Cycles/s of `contenders` over min(contenders, count) processes, started together. */
  cycles(endpoint: string, name: string, contenders: number, ms = CYCLE_MS): Promise<CyclesRun> {
    const used = this.#children.slice(0, Math.min(contenders, this.#children.length));
    const shares = used.map((child, i) => {
      const share = Math.floor(contenders / used.length) + (i < contenders % used.length ? 1 : 0);
      return { child, name, contenders: share };
    });
    return this.#run(endpoint, shares, ms);
  }

  /** Each child's contenders on its lock, started together: the sum of their cycles/s and CPU. */
  async #run(
    endpoint: string,
    shares: ReadonlyArray<{
      child: ChildProcess;
      name: string;
      contenders: number;
      floor?: { index: number; ring: number };
    }>,
    ms: number,
  ): Promise<CyclesRun> {
    const id = this.#next++;
    const answers = shares.map(({ child, name, contenders, floor }) => {
      const ready = this.#answer(child, id, false);
      const done = this.#answer(child, id, true);
      child.send({ id, endpoint, name, contenders, ms, floor });
      return { child, ready, done };
    });
    await Promise.all(answers.map((answer) => answer.ready));
    for (const { child } of answers) child.send({ id, go: true });
    let rate = 0;
    let cycles = 0;
    let cpuMs = 0;
    let writes = 0;
    let reads = 0;
    for (const answer of answers) {
      const done = await answer.done;
      rate += done.cycles / (done.ms / 1000);
      cycles += done.cycles;
      cpuMs += done.cpuMs;
      writes += done.writes;
      reads += done.reads;
    }
    return { rate, cycles, cpuMs, socket: { writes, reads } };
  }

  /** The child's answer to measure `id`: that its sessions are open, or (`done`) its cycles. */
  #answer(child: ChildProcess, id: number, done: true): Promise<CyclesDone>;
  #answer(child: ChildProcess, id: number, done: false): Promise<void>;
  #answer(child: ChildProcess, id: number, done: boolean): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const onMessage = (answer: CyclesAnswer) => {
        if (answer.id !== id || (answer.cycles !== undefined) !== done) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(answer);
      };
      const onExit = (code: number | null) => reject(new Error(`cycles process exited (${code})`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.#children.map((child) => {
        if (child.exitCode !== null || child.signalCode !== null) return undefined;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill();
        return exited;
      }),
    );
  }
}

/**
 * From SIGKILL of the leader's process until the candidate queued behind it leads; undefined when
 * the candidate led before the kill (the leader's 1 s lease ran out first on a loaded machine).
 */
async function deathFailover(
  endpoint: string,
  name: string,
  ttl: number,
): Promise<number | undefined> {
  const child = fork(leaderScript, [endpoint, name, String(ttl)], {
    execArgv: process.execArgv,
    stdio: 'inherit',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const opened = await Sessions.open(endpoint, 1);
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('message', () => resolve());
      child.once('exit', (code) => reject(new Error(`leader process exited (${code})`)));
    });
    let early = false;
    const waiting = new Election(opened.sessions[0]!, name).campaign('follower');
    void waiting.then(() => {
      early ||= child.exitCode === null && child.signalCode === null;
    });
    await sleep(20);
    if (early) return undefined;
    const started = now();
    child.kill('SIGKILL');
    const leadership = await waiting;
    const took = now() - started;
    await leadership.resign();
    return early ? undefined : took;
  } finally {
    child.kill('SIGKILL');
    await exited;
    await opened.close();
  }
}

async function goDeathFailover(
  binary: string,
  endpoint: string,
  name: string,
  ttl: number,
): Promise<number | undefined> {
  const flags = ['-endpoint', endpoint, '-prefix', name, '-ttl', String(ttl)];
  const leader = GoProcess.start(binary, ['leader', ...flags]);
  const follower = GoProcess.start(binary, ['follow', ...flags]);
  try {
    await leader.line('leader');
    await follower.line('ready');
    await sleep(20);
    if (follower.printed('elected')) return undefined;
    const started = now();
    await leader.kill();
    await follower.line('elected');
    return now() - started;
  } finally {
    await leader.kill();
    await follower.kill();
  }
}

/** The pools of cycles processes of one server, by the code they run. */
type Pools = ReadonlyMap<Code, CyclesProcesses>;

/** What one contender measures; undefined rows of a skipped contender say why. */
interface Contender {
  readonly name: string;
  readonly skipped?: string;
  /** Only the lock cycles rows (`cycles`), or only those over processes (`spread`). */
  readonly only?: 'cycles' | 'spread';
  handoffs(endpoint: string, name: string): Promise<number[]>;
  resigns(endpoint: string, name: string): Promise<number[]>;
  /** Lock cycles of `contenders` in one process (ours: one process of a pool). */
  cycles(endpoint: string, name: string, contenders: number, pools: Pools): Promise<CyclesRun>;
  /** The same over min(contenders, PROCESSES) processes (ours run in a pool), with their CPU. */
  spread(endpoint: string, name: string, contenders: number, pools: Pools): Promise<CyclesRun>;
  death(endpoint: string, name: string, ttl: number): Promise<number | undefined>;
}

const CODE_NAMES: Record<Code, string> = {
  built: 'built packages',
  source: 'TypeScript sources under tsx',
};

/** The pool of `code` (every one is started: measureServer). */
const poolOf = (pools: Pools, code: Code) => pools.get(code) as CyclesProcesses;

/** Ours on `code`; a contender after the first measures the cycles rows only. */
function etcdkitContender(code: Code, first: boolean): Contender {
  const notMeasured = () => Promise.reject(new Error('cycles rows only'));
  return {
    name: first ? 'etcdkit recipes' : `etcdkit recipes (${CODE_NAMES[code]})`,
    ...(first ? {} : { only: 'cycles' as const }),
    handoffs: first ? mutexHandoffs : notMeasured,
    resigns: first ? resignFailovers : notMeasured,
    cycles: (endpoint, name, contenders, pools) =>
      poolOf(pools, code).inOne(endpoint, name, contenders),
    spread: (endpoint, name, contenders, pools) =>
      poolOf(pools, code).cycles(endpoint, name, contenders),
    death: first ? deathFailover : () => Promise.resolve(undefined),
  };
}

/** The contenders of this run on our side: the first code's, then the others' cycles rows. */
const etcdkitContenders = CODES.map((code, i) => etcdkitContender(code, i === 0));
const etcdkit = etcdkitContenders[0] as Contender;

/**
 * The floor of a FIFO handoff across Node processes: min(contenders, PROCESSES) processes pass a
 * turn around a ring, one put and one woken process per turn (CyclesProcesses.floor), on the
 * first code's pool.
 */
const handoffFloor: Contender = {
  name: 'FIFO handoff floor: Node processes pass a turn, one put each',
  only: 'spread',
  handoffs: () => Promise.reject(new Error('cycles rows only')),
  resigns: () => Promise.reject(new Error('cycles rows only')),
  cycles: () => Promise.reject(new Error('cycles rows over processes only')),
  spread: (endpoint, name, contenders, pools) =>
    poolOf(pools, CODES[0] as Code).floor(endpoint, name, Math.min(contenders, PROCESSES)),
  death: () => Promise.resolve(undefined),
};

function goContender(program: GoProgram): Contender {
  const name = 'Go clientv3/concurrency (3.4)';
  if (!program.ok) {
    const skip = () => Promise.reject(new Error(program.reason));
    return {
      name,
      skipped: program.reason,
      handoffs: skip,
      resigns: skip,
      cycles: skip,
      spread: skip,
      death: skip,
    };
  }
  const go = (mode: string, endpoint: string, name: string, more: string[] = []) =>
    goSamples(program.binary, [mode, '-endpoint', endpoint, '-prefix', name, ...more]);
  const perRound = ['-samples', String(SAMPLES), '-gap-ms', String(GAP_MS)];
  return {
    name,
    handoffs: (endpoint, lock) => go('handoff', endpoint, lock, perRound),
    resigns: (endpoint, election) => go('resign', endpoint, election, perRound),
    cycles: async (endpoint, lock, contenders) => {
      const flags = ['-contenders', String(contenders), '-ms', String(CYCLE_MS)];
      const rate = (await go('cycles', endpoint, lock, flags))[0] ?? NaN;
      // Its CPU is not measured in one process; its cycles are about rate x time.
      return { rate, cycles: (rate * CYCLE_MS) / 1000, cpuMs: NaN };
    },
    spread: (endpoint, lock, contenders) =>
      goCyclesOverProcesses(
        program.binary,
        endpoint,
        lock,
        contenders,
        Math.min(contenders, PROCESSES),
        CYCLE_MS,
      ),
    death: (endpoint, election, ttl) => goDeathFailover(program.binary, endpoint, election, ttl),
  };
}

type Row = Record<string, string | number>;

/** Every measure of every contender on one server, ROUNDS times in rotated order. */
async function measureServer(
  server: Server,
  contenders: readonly Contender[],
  chart: ChartBar[],
): Promise<Row[]> {
  const puts: number[] = [];
  const backToBack: number[] = [];
  const samples = new Map<string, number[]>();
  const add = (key: string, values: readonly number[]) =>
    samples.set(key, [...(samples.get(key) ?? []), ...values]);
  const early = new Map<string, number>();
  // The gRPC messages per cycle of the last cross-process run, by contender and contenders (etcd).
  const lastMessages = new Map<string, string>();
  // The client processes' socket writes and reads per cycle in the last one (ours only).
  const lastSocket = new Map<string, string>();
  let unique = 0;
  const name = (what: string) => `bench/${what}/${unique++}`;
  const floor: number[] = [];
  const active = contenders.filter((c) => c.skipped === undefined);
  // The unit is measured before each block of handoffs, so that it sees the machine as they do.
  const measurePuts = async () => {
    const trips = await putRoundTrips(server.endpoint);
    puts.push(...trips.paused);
    backToBack.push(...trips.backToBack);
  };
  await warmUp(server.endpoint);
  const pools = new Map<Code, CyclesProcesses>();
  // Measures a cycles run of `c`: its rate, and its CPU, messages and socket I/O per cycle.
  const cyclesRun = async (c: Contender, key: string, run: () => Promise<CyclesRun>) => {
    const messagesBefore = await grpcMessages(server.endpoint);
    const serverBefore = await cpuMsOf(server.pid);
    const done = await run();
    const serverMs = (await cpuMsOf(server.pid)) - serverBefore;
    const after = await grpcMessages(server.endpoint);
    const messages = messagesPerCycle(messagesBefore, after, done.cycles);
    if (messages !== undefined) lastMessages.set(`${c.name}|${key}`, messages);
    if (done.socket !== undefined) {
      const { writes, reads } = done.socket;
      const perCycle = `${(writes / done.cycles).toFixed(1)}, ${(reads / done.cycles).toFixed(1)}`;
      lastSocket.set(`${c.name}|${key}`, perCycle);
    }
    add(`${c.name}|${key}`, [done.rate]);
    add(`${c.name}|${key}|clientCpu`, [done.cpuMs / done.cycles]);
    add(`${c.name}|${key}|serverCpu`, [serverMs / done.cycles]);
  };
  const echo = await LoopbackEcho.start();
  try {
    if (MEASURES.has('cycles')) {
      for (const code of CODES) {
        pools.set(code, await CyclesProcesses.start(server.endpoint, PROCESSES, code));
      }
    }
    for (let round = 0; round < ROUNDS; round++) {
      floor.push(...(await echo.roundTrips(PUTS, GAP_MS)));
      await measurePuts();
      const order = round % 2 === 0 ? active : [...active].reverse();
      const all = order.filter((c) => c.only === undefined);
      for (const c of all) {
        if (!MEASURES.has('handoff')) break;
        add(`${c.name}|handoff`, await c.handoffs(server.endpoint, name('lock')));
      }
      if (MEASURES.has('resign') && MEASURES.has('handoff')) await measurePuts();
      for (const c of all) {
        if (!MEASURES.has('resign')) break;
        add(`${c.name}|resign`, await c.resigns(server.endpoint, name('elect')));
      }
      for (const n of CONTENDERS) {
        for (const c of order) {
          if (pools.size === 0) break;
          if (c.only !== 'spread') {
            await cyclesRun(c, `cycles${n}`, () =>
              c.cycles(server.endpoint, name('cycles'), n, pools),
            );
          }
          await cyclesRun(c, `spread${n}`, () =>
            c.spread(server.endpoint, name('cycles'), n, pools),
          );
        }
      }
      // One death per contender and round: each waits for a lease to expire. A candidate that led
      // before the kill (the leader's lease ran out under load) is no sample; counted apart.
      for (const c of all) {
        if (!MEASURES.has('death')) break;
        const took = await c.death(server.endpoint, name('die'), server.leaderTtl);
        if (took === undefined) early.set(c.name, (early.get(c.name) ?? 0) + 1);
        else add(`${c.name}|death`, [took]);
      }
    }
  } finally {
    await echo.stop();
    for (const pool of pools.values()) await pool.stop();
  }
  const rt = quantile(puts, 0.5);
  const busyRt = quantile(backToBack, 0.5);
  const putRow = (measure: string, values: number[]): Row => ({
    server: server.name,
    measure,
    contender: etcdkit.name,
    median: `${quantile(values, 0.5).toFixed(3)} ms`,
    p99: `${quantile(values, 0.99).toFixed(3)} ms`,
    samples: values.length,
  });
  const unitRow = putRow(`put round trip after a ${GAP_MS} ms pause (the unit)`, puts);
  const rows: Row[] = [
    {
      server: server.name,
      measure: `one byte echoed by another Node process over loopback TCP, after a ${GAP_MS} ms pause (the machine's floor)`,
      contender: 'node:net',
      median: `${quantile(floor, 0.5).toFixed(3)} ms`,
      p99: `${quantile(floor, 0.99).toFixed(3)} ms (${(quantile(floor, 0.99) / quantile(floor, 0.5)).toFixed(1)}x its median)`,
      samples: floor.length,
    },
    { ...unitRow, p99: `${unitRow.p99} (${(quantile(puts, 0.99) / rt).toFixed(1)} RT)` },
    putRow('put round trip, back to back', backToBack),
  ];
  // In the unit, then in back-to-back round trips.
  // The p99 cell also gives the ratio to the paused put's own p99: a handoff holds a write.
  const putP99 = quantile(puts, 0.99);
  const inRoundTrips = (values: number[]) => {
    const cell = (q: number) => {
      const ms = quantile(values, q);
      return `${(ms / rt).toFixed(1)} RT (${ms.toFixed(2)} ms; ${(ms / busyRt).toFixed(1)} back to back)`;
    };
    const p99 = quantile(values, 0.99);
    return {
      median: cell(0.5),
      p99: `${cell(0.99)}; ${(p99 / putP99).toFixed(2)}x the put's p99`,
      samples: values.length,
    };
  };
  const measures: Array<[string, string, (values: number[], contender: string) => Row]> = [
    ['handoff', `mutex handoff, waiter queued ${GAP_MS} ms before`, inRoundTrips],
    ['resign', 'election failover after resign()', inRoundTrips],
    ...CONTENDERS.flatMap(
      (n): Array<[string, string, (values: number[], contender: string) => Row]> => {
        const cells = (values: number[]) => ({
          median: Math.round(quantile(values, 0.5)),
          p99: '-',
          samples: values.length,
        });
        // CPU time per cycle is what other load on the machine distorts least.
        const cyclesCells = (key: string) => (values: number[], contender: string) => {
          const cpu = (what: string) => {
            const ms = quantile(samples.get(`${contender}|${key}|${what}`) ?? [], 0.5);
            return Number.isFinite(ms) ? ms.toFixed(2) : '-';
          };
          const messages = lastMessages.get(`${contender}|${key}`);
          const socket = lastSocket.get(`${contender}|${key}`);
          return {
            ...cells(values),
            'CPU ms per cycle (median)': `clients ${cpu('clientCpu')}, server ${cpu('serverCpu')}`,
            ...(messages === undefined ? {} : { 'gRPC messages per cycle (last round)': messages }),
            ...(socket === undefined
              ? {}
              : { 'client socket writes, reads per cycle (last round)': socket }),
          };
        };
        const processes = Math.min(n, PROCESSES);
        return [
          [`cycles${n}`, `contended lock cycles/s, ${n} contenders`, cyclesCells(`cycles${n}`)],
          [
            `spread${n}`,
            `contended lock cycles/s, ${n} contenders over ${processes} processes`,
            cyclesCells(`spread${n}`),
          ],
        ];
      },
    ),
    [
      'death',
      `election failover after the leader process dies (TTL ${server.leaderTtl} s)`,
      (values, contender) => ({
        median: `${Math.round(quantile(values, 0.5))} ms`,
        p99: `${Math.round(quantile(values, 0.99))} ms`,
        samples: values.length,
        ...(early.has(contender) ? { note: `${early.get(contender)} led before the kill` } : {}),
      }),
    ],
  ];
  // The chart compares the handoffs with Go's, which waits for etcd's 100 ms catch-up loop, and
  // the failover after a crash, which both wait for the lease to expire.
  const charted: ReadonlyArray<readonly [string, string]> = [
    ['handoff', 'mutex handoff'],
    ['resign', 'election failover after resign()'],
    ['death', 'election failover after the leader dies'],
  ];
  for (const [key, label] of charted) {
    const ours = samples.get(`${etcdkit.name}|${key}`) ?? [];
    const go = contenders.find((c) => c !== etcdkit && c.skipped === undefined);
    const theirs = go ? (samples.get(`${go.name}|${key}`) ?? []) : [];
    if (ours.length > 0 && theirs.length > 0) {
      chart.push({
        group: `time, etcdkit / Go clientv3/concurrency (server: ${server.name})`,
        label,
        ratio: quantile(ours, 0.5) / quantile(theirs, 0.5),
      });
    }
  }
  for (const [key, measure, format] of measures) {
    if (!MEASURES.has(key.replace(/\d+$/, '').replace('spread', 'cycles'))) continue;
    for (const c of contenders) {
      const base = { server: server.name, measure, contender: c.name };
      if (c.skipped !== undefined) {
        rows.push({ ...base, median: `skipped: ${c.skipped}`, p99: '-', samples: 0 });
        continue;
      }
      const values = samples.get(`${c.name}|${key}`);
      // A contender that measures some rows only (Contender.only) has none of the others.
      if (values !== undefined) rows.push({ ...base, ...format(values, c.name) });
    }
  }
  return rows;
}

/** The recipes suite: handoff and failover in put round trips, lock throughput, beside Go's. */
export const recipesSuite = {
  name: 'recipes',
  description: 'lock handoff, election failover and lock throughput, in put round trips, beside Go',
  async report(): Promise<{ rows: Row[]; chart: ChartBar[] }> {
    const program = await buildGoProgram();
    const contenders = [...etcdkitContenders, goContender(program), handoffFloor];
    const rows: Row[] = [];
    const chart: ChartBar[] = [];
    try {
      const servers = { etcd: realEtcd, embedded };
      for (const [key, start] of Object.entries(servers)) {
        if (!SERVERS.has(key)) continue;
        const server = await start();
        try {
          rows.push(...(await measureServer(server, contenders, chart)));
        } finally {
          await server.stop();
        }
      }
    } finally {
      if (program.ok) await program.dispose();
    }
    return { rows, chart };
  },
};
