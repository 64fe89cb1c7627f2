// Runs one sequence on a fresh embedded server and a fresh real etcd, step by step, and throws a
// readable Divergence at the first answer that differs.
import { isDeepStrictEqual } from 'node:util';
import { parseEtcdVersion } from '../../src/etcd-version.js';
import { EmbeddedEtcd } from '../../src/index.js';
import { RawClient } from '../support/grpc-client.js';
import { describeOperation, Sequence } from './describe.js';
import type { EtcdPool } from './etcd-pool.js';
import { firstDifference, normalise, type Plain, reconcileRemainingTtl } from './normalise.js';
import { MAX_TXN_OPS } from './operations.js';
import { type Outcome, Participant } from './participant.js';

/** etcd flags of the differential servers; the embedded server gets the same limits. */
export const DIFFERENTIAL_ETCD_ARGS = ['--max-txn-ops', String(MAX_TXN_OPS)];

/** The first step whose answers differ, with both answers, as a failure message. */
export class Divergence extends Error {
  constructor(
    readonly step: string,
    readonly embedded: Plain,
    readonly etcd: Plain,
    sequence: Sequence,
  ) {
    const show = (value: Plain) => JSON.stringify(value, null, 2).replaceAll('\n', '\n    ');
    super(
      [
        `the embedded server and etcd answer differently at ${step}`,
        `  first difference at ${firstDifference(embedded, etcd)}`,
        `  embedded: ${show(embedded)}`,
        `  etcd:     ${show(etcd)}`,
        `  the sequence that ran:${sequence.toString().trimEnd()}`,
      ].join('\n'),
    );
    this.name = 'Divergence';
  }
}

/** Runs `sequence` on both servers; resolves when every answer and the final state agree. */
export async function runSequence(sequence: Sequence, pool: EtcdPool): Promise<void> {
  const etcd = await pool.take();
  // The embedded server answers as the version of the etcd it is compared with.
  const embedded = await EmbeddedEtcd.start({
    maxTxnOps: MAX_TXN_OPS,
    minLeaseTtl: 1,
    etcdVersion: parseEtcdVersion(etcd.version),
  });
  const clients = [new RawClient(embedded.endpoint), new RawClient(etcd.endpoint)] as const;
  try {
    const ours = new Participant('embedded', embedded.endpoint, clients[0]);
    const theirs = new Participant('etcd', etcd.endpoint, clients[1]);
    const plain = (outcome: Outcome | object, participant: Participant): Plain =>
      normalise(outcome, { picked: participant.picked });
    for (const [index, op] of sequence.operations.entries()) {
      const [a, b] = await Promise.all([ours.apply(op), theirs.apply(op)]);
      const [left, right] = [plain(a, ours), plain(b, theirs)];
      if (op.type === 'time-to-live') reconcileRemainingTtl(responseOf(left), responseOf(right));
      if (!isDeepStrictEqual(left, right)) {
        const step = `step ${index + 1} of ${sequence.operations.length}: ${describeOperation(op)}`;
        // Later steps did not run: the report shows the sequence up to this one.
        throw new Divergence(
          step,
          left,
          right,
          new Sequence(sequence.operations.slice(0, index + 1)),
        );
      }
    }
    const [a, b] = await Promise.all([ours.finalState(), theirs.finalState()]);
    for (const part of ['keys', 'hashKV', 'leases', 'history'] as const) {
      const [left, right] = [plain(a[part], ours), plain(b[part], theirs)];
      if (!isDeepStrictEqual(left, right)) {
        throw new Divergence(`the final state (${part})`, left, right, sequence);
      }
    }
  } finally {
    for (const client of clients) client.close();
    await embedded.stop();
    pool.release(etcd);
  }
}

function responseOf(outcome: Plain): Plain {
  return typeof outcome === 'object' && outcome !== null && !Array.isArray(outcome)
    ? (outcome.response ?? null)
    : null;
}
