// One verification: start a target, run a workload under faults, check the history.
import { randomBytes } from 'node:crypto';
import {
  type Anomaly,
  type CheckResult,
  checkLinearizable,
  type Verdict,
} from './checker/check.js';
import type { History } from './history.js';
import { counterModel } from './models/counter.js';
import { electionModel } from './models/election.js';
import { registerModel } from './models/register.js';
import { txnModel } from './models/txn.js';
import { checkWatch } from './models/watch.js';
import { type FaultName, startTarget, type TargetSpec } from './target.js';
import { electionWorkload } from './workloads/election-workload.js';
import { registerWorkload, txnWorkload } from './workloads/kv-workloads.js';
import { lockWorkload } from './workloads/lock-workload.js';
import type { FaultEvent } from './workloads/runner.js';
import { watchWorkload } from './workloads/watch-workload.js';

/** The workloads {@link verify} runs. */
export const WORKLOADS = ['register', 'txn', 'lock', 'election', 'watch'] as const;

/** A workload name. */
export type WorkloadName = (typeof WORKLOADS)[number];

/** Options of {@link verify}. */
export interface VerifyOptions {
  readonly workload: WorkloadName;
  readonly target: TargetSpec;
  /** How long the workload runs, in ms. Default 10 000. */
  readonly durationMs?: number;
  /** Stop after this many operations. Default unlimited. */
  readonly maxOps?: number;
  /**
   * Go on past `durationMs` until this many faults have been applied and healed (not the lock
   * workload, whose faults come with its critical sections). Default 0.
   */
  readonly minFaults?: number;
  /** Concurrent clients (lock: worker processes). Default 8 (lock: 4). */
  readonly clients?: number;
  /** Faults to apply in turn. Default none. */
  readonly faults?: readonly FaultName[];
  /** Quiet time between faults, in ms. Default 1 000. */
  readonly faultIntervalMs?: number;
  /** How long each fault lasts, in ms. Default 1 500. */
  readonly faultDurationMs?: number;
  /** lock: guard the counter's writes with the lock (`Hold.txn`). */
  readonly fenced?: boolean;
  /** Serializable reads, each client on one member (see KvWorkloadOptions.serializable). */
  readonly serializable?: boolean;
  /** Time budget of the checker, in ms. Default 60 000. */
  readonly checkBudgetMs?: number;
}

/** What {@link verify} found. */
export interface VerifyResult {
  readonly workload: WorkloadName;
  /** The target, e.g. `etcd 3.4.23, 3 members`. */
  readonly target: string;
  readonly valid: Verdict;
  /** Operations recorded. */
  readonly ops: number;
  /** How many ended ok, failed, and unknown. */
  readonly outcomes: { readonly ok: number; readonly fail: number; readonly unknown: number };
  readonly anomalies: readonly Anomaly[];
  /** Faults as they happened. */
  readonly faults: readonly FaultEvent[];
  /** The recorded history. */
  readonly history: History;
  /** The checker's own figures. */
  readonly check: Omit<CheckResult, 'anomalies'>;
  /** Wall time of the workload and of the check, in ms. */
  readonly runMs: number;
}

/** Starts the target, runs the workload on fresh keys, stops the target, checks the history. */
export async function verify(options: VerifyOptions): Promise<VerifyResult> {
  // lease-expiry moves a virtual clock: an embedded target runs on one when it is asked for.
  const target = await startTarget(
    options.target.kind === 'embedded' && options.faults?.includes('lease-expiry')
      ? { ...options.target, virtualClock: true }
      : options.target,
  );
  const began = performance.now();
  const workloadOptions = {
    prefix: `etcdkit-verify/${randomBytes(4).toString('hex')}/`,
    durationMs: options.durationMs ?? 10_000,
    maxOps: options.maxOps,
    minFaults: options.minFaults,
    clients: options.clients ?? 8,
    faults: options.faults ?? [],
    faultIntervalMs: options.faultIntervalMs,
    faultDurationMs: options.faultDurationMs,
    serializable: options.serializable,
  };
  let run: { history: History; faults: readonly FaultEvent[]; check: CheckResult };
  try {
    if (options.workload === 'register') {
      const r = await registerWorkload(target, workloadOptions);
      run = {
        ...r,
        check: checkLinearizable(registerModel(), r.history, {
          timeBudgetMs: options.checkBudgetMs,
        }),
      };
    } else if (options.workload === 'txn') {
      const r = await txnWorkload(target, workloadOptions);
      run = {
        ...r,
        check: checkLinearizable(txnModel(), r.history, { timeBudgetMs: options.checkBudgetMs }),
      };
    } else if (options.workload === 'watch') {
      const r = await watchWorkload(target, workloadOptions);
      const kv = checkLinearizable(registerModel(), r.history, {
        timeBudgetMs: options.checkBudgetMs,
      });
      const watch = checkWatch(r.history, r.streams);
      const anomalies = [...kv.anomalies, ...watch];
      run = { ...r, check: { ...kv, anomalies, valid: watch.length > 0 ? false : kv.valid } };
    } else if (options.workload === 'election') {
      const r = await electionWorkload(target, workloadOptions);
      run = {
        ...r,
        check: checkLinearizable(electionModel(), r.history, {
          timeBudgetMs: options.checkBudgetMs,
        }),
      };
    } else {
      const r = await lockWorkload(target, {
        ...workloadOptions,
        clients: options.clients ?? 4,
        fenced: options.fenced ?? false,
        clientPauses: workloadOptions.faults.includes('client-pause'),
        leaseExpiry: workloadOptions.faults.includes('lease-expiry'),
      });
      run = {
        ...r,
        check: checkLinearizable(counterModel(), r.history, {
          timeBudgetMs: options.checkBudgetMs,
        }),
      };
    }
  } finally {
    await target.stop();
  }
  const runMs = performance.now() - began - run.check.elapsedMs;
  const count = (status: string) => run.history.filter((op) => op.status === status).length;
  const { anomalies, ...check } = run.check;
  return {
    workload: options.workload,
    target: target.description,
    valid: run.check.valid,
    ops: run.history.length,
    outcomes: { ok: count('ok'), fail: count('fail'), unknown: count('unknown') },
    anomalies,
    faults: run.faults,
    history: run.history,
    check,
    runMs,
  };
}
