// STM under contention: commits/s of runStm transfers when 8, 32 or 64 contenders of one process
// each loop moving 1 between two random keys of 2 or 8, for a fixed time, on an embedded server (in
// a child process, like the real one) and on a real etcd the suite starts (or ETCDKIT_ENDPOINTS).
// Settings side by side: the old default (10 retries, then StmConflictError; no local queue), the
// default, and at 64 contenders the default with the contenders spread over two clients (two local
// queues that conflict through etcd, like two processes). Each round runs every setting, in rotated
// order; the table shows medians over the rounds. Transfers still running at the end finish and count, so commits/s covers that tail.
// Then across processes (issue 28): 32 contenders in 1, 2 or 8 processes (recipes-stm-process.ts),
// default vs `contention: { locks: stmKeyLocks(session) }`, with commits/s beside the serial floor
// (one txn after another from one client) and the slowest transfer's latency beside the median.
// Those rows are medians of 3 rounds in rotated order, with the unary calls per commit, the watch
// messages per commit ('watch msgs': responses the processes' watchers got, summed) and the
// contending processes' CPU per commit.
// ETCDKIT_BENCH_STM_MS sets the time per measurement (default 300; 2000 gives steadier counts per
// commit on a loaded machine). ETCDKIT_BENCH_STM_PROF=<dir>: every process of the rows across
// processes writes a --cpu-prof there (startup included: look at the last ETCDKIT_BENCH_STM_MS).
// ETCDKIT_BENCH_STM_WARM_MS=<ms>: each process of those rows first runs the same transfers on
// other keys for that long (compiled code, as in a long-lived service); default 3000 (0: cold).
// Those rows measure at least 1000 ms: the serial floor beside them is a warm process's steady
// rate, and a shorter window counts mostly first runs (bench/findings/stm.md, 2026-12-07).
// ETCDKIT_BENCH_STM_TRACE=1: the processes classify their txns (recipes-stm-process.ts).
// The serial floor is measured like those rows: in a process of its own, warmed alike, for as long
// (until 2026-12-07 17:45: 300 ms in this process, right after a round's processes were killed).
// Those processes and the embedded server run the built packages (built-packages.ts: what users
// install); ETCDKIT_BENCH_CODE=source runs the TypeScript sources under tsx, as before 17:45.
// Reports numbers; asserts nothing.
import { fork } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Etcd } from '../packages/client/src/etcd.js';
import { StmConflictError } from '../packages/recipes/src/stm/errors.js';
import { runStm, type StmOptions } from '../packages/recipes/src/stm/stm.js';
import { startEtcd } from '../testkit/src/etcd-process.js';
import { type BuiltPackages, builtPackages } from './built-packages.js';
import { ServerProcess } from './memory.js';

const DURATION_MS = Number(process.env.ETCDKIT_BENCH_STM_MS ?? '300') || 300;
const PROCESS_MS = Math.max(DURATION_MS, 1_000);
// 3 s: a process's client CPU keeps falling over its first seconds (V8 tiering up; the lock
// cycles' processes take 20-30 s to settle, bench/findings/recipes.md 2026-12-07).
const WARM_MS = process.env.ETCDKIT_BENCH_STM_WARM_MS ?? '3000';
const ROUNDS = 3;
// ETCDKIT_BENCH_STM_PROCESSES_ONLY=1: only the rows across processes.
const ONLY_PROCESSES = process.env.ETCDKIT_BENCH_STM_PROCESSES_ONLY === '1';
const PROF = process.env.ETCDKIT_BENCH_STM_PROF;
const CONTENDERS = [8, 32, 64];
const KEYS = [2, 8];
const INITIAL = 1_000_000;
// ETCDKIT_BENCH_STM_PROCESS_COUNTS=8 (comma-separated): only those process counts across processes.
const PROCESSES = (process.env.ETCDKIT_BENCH_STM_PROCESS_COUNTS ?? '1,2,8').split(',').map(Number);
// 32 contenders: 4 a process over 8 (issue 28's setting), so a process has runs to group in a turn.
// ETCDKIT_BENCH_STM_PROCESS_CONTENDERS=8 gives the rows before the group turn (one a process at 8).
const PROCESS_CONTENDERS = Number(process.env.ETCDKIT_BENCH_STM_PROCESS_CONTENDERS ?? '32') || 32;
const processScript = fileURLToPath(new URL('./recipes-stm-process.ts', import.meta.url));
// ETCDKIT_BENCH_CODE=source: the processes and the embedded server run the sources under tsx.
const BUILT = process.env.ETCDKIT_BENCH_CODE !== 'source';

/** A setting measured: its runStm options, over how many clients the contenders are spread. */
interface Setting {
  readonly name: string;
  readonly options: StmOptions;
  readonly clients: number;
}

const OLD: Setting = {
  name: 'old default (10 retries, no queue)',
  options: { maxRetries: 10, localQueue: false },
  clients: 1,
};
const NEW: Setting = { name: 'default', options: {}, clients: 1 };
// Two clients have two local queues: their runs conflict through etcd, as two processes' would,
// and only the backoff spaces them. Measured at the highest contention only, to keep the suite short.
const SPLIT: Setting = { name: 'default, over 2 clients', options: {}, clients: 2 };

interface Measure {
  commits: number;
  failures: number;
  attempts: number;
  ms: number;
  conserved: boolean;
}

let run = 0;

async function measure(etcds: readonly Etcd[], contenders: number, keys: number, setting: Setting) {
  const etcd = etcds[0]!;
  const prefix = `bench/stm/${run++}/`;
  const accounts = Array.from({ length: keys }, (_, i) => `${prefix}${i}`);
  for (const account of accounts) await etcd.put(account, String(INITIAL));
  const result: Measure = { commits: 0, failures: 0, attempts: 0, ms: 0, conserved: false };
  const started = performance.now();
  const end = started + DURATION_MS;
  const contender = async (_: unknown, index: number) => {
    const client = etcds[index % setting.clients]!;
    while (performance.now() < end) {
      const from = Math.floor(Math.random() * keys);
      const to = (from + 1 + Math.floor(Math.random() * (keys - 1))) % keys;
      try {
        const { attempts } = await runStm(
          client,
          async (stm) => {
            const a = Number(await stm.get(accounts[from]!));
            const b = Number(await stm.get(accounts[to]!));
            stm.put(accounts[from]!, String(a - 1));
            stm.put(accounts[to]!, String(b + 1));
          },
          setting.options,
        );
        result.commits++;
        result.attempts += attempts;
      } catch (error) {
        if (!(error instanceof StmConflictError)) throw error;
        result.failures++;
        result.attempts += error.attempts;
      }
    }
  };
  await Promise.all(Array.from({ length: contenders }, contender));
  result.ms = performance.now() - started;
  const { kvs } = await etcd.range({ prefix });
  result.conserved = kvs.reduce((sum, kv) => sum + Number(kv.text()), 0) === keys * INITIAL;
  await etcd.delete({ prefix });
  return result;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function backendRows(backend: string, endpoints: readonly string[]) {
  const etcds = [0, 1].map(() => new Etcd({ endpoints: [...endpoints] }));
  const rows: Array<Record<string, string | number>> = [];
  try {
    // Warm-up, not reported.
    await measure(etcds, 8, 2, NEW);
    for (const keys of KEYS) {
      for (const contenders of CONTENDERS) {
        const settings = contenders === Math.max(...CONTENDERS) ? [OLD, NEW, SPLIT] : [OLD, NEW];
        const per = new Map<string, Measure[]>();
        for (let round = 0; round < ROUNDS; round++) {
          // Rotate the order, so each setting runs first, in the middle and last.
          const order = settings.map((_, i) => settings[(i + round) % settings.length]!);
          for (const setting of order) {
            const m = await measure(etcds, contenders, keys, setting);
            per.set(setting.name, [...(per.get(setting.name) ?? []), m]);
          }
        }
        const rates = new Map<string, number>();
        for (const { name } of settings) {
          const ms = per.get(name) ?? [];
          const rate = median(ms.map((m) => (m.commits / m.ms) * 1000));
          rates.set(name, rate);
          rows.push({
            backend,
            keys,
            contenders,
            settings: name,
            'commits/s': Math.round(rate),
            'failed runs': median(ms.map((m) => m.failures)),
            'attempts per run': median(
              ms.map((m) => m.attempts / Math.max(1, m.commits + m.failures)),
            ).toFixed(1),
            conserved: ms.every((m) => m.conserved) ? 'yes' : 'NO',
          });
        }
        const old = rates.get(OLD.name) ?? 0;
        for (const setting of settings.slice(1)) {
          rows.push({
            backend,
            keys,
            contenders,
            settings: `${setting.name} / old`,
            'commits/s': `${((rates.get(setting.name) ?? 0) / Math.max(old, 1e-9)).toFixed(1)}x`,
            'failed runs': '',
            'attempts per run': '',
            conserved: '',
          });
        }
      }
    }
  } finally {
    await Promise.all(etcds.map((etcd) => etcd.close()));
  }
  return rows;
}

/** A setting of the rows across processes: which process script, with the contention option or not. */
interface ProcessSetting {
  readonly name: string;
  readonly script: string;
  readonly contention: boolean;
  /** The handoff floor instead of transfers: a token passed round the processes. */
  readonly token?: boolean;
  /** The serial floor instead of transfers: one range then one txn, back to back, one process. */
  readonly floor?: boolean;
}

const FLOOR: ProcessSetting = {
  name: 'serial floor (one range, one txn, after another)',
  script: processScript,
  contention: false,
  floor: true,
};

// ETCDKIT_BENCH_STM_BASELINE=<checkout>: also run that checkout's process script with the
// contention option (a 'before' of the same suite, e.g. `git worktree add /tmp/before HEAD~3`),
// rotated with the others, so a change is measured against its baseline under the same load.
// Copy this checkout's recipes-stm-process.ts into it to count its watch messages too (the script
// imports the checkout's own packages).
const BASELINE = process.env.ETCDKIT_BENCH_STM_BASELINE;
const PROCESS_SETTINGS: ProcessSetting[] = [
  { name: 'default', script: processScript, contention: false },
  { name: 'contention: stmKeyLocks', script: processScript, contention: true },
  {
    name: 'handoff floor (a token passed by put + watch, to the next only)',
    script: processScript,
    contention: false,
    token: true,
  },
  ...(BASELINE
    ? [
        {
          name: `contention, baseline ${BASELINE}`,
          script: `${BASELINE}/bench/recipes-stm-process.ts`,
          contention: true,
        },
      ]
    : []),
];

interface ProcessMeasure {
  readonly rate: number;
  readonly latencies: number[];
  readonly conserved: boolean;
  /** Unary calls per commit, by method. */
  readonly calls: Record<string, number>;
  /** The CPU time of the contending processes per commit, in ms (what each handoff costs them). */
  readonly cpuMs: number;
}

/** PROCESS_CONTENDERS contenders over `processes` child processes for PROCESS_MS; every transfer's latency. */
async function acrossProcesses(
  etcd: Etcd,
  endpoint: string,
  keys: number,
  processes: number,
  setting: ProcessSetting,
): Promise<ProcessMeasure> {
  const prefix = `bench/stm/${run++}/`;
  for (let i = 0; i < keys; i++) await etcd.put(`${prefix}${i}`, String(INITIAL));
  if (setting.token) await etcd.put(`${prefix}token/0`, '0');
  // The packages of the script's checkout (a baseline's are its own), built if stale.
  const checkout = fileURLToPath(new URL('..', pathToFileURL(setting.script))).replace(/\/$/, '');
  const built: BuiltPackages | undefined = BUILT ? await builtPackages(checkout) : undefined;
  const args = (index: number) => [
    endpoint,
    prefix,
    keys,
    PROCESS_CONTENDERS / processes,
    // A second at least: the token needs laps round all the processes, however slow the handoff.
    PROCESS_MS,
    setting.floor
      ? 'floor'
      : setting.token
        ? `token:${index}/${processes}`
        : setting.contention
          ? 1
          : 0,
  ];
  const children = Array.from({ length: processes }, (_, index) =>
    // In its own checkout: tsx resolves the packages by the tsconfig of the working directory.
    fork(setting.script, args(index).map(String), {
      cwd: checkout,
      execArgv: [
        ...(built?.execArgv ?? process.execArgv),
        ...(PROF ? ['--cpu-prof', `--cpu-prof-dir=${PROF}`] : []),
      ],
      env: { ...(built?.env ?? process.env), ETCDKIT_BENCH_STM_WARM_MS: WARM_MS },
      stdio: 'inherit',
    }),
  );
  type Done = {
    latencies: number[];
    calls?: Record<string, number>;
    count?: number;
    cpuMs?: number;
  };
  try {
    const results = children.map(
      (child) =>
        new Promise<Done>((resolve, reject) => {
          child.on('message', (message: 'ready' | Done) => {
            if (message !== 'ready') resolve(message);
          });
          child.once('exit', (code) => reject(new Error(`stm process exited (${code})`)));
        }),
    );
    await Promise.all(
      children.map((child) => new Promise((resolve) => child.once('message', resolve))),
    );
    const started = performance.now();
    for (const child of children) child.send('go');
    const done = await Promise.all(results);
    const ms = performance.now() - started;
    const latencies = done.flatMap((d) => d.latencies);
    const count = done.reduce((sum, d) => sum + (d.count ?? d.latencies.length), 0);
    const calls: Record<string, number> = {};
    for (const d of done) {
      for (const [name, n] of Object.entries(d.calls ?? {})) {
        calls[name] = (calls[name] ?? 0) + n / Math.max(1, count);
      }
    }
    const { kvs } = await etcd.range({ prefix: `${prefix}` });
    // The accounts: not the lock queues, the token, the floor's key, nor the warm-up's keys.
    const accounts = kvs.filter((kv) =>
      ['locks', 'token', 'floor', 'warm/'].every(
        (other) => !kv.keyText().startsWith(`${prefix}${other}`),
      ),
    );
    const conserved = accounts.reduce((sum, kv) => sum + Number(kv.text()), 0) === keys * INITIAL;
    await etcd.delete({ prefix });
    const cpuMs = done.reduce((sum, d) => sum + (d.cpuMs ?? 0), 0) / Math.max(1, count);
    return { rate: (count / ms) * 1000, latencies, conserved, calls, cpuMs };
  } finally {
    for (const child of children) child.kill('SIGKILL');
  }
}

async function processRows(backend: string, endpoints: readonly string[]) {
  const etcd = new Etcd({ endpoints: [...endpoints] });
  const rows: Array<Record<string, string | number>> = [];
  // The handoff floor once, over the most processes: it touches no account.
  const cells = KEYS.flatMap((keys) =>
    PROCESSES.flatMap((processes) =>
      PROCESS_SETTINGS.filter(
        ({ token }) => !token || (keys === KEYS[0] && processes === Math.max(...PROCESSES)),
      ).map((setting) => ({ keys: setting.token ? 0 : keys, processes, setting })),
    ),
  );
  // The serial floor in the same rotation, a process of its own each round.
  const floorCell = { keys: 0, processes: 1, setting: FLOOR };
  cells.push(floorCell);
  const per = new Map<(typeof cells)[number], ProcessMeasure[]>(cells.map((c) => [c, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order, so each setting runs early and late in some round.
      const shift = Math.round((round * cells.length) / ROUNDS);
      const order = cells.map((_, i) => cells[(i + shift) % cells.length]!);
      for (const cell of order) {
        const m = await acrossProcesses(
          etcd,
          endpoints[0]!,
          cell.keys,
          cell.processes,
          cell.setting,
        );
        per.get(cell)!.push(m);
      }
    }
    const floors = per.get(floorCell)!;
    const floor = median(floors.map((m) => m.rate));
    rows.push({
      backend,
      keys: 1,
      contenders: '1 in 1 process',
      settings: FLOOR.name,
      'commits/s': Math.round(floor),
      'client cpu ms per commit': median(floors.map((m) => m.cpuMs)).toFixed(2),
    });
    for (const cell of cells) {
      if (cell === floorCell) continue;
      const ms = per.get(cell)!;
      const rate = median(ms.map((m) => m.rate));
      // A token round with too few handoffs for a lap has no latency.
      const timed = ms.filter((m) => m.latencies.length > 0);
      const mid = median(timed.map((m) => median(m.latencies)));
      const ratio = median(
        timed.map((m) => Math.max(...m.latencies) / Math.max(median(m.latencies), 1e-9)),
      );
      const names = [...new Set(ms.flatMap((m) => Object.keys(m.calls)))].sort();
      rows.push({
        backend,
        keys: cell.setting.token ? '-' : cell.keys,
        contenders: `${PROCESS_CONTENDERS} in ${cell.processes} process${cell.processes > 1 ? 'es' : ''}`,
        settings: cell.setting.name,
        'commits/s': Math.round(rate),
        'of floor': `${Math.round((rate / floor) * 100)}%`,
        'median ms': Number.isNaN(mid) ? '-' : mid.toFixed(1),
        'slowest / median': Number.isNaN(ratio) ? '-' : `${ratio.toFixed(1)}x`,
        'calls per commit': names
          .map((name) => `${name} ${median(ms.map((m) => m.calls[name] ?? 0)).toFixed(1)}`)
          .join(', '),
        'client cpu ms per commit': median(ms.map((m) => m.cpuMs)).toFixed(2),
        conserved: cell.setting.token ? '' : ms.every((m) => m.conserved) ? 'yes' : 'NO',
      });
    }
  } finally {
    await etcd.close();
  }
  return rows;
}

async function report() {
  const rows: Array<Record<string, string | number>> = [];
  // In a child process, so its CPU is not the client's: its built package, as `etcdkit-server` runs.
  const embedded = await ServerProcess.start(BUILT ? await builtPackages() : undefined);
  try {
    if (!ONLY_PROCESSES) rows.push(...(await backendRows('embedded', embedded.endpoints)));
    rows.push(...(await processRows('embedded', embedded.endpoints)));
  } finally {
    await embedded.stop();
  }
  const external = process.env.ETCDKIT_ENDPOINTS?.split(',').map((e) => e.trim());
  const server = external ? undefined : await startEtcd();
  try {
    const endpoints = external ?? server?.endpoints ?? [];
    if (!ONLY_PROCESSES) rows.push(...(await backendRows('etcd', endpoints)));
    rows.push(...(await processRows('etcd', endpoints)));
  } finally {
    await server?.stop();
  }
  return rows;
}

export const stmSuite = {
  name: 'stm',
  description:
    'runStm transfers under contention: commits/s, failed runs and attempts at 8/32/64 contenders on 2 and 8 keys, old default vs default (and over 2 clients at 64), embedded server and real etcd (medians of 3 rotated rounds); then 32 contenders over 1, 2 and 8 processes (4 a process at 8), default vs contention locks (medians of 3 rotated rounds), beside the serial floor, with the slowest transfer beside the median, the calls and the contending processes’ CPU ms per commit',
  report,
};
