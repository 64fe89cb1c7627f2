// The lock workload: worker processes increment a counter under a Mutex, fenced or not, while
// some are SIGSTOPped in their critical section until their lease expires (Jepsen's lock test).
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Etcd } from '@etcdkit/client';
import { FaultUnavailableError } from '../errors.js';
import { historyFromJson, type Operation, type OperationJson } from '../history.js';
import type { CounterInput, CounterOutput } from '../models/counter.js';
import { Recorder, systemMonotonicMs } from '../recorder.js';
import type { FaultName, Target } from '../target.js';
import type { LockWorkerMessage, LockWorkerProceed, LockWorkerStart } from './lock-worker.js';
import { type FaultEvent, type FaultSchedule, runWithFaults, sleep } from './runner.js';

/** Options of {@link lockWorkload}. */
export interface LockWorkloadOptions extends FaultSchedule {
  readonly prefix: string;
  /** How long it runs, in ms, from the first critical section (not from the workers' start). */
  readonly durationMs: number;
  /** Worker processes. */
  readonly clients: number;
  /** Guard each counter write with the lock (`Hold.txn`). */
  readonly fenced: boolean;
  /**
   * SIGSTOP workers in their critical section until their lease has expired and another worker
   * has written the counter.
   */
  readonly clientPauses: boolean;
  /**
   * Expire every lease (the target's {@link Target.expireLeases}: a virtual clock moved ahead)
   * while a worker is in its critical section, which goes on only once another worker has written
   * the counter: the holder loses the lock without being paused. Default false.
   */
  readonly leaseExpiry?: boolean;
  /** The sessions' lease TTL, in seconds. Default 2. */
  readonly ttlSeconds?: number;
  /** Time between a critical section's read and its write, in ms. Default 100. */
  readonly criticalSectionMs?: number;
}

const PROCESSES_PER_WORKER = 1_000;

/** The worker script and the node flags to run it with (from sources, through tsx). */
function workerModule(): { path: string; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  const url = new URL(fromSource ? './lock-worker.ts' : './lock-worker.js', import.meta.url);
  return {
    path: fileURLToPath(url),
    execArgv: fromSource ? ['--conditions=etcdkit-source', '--import', 'tsx'] : [],
  };
}

/**
 * Runs the workload: `clients` worker processes, each a loop of lock, read the counter, wait,
 * write counter + 1, unlock; the history holds each critical section as one increment and a
 * final read of the counter.
 */
export async function lockWorkload(
  target: Target,
  options: LockWorkloadOptions,
): Promise<{ history: Operation<CounterInput, CounterOutput>[]; faults: FaultEvent[] }> {
  const ttlSeconds = options.ttlSeconds ?? 2;
  const module = workerModule();
  const workers: ChildProcess[] = [];
  const histories: Promise<OperationJson[]>[] = [];
  const pauses: FaultEvent[] = [];
  let pausing = false;
  let lastPause = 0;
  const expireLeases = options.leaseExpiry ? target.expireLeases : undefined;
  if (options.leaseExpiry && expireLeases === undefined)
    throw new FaultUnavailableError(
      'lease-expiry',
      `lease-expiry needs an embedded target on a virtual clock (--embedded), not ${target.description}`,
    );
  // A fault is due: none under way and the quiet time since the last one is over.
  const due = () =>
    !pausing && systemMonotonicMs() - lastPause > (options.faultIntervalMs ?? 1_000);
  // The run is timed from the first critical section: starting worker processes takes seconds on
  // a loaded machine, and a run spent starting them would prove nothing.
  let entered: () => void = () => {};
  const firstEntry = new Promise<void>((resolve) => {
    entered = resolve;
  });
  const ended = (name: FaultName, start: number) => {
    pauses.push({ name, start, end: systemMonotonicMs() });
    lastPause = systemMonotonicMs();
    pausing = false;
  };
  for (let i = 0; i < options.clients; i++) {
    const child = fork(module.path, [], {
      execArgv: module.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    workers.push(child);
    histories.push(
      new Promise((resolve, reject) => {
        child.on('message', (message: LockWorkerMessage) => {
          if (message.type === 'done') {
            if (message.error !== undefined)
              reject(new Error(`lock worker ${i}: ${message.error}`));
            else resolve(message.history as OperationJson[]);
            return;
          }
          entered();
          if (expireLeases !== undefined) {
            if (!due()) {
              child.send({ type: 'proceed' } satisfies LockWorkerProceed);
              return;
            }
            pausing = true;
            const start = systemMonotonicMs();
            // The leases are gone before the holder goes on, and it goes on only once another
            // worker took the lock and wrote the counter: its own write comes after, every run.
            void expireLeases()
              .then(() => counterMoved(target, options.prefix, message.from))
              .then(() => {
                child.send({ type: 'proceed' } satisfies LockWorkerProceed);
                ended('lease-expiry', start);
              });
          } else if (options.clientPauses && due()) {
            pausing = true;
            const start = systemMonotonicMs();
            child.kill('SIGSTOP');
            // Until its lease has expired and another worker took the lock and wrote the counter
            // (not for a fixed time, which a loaded machine may make too short for that).
            void counterMoved(target, options.prefix, message.from).then(() => {
              child.kill('SIGCONT');
              ended('client-pause', start);
            });
          }
        });
        child.once('exit', (code) =>
          reject(new Error(`lock worker ${i} exited with ${code} before reporting`)),
        );
      }),
    );
    const start: LockWorkerStart = {
      type: 'start',
      endpoints: target.endpoints,
      prefix: options.prefix,
      fenced: options.fenced,
      ttlSeconds,
      criticalSectionMs: options.criticalSectionMs ?? 100,
      processBase: i * PROCESSES_PER_WORKER,
      awaitProceed: expireLeases !== undefined,
    };
    child.send(start);
  }
  let faults: FaultEvent[];
  try {
    await Promise.race([firstEntry, Promise.all(histories)]);
    faults = await runWithFaults(
      target,
      { durationMs: options.durationMs, clients: 1 },
      // Leases expire in critical sections only (above), not on the nemesis' schedule.
      { ...options, faults: options.faults.filter((f) => f !== 'lease-expiry') },
      (_, signal) =>
        new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => resolve(), { once: true }),
        ),
    );
    while (pausing) await sleep(50);
    for (const child of workers) child.send({ type: 'stop' });
    const merged = (await Promise.all(histories)).flatMap((h) => historyFromJson(h));
    const final = await finalRead(target, options.prefix);
    return {
      history: renumber([...(merged as Operation<CounterInput, CounterOutput>[]), final]),
      faults: [...faults, ...pauses],
    };
  } finally {
    for (const child of workers)
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGCONT');
        child.kill('SIGKILL');
      }
  }
}

/** How long a fault waits for another worker to write the counter before giving up. */
const TAKEOVER_TIMEOUT_MS = 60_000;

/**
 * Resolves once the counter holds more than `from` (another worker wrote it), or after
 * {@link TAKEOVER_TIMEOUT_MS}: the run then shows whatever happened, and a missing anomaly says so.
 */
async function counterMoved(target: Target, prefix: string, from: number): Promise<void> {
  const etcd = new Etcd({ endpoints: [...target.endpoints], callTimeoutMs: 2_000 });
  const deadline = systemMonotonicMs() + TAKEOVER_TIMEOUT_MS;
  try {
    while (systemMonotonicMs() < deadline) {
      const kv = await etcd.get(`${prefix}counter`).catch(() => undefined);
      if (kv !== undefined && Number(kv.text()) > from) return;
      await sleep(50);
    }
    console.error(
      `lock workload: no other worker wrote the counter past ${from} within ${TAKEOVER_TIMEOUT_MS} ms`,
    );
  } finally {
    await etcd.close();
  }
}

async function finalRead(
  target: Target,
  prefix: string,
): Promise<Operation<CounterInput, CounterOutput>> {
  const recorder = new Recorder<CounterInput, CounterOutput>({ now: systemMonotonicMs });
  const etcd = new Etcd({ endpoints: [...target.endpoints], callTimeoutMs: 5_000 });
  try {
    await recorder.run(-1, { type: 'read' }, 'read', async () => {
      const kv = await etcd.get(`${prefix}counter`);
      return { type: 'read', value: kv === undefined ? 0 : Number(kv.text()) };
    });
  } finally {
    await etcd.close();
  }
  return recorder.history()[0]!;
}

/** Orders merged histories by start and numbers them again. */
function renumber<I, O>(ops: Operation<I, O>[]): Operation<I, O>[] {
  return ops.sort((a, b) => a.start - b.start).map((op, id) => ({ ...op, id }));
}
