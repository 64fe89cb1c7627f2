// Memory of idle watchers: the client-side heap each watcher costs once it is created on the server
// and nothing happens. N watchers on one client (one shared Watch stream), each on its own key.
// Needs a server: ETCDKIT_ENDPOINTS (comma list), else a real etcd binary (ETCDKIT_ETCD_BIN or
// `etcd` on PATH) that the suite starts and stops. Reports numbers; asserts nothing.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Etcd } from '../packages/client/src/etcd.js';
import { startEtcd } from '../testkit/src/etcd-process.js';

/** The counts measured; ETCDKIT_BENCH_WATCHERS (comma list) overrides them. */
const COUNTS = (process.env.ETCDKIT_BENCH_WATCHERS ?? '1000,10000')
  .split(',')
  .map((n) => Number(n.trim()))
  .filter((n) => Number.isSafeInteger(n) && n > 0);

function collector(): () => void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  return () => {
    for (let i = 0; i < 3; i++) gc();
  };
}

function used(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

async function measure(endpoints: string[], count: number, gc: () => void) {
  const etcd = new Etcd({ endpoints });
  try {
    // Open the stream and warm the code paths, so only the watchers themselves are counted.
    const warm = etcd.watch({ key: 'bench/warm' });
    await warm.ready();
    gc();
    const before = used();
    const watchers = Array.from({ length: count }, (_, i) =>
      etcd.watch({ key: `bench/${count}/${i}` }),
    );
    const started = performance.now();
    await Promise.all(watchers.map((w) => w.ready()));
    const createMs = performance.now() - started;
    gc();
    const after = used();
    await Promise.all([warm, ...watchers].map((w) => w.close()));
    return {
      watchers: count,
      'heap + buffers delta (KiB)': Math.round((after - before) / 1024),
      'bytes per idle watcher': Math.round((after - before) / count),
      'create all (ms)': Math.round(createMs),
    };
  } finally {
    await etcd.close();
  }
}

/** The watch memory suite: a table of heap bytes per idle watcher, for {@link COUNTS} watchers. */
export const watchMemorySuite = {
  name: 'watch-memory',
  description: 'heap bytes per idle watcher (one client, one shared stream)',
  async report(): Promise<Array<Record<string, number>>> {
    const gc = collector();
    const external = process.env.ETCDKIT_ENDPOINTS?.split(',').map((e) => e.trim());
    const server = external ? undefined : await startEtcd();
    const endpoints = external ?? [...(server?.endpoints ?? [])];
    try {
      const rows: Array<Record<string, number>> = [];
      for (const count of COUNTS) rows.push(await measure(endpoints, count, gc));
      return rows;
    } finally {
      await server?.stop();
    }
  },
};
