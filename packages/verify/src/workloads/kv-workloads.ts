// The register and txn (list-append) workloads.
import { Etcd } from '@etcdkit/client';
import type { History } from '../history.js';
import type { RegisterInput, RegisterOutput } from '../models/register.js';
import type { TxnInput, TxnOutput, TxnStep } from '../models/txn.js';
import { classifyFailure, Recorder } from '../recorder.js';
import { RecordingRegister } from '../recording-register.js';
import { recordTxn } from '../recording-txn.js';
import type { Target } from '../target.js';
import {
  type FaultEvent,
  type FaultSchedule,
  OpBudget,
  ProcessIds,
  type RunLimits,
  runWithFaults,
} from './runner.js';

/** Options shared by the KV workloads. */
export interface KvWorkloadOptions extends RunLimits, FaultSchedule {
  /** Prefix of every key, so runs do not see each other's keys. */
  readonly prefix: string;
  /** How many keys (register) or keys active at a time (txn). Default 3 (register), 5 (txn). */
  readonly keys?: number;
  /**
   * Serializable reads, each client talking to one member only: what etcd does NOT promise to be
   * linearizable. The checker should catch it under partitions and pauses.
   */
  readonly serializable?: boolean;
  /** Per-call deadline, in ms. Default 1 000. */
  readonly callTimeoutMs?: number;
}

/** A recorded run. */
export interface WorkloadRun<I, O> {
  readonly history: History<I, O>;
  readonly faults: readonly FaultEvent[];
}

function clientFor(target: Target, options: KvWorkloadOptions, index: number): Etcd {
  const endpoints = options.serializable
    ? [target.endpoints[index % target.endpoints.length]!]
    : [...target.endpoints];
  return new Etcd({
    endpoints,
    callTimeoutMs: options.callTimeoutMs ?? 1_000,
    dialTimeoutMs: 1_000,
    // Fail fast to the recorder: retries would only blur when an operation happened.
    retry: { maxAttempts: 2 },
  });
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

/**
 * `register`: clients doing get, put, CAS on the value and CAS on mod_revision on a few keys, each
 * write with a value never written before.
 */
export async function registerWorkload(
  target: Target,
  options: KvWorkloadOptions,
): Promise<WorkloadRun<RegisterInput, RegisterOutput>> {
  const recorder = new Recorder<RegisterInput, RegisterOutput>();
  const keys = Array.from({ length: options.keys ?? 3 }, (_, i) => `${options.prefix}k${i}`);
  const ids = new ProcessIds();
  const budget = new OpBudget(options.maxOps ?? Number.POSITIVE_INFINITY);
  let written = 0;
  const faults = await runWithFaults(target, options, options, async (index, signal) => {
    const etcd = clientFor(target, options, index);
    const getOptions = options.serializable ? { serializable: true } : {};
    let register = new RecordingRegister(etcd, recorder, ids.fresh(), getOptions);
    const seen = new Map<string, { value: string | undefined; modRevision: bigint }>();
    try {
      while (!signal.aborted && budget.take()) {
        const key = pick(keys);
        const value = `${index}.${written++}`;
        const last = seen.get(key);
        const r = Math.random();
        const effect = r < 0.4 || last === undefined ? 'read' : 'write';
        try {
          if (effect === 'read') {
            const out = await register.get(key);
            seen.set(key, { value: out.value, modRevision: out.modRevision });
          } else if (r < 0.6) await register.put(key, value);
          else if (r < 0.8) await register.cas(key, last!.value, value);
          else await register.casRevision(key, last!.modRevision, last!.value, value);
        } catch (error) {
          if (classifyFailure(error, effect) === 'unknown')
            register = new RecordingRegister(etcd, recorder, ids.fresh(), getOptions);
        }
      }
    } finally {
      await etcd.close();
    }
  });
  return { history: recorder.history(), faults };
}

/**
 * `txn`: list-append through txns, the workload of Jepsen's etcd analysis. Each operation picks
 * one to three keys among a few active ones, reads them in one txn, then in a second txn appends a
 * unique element to some of them and reads the others, if every key still holds what was read
 * (else it reads them all). Keys are retired as the run goes so values stay short.
 */
export async function txnWorkload(
  target: Target,
  options: KvWorkloadOptions,
): Promise<WorkloadRun<TxnInput, TxnOutput>> {
  const recorder = new Recorder<TxnInput, TxnOutput>();
  const active = options.keys ?? 5;
  const ids = new ProcessIds();
  const budget = new OpBudget(options.maxOps ?? Number.POSITIVE_INFINITY);
  let started = 0;
  let element = 0;
  const faults = await runWithFaults(target, options, options, async (index, signal) => {
    const etcd = clientFor(target, options, index);
    let process = ids.fresh();
    try {
      while (!signal.aborted && budget.take()) {
        const base = Math.floor(started++ / 400);
        const chosen = new Set<string>();
        const count = 1 + Math.floor(Math.random() * 3);
        while (chosen.size < count)
          chosen.add(`${options.prefix}k${base + Math.floor(Math.random() * active)}`);
        const keys = [...chosen];
        const readAll: TxnStep[] = keys.map((key) => ({ type: 'get', key }));
        let effect: 'read' | 'write' = 'read';
        try {
          const read = await recordTxn(
            etcd,
            recorder,
            process,
            { compares: [], success: readAll, failure: [] },
            signal,
          );
          const appends = keys.filter(() => Math.random() < 0.6);
          if (appends.length === 0) continue;
          if (!budget.take()) break;
          effect = 'write';
          const seen = new Map(keys.map((key, i) => [key, read.reads[i]]));
          await recordTxn(
            etcd,
            recorder,
            process,
            {
              compares: keys.map((key) => ({ key, expect: seen.get(key) })),
              success: keys.map((key) => {
                if (!appends.includes(key)) return { type: 'get', key };
                const old = seen.get(key);
                const e = `${index}.${element++}`;
                return { type: 'put', key, value: old === undefined ? e : `${old},${e}` };
              }),
              failure: readAll,
            },
            signal,
          );
        } catch (error) {
          if (classifyFailure(error, effect) === 'unknown') process = ids.fresh();
        }
      }
    } finally {
      await etcd.close();
    }
  });
  return { history: recorder.history(), faults };
}
