// STM under contention: commits/s of runStm transfers when 8, 32 or 64 contenders of one process
// each loop moving 1 between two random keys of 2 or 8, for a fixed time, on an embedded server (in
// a child process, like the real one) and on a real etcd the suite starts (or ETCDKIT_ENDPOINTS).
// Settings side by side: the old default (10 retries, then StmConflictError; no local queue), the
// default, and at 64 contenders the default with the contenders spread over two clients (two local
// queues that conflict through etcd, like two processes). Each round runs every setting, in rotated
// order; the table shows medians over the rounds. Transfers still running at the end finish and count, so commits/s covers that tail.
// ETCDKIT_BENCH_STM_MS sets the time per measurement (default 300). Reports numbers; asserts nothing.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Etcd } from '../packages/client/src/etcd.js';
import { StmConflictError } from '../packages/recipes/src/stm/errors.js';
import { runStm, type StmOptions } from '../packages/recipes/src/stm/stm.js';
import { startEtcd } from '../testkit/src/etcd-process.js';

const DURATION_MS = Number(process.env.ETCDKIT_BENCH_STM_MS ?? '300') || 300;
const ROUNDS = 3;
const CONTENDERS = [8, 32, 64];
const KEYS = [2, 8];
const INITIAL = 1_000_000;

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

/** An in-memory EmbeddedEtcd in a child process, so its CPU is not the client's. */
async function embeddedChild(): Promise<{ endpoints: string[]; stop(): void }> {
  const script = fileURLToPath(new URL('./transport-server.ts', import.meta.url));
  const child = fork(script, [], { execArgv: process.execArgv, stdio: 'inherit' });
  const endpoints = await new Promise<string[]>((resolve, reject) => {
    child.once('message', (message: { endpoints: string[] }) => resolve(message.endpoints));
    child.once('exit', (code) => reject(new Error(`server process exited (${code})`)));
  });
  return { endpoints, stop: () => child.kill('SIGTERM') };
}

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

async function report() {
  const rows: Array<Record<string, string | number>> = [];
  const embedded = await embeddedChild();
  try {
    rows.push(...(await backendRows('embedded', embedded.endpoints)));
  } finally {
    embedded.stop();
  }
  const external = process.env.ETCDKIT_ENDPOINTS?.split(',').map((e) => e.trim());
  const server = external ? undefined : await startEtcd();
  try {
    rows.push(...(await backendRows('etcd', external ?? server?.endpoints ?? [])));
  } finally {
    await server?.stop();
  }
  return rows;
}

export const stmSuite = {
  name: 'stm',
  description:
    'runStm transfers under contention: commits/s, failed runs and attempts at 8/32/64 contenders on 2 and 8 keys, old default vs default (and over 2 clients at 64), embedded server and real etcd (medians of 3 rotated rounds)',
  report,
};
