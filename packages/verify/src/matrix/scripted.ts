// Runs whose anomaly happens by construction: the fault comes at a chosen moment between chosen
// operations, so the checker has a known anomaly to find on every run, whatever the machine's load.
// The random schedules (verify()) show the same anomalies only when a race goes their way.
import { Etcd } from '@etcdkit/client';
import { EmbeddedCluster } from '@etcdkit/server-embedded';
import { checkLinearizable } from '../checker/check.js';
import type { History, Operation } from '../history.js';
import { type RegisterInput, type RegisterOutput, registerModel } from '../models/register.js';
import { Recorder, systemMonotonicMs } from '../recorder.js';
import { RecordingRegister } from '../recording-register.js';
import { startTarget } from '../target.js';
import type { VerifyResult } from '../verify.js';
import type { FaultEvent } from '../workloads/runner.js';

/** The scripted runs, by name. */
export const SCRIPTED_RUNS = ['stale-serializable-read', 'lost-on-kill-9'] as const;

/** A scripted run's name. */
export type ScriptedRunName = (typeof SCRIPTED_RUNS)[number];

/**
 * A scripted run's result: the {@link VerifyResult} of its history, and the ids of the operations
 * that make its anomaly (the checker must report exactly these).
 */
export interface ScriptedResult extends VerifyResult {
  readonly expectedAnomaly: readonly number[];
}

/** Runs the scripted run `name`. */
export function runScripted(name: ScriptedRunName): Promise<ScriptedResult> {
  return name === 'stale-serializable-read' ? staleSerializableRead() : lostOnKill9();
}

// Generous: a step of a script must not fail on a loaded machine, or the run proves nothing.
const CALL_TIMEOUT_MS = 10_000;

const client = (endpoints: readonly string[]) =>
  new Etcd({ endpoints: [...endpoints], callTimeoutMs: CALL_TIMEOUT_MS, dialTimeoutMs: 5_000 });

/**
 * A stale serializable read on a 3-member embedded cluster: write v1 and wait until a follower
 * has it; cut that follower off; write v2 through the majority; read serializable from the
 * cut-off follower (v1, though v2 was acknowledged before the read began); heal. The anomaly is
 * {put v1, put v2, get -> v1}.
 */
export async function staleSerializableRead(): Promise<ScriptedResult> {
  const began = performance.now();
  const cluster = await EmbeddedCluster.start({ members: 3, requestTimeoutMs: 2_000 });
  const recorder = new Recorder<RegisterInput, RegisterOutput>({ now: systemMonotonicMs });
  const key = 'etcdkit-verify/scripted/stale-read';
  const follower = cluster.members.find((m) => !m.isLeader);
  if (follower === undefined) throw new Error('the embedded cluster started without a follower');
  const majority = client(cluster.members.filter((m) => m !== follower).map((m) => m.endpoint));
  const cutOff = client([follower.endpoint]);
  const writer = new RecordingRegister(majority, recorder, 0);
  const reader = new RecordingRegister(cutOff, recorder, 1, { serializable: true });
  const faults: FaultEvent[] = [];
  try {
    await writer.put(key, 'v1');
    // Unrecorded: the follower has applied v1 before it is cut off, so what it reads later is v1.
    await waitFor(async () => (await cutOff.get(key, { serializable: true }))?.text() === 'v1');
    const start = systemMonotonicMs();
    follower.partition();
    try {
      await writer.put(key, 'v2');
      await reader.get(key);
    } finally {
      follower.heal();
      faults.push({ name: 'partition', start, end: systemMonotonicMs() });
    }
  } finally {
    await Promise.all([majority.close(), cutOff.close()]);
    await cluster.stop();
  }
  // Every operation of the script is in the anomaly.
  return result(`embedded cluster ${cluster.version}, 3 members`, recorder, faults, began);
}

/**
 * Acknowledged writes lost by an in-memory etcdkit-server killed with -9: write v1, kill -9,
 * start it again, read the key (absent). The anomaly is {put v1, get -> absent}.
 */
export async function lostOnKill9(): Promise<ScriptedResult> {
  const began = performance.now();
  const target = await startTarget({ kind: 'etcdkit-server' });
  const recorder = new Recorder<RegisterInput, RegisterOutput>({ now: systemMonotonicMs });
  const key = 'etcdkit-verify/scripted/lost';
  const faults: FaultEvent[] = [];
  try {
    const before = client(target.endpoints);
    try {
      await new RecordingRegister(before, recorder, 0).put(key, 'v1');
    } finally {
      await before.close();
    }
    const start = systemMonotonicMs();
    const restart = await target.faults.kill!();
    await restart();
    faults.push({ name: 'kill', start, end: systemMonotonicMs() });
    // A fresh client: the first one's reconnect backoff would only add waiting.
    const after = client(target.endpoints);
    try {
      await new RecordingRegister(after, recorder, 1).get(key);
    } finally {
      await after.close();
    }
  } finally {
    await target.stop();
  }
  return result(target.description, recorder, faults, began);
}

/** Checks a script's history; the whole history is the anomaly the checker must report. */
function result(
  target: string,
  recorder: Recorder<RegisterInput, RegisterOutput>,
  faults: readonly FaultEvent[],
  began: number,
): ScriptedResult {
  const history: History<RegisterInput, RegisterOutput> = recorder.history();
  const notOk = history.find((op) => op.status !== 'ok');
  if (notOk !== undefined)
    throw new Error(`a step of the script did not succeed: ${describeStep(notOk)}`);
  const check = checkLinearizable(registerModel(), history);
  const { anomalies, ...figures } = check;
  return {
    workload: 'register',
    target,
    valid: check.valid,
    ops: history.length,
    outcomes: { ok: history.length, fail: 0, unknown: 0 },
    anomalies,
    faults,
    history,
    check: figures,
    runMs: performance.now() - began - check.elapsedMs,
    expectedAnomaly: history.map((op) => op.id),
  };
}

function describeStep(op: Operation<RegisterInput, RegisterOutput>): string {
  return `p${op.process} ${op.input.type} ${op.input.key} ended ${op.status} (${op.error ?? ''})`;
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not true within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
