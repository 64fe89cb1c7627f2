// Writes to an embedded server with a data dir: group commit (changes that arrive together share one
// fsync, the default) against one fsync per write, for a few numbers of concurrent writers, with
// the in-memory server as the ceiling. Then the log alone (no gRPC), where the fsyncs per record
// can be counted. Every write is acknowledged only once it is on disk in both durable modes.
// ETCDKIT_BENCH_PUTS (default 2000) sets the writes per row. Reports numbers; asserts nothing.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd } from '../packages/client/src/etcd.js';
import { EmbeddedEtcd } from '../packages/server-embedded/src/index.js';
import { encodeRecord } from '../packages/server-embedded/src/persistence/log-format.js';
import { LogWriter } from '../packages/server-embedded/src/persistence/log-writer.js';

const PUTS = Number(process.env.ETCDKIT_BENCH_PUTS ?? 2000);
const CONCURRENCY = [1, 16, 64];
type Mode = 'in memory' | 'group commit' | 'fsync per write';

/** `writers` loops sharing `total` operations; resolves with the elapsed ms. */
async function run(total: number, writers: number, op: (i: number) => Promise<unknown>) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async () => {
      for (let i = next++; i < total; i = next++) await op(i);
    }),
  );
  return performance.now() - started;
}

async function serverRow(mode: Mode, writers: number): Promise<Record<string, string | number>> {
  const dir = await mkdtemp(join(tmpdir(), 'etcdkit-bench-'));
  const server = await EmbeddedEtcd.start(
    mode === 'in memory' ? {} : { dataDir: dir, groupCommit: mode === 'group commit' },
  );
  const etcd = new Etcd({ endpoints: [...server.endpoints] });
  try {
    const value = 'v'.repeat(100);
    await run(200, writers, (i) => etcd.put(`warm/${i}`, value));
    const ms = await run(PUTS, writers, (i) => etcd.put(`bench/${i}`, value));
    return {
      mode,
      writers,
      'puts/s': Math.round((PUTS / ms) * 1000),
      'mean latency (ms)': ((ms / PUTS) * writers).toFixed(2),
    };
  } finally {
    await etcd.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function logRow(groupCommit: boolean, writers: number) {
  const dir = await mkdtemp(join(tmpdir(), 'etcdkit-bench-'));
  const log = await LogWriter.open({ directory: dir, groupCommit }, 0, undefined);
  try {
    const payload = new Uint8Array(128);
    const ms = await run(PUTS, writers, async () => {
      const sequence = log.lastSequence + 1;
      log.append(sequence, encodeRecord(sequence, 'kv', payload));
      await log.barrier();
    });
    const { records, flushes } = log.stats;
    return {
      mode: groupCommit ? 'group commit' : 'fsync per write',
      writers,
      'records/s': Math.round((PUTS / ms) * 1000),
      'records per fsync': (records / flushes).toFixed(1),
    };
  } finally {
    await log.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The data dir suite: server puts/s per mode and writers, then the log alone. */
export const dataDirSuite = {
  name: 'data-dir',
  description: `durable writes: group commit vs one fsync per write (${PUTS} writes per row)`,
  async report(): Promise<Array<Record<string, string | number>>> {
    const rows: Array<Record<string, string | number>> = [];
    for (const writers of CONCURRENCY) {
      for (const mode of ['in memory', 'group commit', 'fsync per write'] as const) {
        rows.push({ level: 'server (etcdkit client)', ...(await serverRow(mode, writers)) });
      }
    }
    for (const writers of CONCURRENCY) {
      for (const groupCommit of [true, false]) {
        rows.push({ level: 'log alone', ...(await logRow(groupCommit, writers)) });
      }
    }
    return rows;
  },
};
