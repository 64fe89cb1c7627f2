// Running a TxnInput on etcd and recording it as an operation of a txn history.
import { cmp, type KV, type Op, op } from '@etcdkit/client';
import type { TxnInput, TxnOutput, TxnStep } from './models/txn.js';
import type { Recorder } from './recorder.js';

/** Runs `input` as one etcd txn and answers in the txn model's terms. */
export async function runTxn(kv: KV, input: TxnInput, signal?: AbortSignal): Promise<TxnOutput> {
  const toOp = (step: TxnStep): Op =>
    step.type === 'get'
      ? op.get(step.key)
      : step.type === 'put'
        ? op.put(step.key, step.value)
        : op.delete(step.key);
  const compares = input.compares.map((c) =>
    c.expect === undefined ? cmp.version(c.key, '==', 0n) : cmp.value(c.key, '==', c.expect),
  );
  const r = await kv
    .txn()
    .if(...compares)
    .then(...input.success.map(toOp))
    .else(...input.failure.map(toOp))
    .commit({ signal });
  const reads: (string | undefined)[] = [];
  for (const response of r.responses)
    if (response.kind === 'range') reads.push(response.kvs[0]?.text());
  return { succeeded: r.succeeded, reads };
}

/** Runs `input` as {@link runTxn} does, recorded as an operation of `process`. */
export function recordTxn(
  kv: KV,
  recorder: Recorder<TxnInput, TxnOutput>,
  process: number,
  input: TxnInput,
  signal?: AbortSignal,
): Promise<TxnOutput> {
  const writes = [...input.success, ...input.failure].some((s) => s.type !== 'get');
  return recorder.run(process, input, writes ? 'write' : 'read', () => runTxn(kv, input, signal));
}
