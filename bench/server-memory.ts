// Memory per key and per key revision of the embedded server beside real etcd, in one run, with the
// put, get, range and watch speed of each (issue 28.1). Each backend runs on a fresh server:
// - keys: 200,000 keys of 100 B values written through the etcdkit client, 64 in flight; the
//   server's RSS and heap growth divided by the keys, then gets, 1000-key ranges, watched puts, a
//   watch from the first key's revision (catch-up from history), HashKV and a snapshot;
// - revisions: 10,000 keys written 20 times each (no compaction); growth per revision.
// The embedded server runs in a child process (memory.ts) and is measured after a full GC; a real
// etcd (3.4 on PATH, 3.5 at /opt/etcdkit/etcd-3.5 when present) by its VmRSS and, for heap, Go's
// go_memstats_heap_inuse_bytes from /metrics (no GC is forced there, so its heap includes garbage
// not collected yet). The order of the backends rotates every round; the table gives medians over
// the rounds, and the ratio to etcd 3.4 as the median of the rounds' ratios.
// ETCDKIT_BENCH_SERVER_MEMORY_KEYS / _ROUNDS change the sizes; ETCDKIT_BENCH_SERVER_BEFORE names
// another build's server module (e.g. an older commit's worktree) to measure beside this one.
import { existsSync, readFileSync } from 'node:fs';
import { Etcd } from '../packages/client/src/etcd.js';
import { startEtcd } from '../testkit/src/etcd-process.js';
import { ServerProcess } from './memory.js';
import { median, ratio } from './report.js';

const KEYS = Number(process.env.ETCDKIT_BENCH_SERVER_MEMORY_KEYS ?? 200_000);
const REVISION_KEYS = KEYS / 20;
const REVISIONS_PER_KEY = 20;
const ROUNDS = Number(process.env.ETCDKIT_BENCH_SERVER_MEMORY_ROUNDS ?? 3);
const IN_FLIGHT = 64;
const VALUE = 'v'.repeat(100);
const GETS = 20_000;
const RANGES = 100;
const RANGE_KEYS = 1000;
const WATCHED_PUTS = 20_000;
const ETCD_35 = '/opt/etcdkit/etcd-3.5/usr/bin/etcd';
const BEFORE = process.env.ETCDKIT_BENCH_SERVER_BEFORE;

/** A running server and how to read its memory. */
interface Target {
  readonly endpoints: string[];
  memory(): Promise<{ rss: number; heapUsed: number }>;
  stop(): Promise<void>;
}

interface Backend {
  readonly name: string;
  start(): Promise<Target>;
}

function embedded(name: string, serverModule?: string): Backend {
  return {
    name,
    async start() {
      const server = await ServerProcess.start(serverModule);
      return {
        endpoints: server.endpoints,
        memory: () => server.stats(),
        stop: () => server.stop(),
      };
    },
  };
}

function realEtcd(name: string, binary: string): Backend {
  return {
    name,
    async start() {
      const etcd = await startEtcd({ binary });
      return {
        endpoints: [...etcd.endpoints],
        async memory() {
          // Let the last writes' garbage and the backend's batch commit (100 ms) settle.
          await new Promise((resolve) => setTimeout(resolve, 1000));
          const status = readFileSync(`/proc/${etcd.pid}/status`, 'utf8');
          const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) * 1024;
          const metrics = await (await fetch(`${etcd.endpoint}/metrics`)).text();
          const heapUsed = Number(/^go_memstats_heap_inuse_bytes (\S+)$/m.exec(metrics)?.[1]);
          return { rss, heapUsed };
        },
        stop: () => etcd.stop(),
      };
    },
  };
}

/** Runs `op(0..total-1)` with IN_FLIGHT calls at once; resolves with the wall time in ms. */
async function run(total: number, op: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      for (let i = next++; i < total; i = next++) await op(i);
    }),
  );
  return performance.now() - started;
}

const perSecond = (count: number, ms: number) => (count * 1000) / ms;

interface Sample {
  rssPerItem: number;
  heapPerItem: number;
  putsPerSecond: number;
  getsPerSecond?: number;
  rangesPerSecond?: number;
  watchEventsPerSecond?: number;
  catchUpEventsPerSecond?: number;
  hashedPerSecond?: number;
  snapshottedPerSecond?: number;
}

/** Ms for a watcher from `startRevision` on `key/` to receive `count` events from history. */
async function timeCatchUp(etcd: Etcd, startRevision: bigint, count: number): Promise<number> {
  const started = performance.now();
  const watcher = etcd.watch({ prefix: 'key/', startRevision });
  let seen = 0;
  await new Promise<void>((resolve) =>
    watcher.on('batch', (batch) => {
      seen += batch.events.length;
      if (seen >= count) resolve();
    }),
  );
  const ms = performance.now() - started;
  await watcher.close();
  return ms;
}

/** One backend, one scenario, on a fresh server. */
async function sample(backend: Backend, scenario: 'keys' | 'revisions'): Promise<Sample> {
  const target = await backend.start();
  const etcd = new Etcd({ endpoints: target.endpoints });
  try {
    await run(1000, (i) => etcd.put(`warm/${i}`, VALUE));
    await etcd.get('warm/0');
    const before = await target.memory();
    const items = scenario === 'keys' ? KEYS : REVISION_KEYS * REVISIONS_PER_KEY;
    const key = (i: number) => (scenario === 'keys' ? `key/${i}` : `key/${i % REVISION_KEYS}`);
    const putMs = await run(items, (i) => etcd.put(key(i), VALUE));
    const after = await target.memory();
    const result: Sample = {
      rssPerItem: (after.rss - before.rss) / items,
      heapPerItem: (after.heapUsed - before.heapUsed) / items,
      putsPerSecond: perSecond(items, putMs),
    };
    if (scenario === 'revisions') return result;
    const getMs = await run(GETS, (i) => etcd.get(key((i * 7919) % KEYS)));
    const rangeMs = await run(RANGES, (i) =>
      etcd.range({ key: key(i * 100), end: 'key0', limit: RANGE_KEYS }),
    );
    const watcher = etcd.watch({ prefix: 'watched/' });
    await watcher.ready();
    let seen = 0;
    const all = new Promise<void>((resolve) =>
      watcher.on('batch', (batch) => {
        seen += batch.events.length;
        if (seen >= WATCHED_PUTS) resolve();
      }),
    );
    const started = performance.now();
    await run(WATCHED_PUTS, (i) => etcd.put(`watched/${i}`, VALUE));
    await all;
    const watchMs = performance.now() - started;
    await watcher.close();
    // Catch-up: a watcher from the first key's revision (1000 warm-up puts after revision 1)
    // reads every key's put from history.
    const catchUpMs = await timeCatchUp(etcd, 1002n, KEYS);
    const hashStarted = performance.now();
    await etcd.maintenance.hashKV();
    const hashMs = performance.now() - hashStarted;
    const snapshotStarted = performance.now();
    for await (const _ of etcd.maintenance.snapshot()) {
      // Only the time to stream it whole.
    }
    const snapshotMs = performance.now() - snapshotStarted;
    const changes = items + 1000 + WATCHED_PUTS;
    return {
      ...result,
      getsPerSecond: perSecond(GETS, getMs),
      rangesPerSecond: perSecond(RANGES, rangeMs),
      watchEventsPerSecond: perSecond(WATCHED_PUTS, watchMs),
      catchUpEventsPerSecond: perSecond(KEYS, catchUpMs),
      hashedPerSecond: perSecond(changes, hashMs),
      snapshottedPerSecond: perSecond(changes, snapshotMs),
    };
  } finally {
    await etcd.close();
    await target.stop();
  }
}

const whole = (n: number | undefined) =>
  n === undefined || Number.isNaN(n) ? '' : Math.round(n).toLocaleString('en-US');

/** The server memory suite: see the header. */
export const serverMemorySuite = {
  name: 'server-memory',
  description: `server RSS and heap growth per key (${KEYS.toLocaleString('en-US')} keys of 100 B, 64 puts in flight) and per key revision (${REVISION_KEYS.toLocaleString('en-US')} keys x ${REVISIONS_PER_KEY}, no compaction), with puts/s, gets/s, ${RANGE_KEYS}-key ranges/s, watched puts (events/s), a watch catching up on every key from history (events/s), HashKV and a streamed snapshot (changes/s), embedded server (in memory) vs real etcd; medians of ${ROUNDS} rounds, the backends' order rotated every round; the ratio is the median of the rounds' ratios to etcd 3.4`,
  async report(): Promise<Array<Record<string, string | number>>> {
    const backends: Backend[] = [embedded('etcdkit-server')];
    if (BEFORE !== undefined) backends.push(embedded('etcdkit-server (before)', BEFORE));
    backends.push(realEtcd('etcd 3.4', '/usr/bin/etcd'));
    if (existsSync(ETCD_35)) backends.push(realEtcd('etcd 3.5', ETCD_35));
    const rows: Array<Record<string, string | number>> = [];
    for (const scenario of ['keys', 'revisions'] as const) {
      const samples = new Map<string, Sample[]>(backends.map((b) => [b.name, []]));
      for (let round = 0; round < ROUNDS; round++) {
        const order = backends.map((_, i) => backends[(i + round) % backends.length]!);
        for (const backend of order)
          samples.get(backend.name)!.push(await sample(backend, scenario));
      }
      const reference = samples.get('etcd 3.4')!;
      for (const backend of backends) {
        const taken = samples.get(backend.name)!;
        const pick = (f: (s: Sample) => number | undefined) =>
          taken.some((s) => f(s) === undefined) ? undefined : median(taken.map((s) => f(s)!));
        const ratios = taken.map((s, i) => s.rssPerItem / reference[i]!.rssPerItem);
        rows.push({
          server: backend.name,
          measured: scenario === 'keys' ? 'per key' : 'per key revision',
          'RSS B': whole(pick((s) => s.rssPerItem)),
          'RSS / etcd 3.4': ratio(median(ratios), 1),
          'heap B': whole(pick((s) => s.heapPerItem)),
          'puts/s': whole(pick((s) => s.putsPerSecond)),
          'gets/s': whole(pick((s) => s.getsPerSecond)),
          [`${RANGE_KEYS}-key ranges/s`]: whole(pick((s) => s.rangesPerSecond)),
          'watched puts, events/s': whole(pick((s) => s.watchEventsPerSecond)),
          'watch catch-up, events/s': whole(pick((s) => s.catchUpEventsPerSecond)),
          'HashKV, changes/s': whole(pick((s) => s.hashedPerSecond)),
          'snapshot, changes/s': whole(pick((s) => s.snapshottedPerSecond)),
        });
      }
    }
    return rows;
  },
};
