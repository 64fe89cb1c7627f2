// The differential property: random sequences of KV, txn, compaction and lease operations give
// the same answers, step by step, on a fresh embedded server and a fresh real etcd, the embedded
// one answering as that etcd's version. Declared once per real etcd (ETCDKIT_ETCD_BINS lists
// several). A divergence fails with the shrunk sequence and both answers (see docs/testing.md).
import { describeRealEtcd } from '@etcdkit/testkit';
import * as fc from 'fast-check';
import { afterAll, beforeAll, it } from 'vitest';
import { sequence } from './arbitraries.js';
import { EtcdPool } from './etcd-pool.js';
import { DIFFERENTIAL_ETCD_ARGS, runSequence } from './run-sequence.js';

/** A positive integer from the environment, or the default. */
function setting(name: string, fallback: number): number {
  const raw = process.env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new Error(`${name} must be a positive integer, not ${JSON.stringify(raw)}`);
  }
  return value;
}

/** Sequences per run (`ETCDKIT_DIFFERENTIAL_RUNS`). */
const RUNS = setting('ETCDKIT_DIFFERENTIAL_RUNS', 200);
/** Most operations in one sequence (`ETCDKIT_DIFFERENTIAL_LENGTH`). */
const MAX_LENGTH = setting('ETCDKIT_DIFFERENTIAL_LENGTH', 24);
/** Replays a reported failure: the seed and path fast-check printed. */
const SEED = process.env.ETCDKIT_DIFFERENTIAL_SEED?.trim();
const PATH = process.env.ETCDKIT_DIFFERENTIAL_PATH?.trim();
/** Time for the runs and the shrinking of a failure; a run that takes longer fails. */
const TIME_LIMIT_MS = Math.max(600_000, RUNS * 3_000);

describeRealEtcd('differential: random sequences on the embedded server and etcd agree', () => {
  let pool: EtcdPool;
  beforeAll(() => {
    pool = new EtcdPool(DIFFERENTIAL_ETCD_ARGS);
  });
  afterAll(() => pool.close());

  it(
    `${RUNS} sequences of up to ${MAX_LENGTH} operations, every answer and the final state equal (never the txn that crashes etcd: a known difference)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(sequence(MAX_LENGTH), (generated) => runSequence(generated, pool)),
        {
          numRuns: RUNS,
          includeErrorInReport: true,
          ...(SEED === undefined ? {} : { seed: Number(SEED) }),
          ...(PATH === undefined ? {} : { path: PATH }),
          plugins: [fc.interruptAfterTimeLimit(TIME_LIMIT_MS, { failOnInterrupt: true })],
        },
      );
    },
    TIME_LIMIT_MS + 60_000,
  );
});
