// Memory of lock waiters, client and server apart: N callers blocked behind a held lock on an
// EmbeddedEtcd (in a child process, see memory.ts), measured once every waiter waits (the server
// has a watcher for each). Two ways to wait, with the same key layout:
// - recipes' Mutex.lock(): the client waits with one range watch over the keys ahead of its own and
//   its own key (one watcher per waiter on the client's shared Watch stream; its own key's delete
//   fails the wait at once). Its sessions (one lease each, kept alive) are created before the first
//   measure, so they are not counted here (see lease-memory).
// - etcd.lock.lock(): the server's Lock service (etcd's v3lock) waits for the client, which keeps
//   one gRPC call open per waiter, with two watchers on the server: the key just ahead, and its own.
//   Its leases are granted before the first measure too.
// The `etcd3` npm package has no waiting lock (its Lock.acquire fails at once when the lock is
// held), so it has no row. ETCDKIT_BENCH_WAITERS (comma list, default 1000) sets N. Reports
// numbers; asserts nothing.
import { setMaxListeners } from 'node:events';
import { Etcd, type Lease } from '../packages/client/src/index.js';
import { Mutex, Session } from '../packages/recipes/src/index.js';
import { collector, ServerProcess, used } from './memory.js';

const COUNTS = (process.env.ETCDKIT_BENCH_WAITERS ?? '1000')
  .split(',')
  .map((n) => Number(n.trim()))
  .filter((n) => Number.isSafeInteger(n) && n > 0);
/** Waiters on another lock, before the first measure: they warm the streams and code paths. */
const WARM = 100;
/** Calls in flight at once while setting up. */
const BATCH = 250;

type Way = 'recipes Mutex.lock()' | 'etcd.lock.lock() (v3lock)';

/** Runs `make(i)` for i < count, BATCH at a time; resolves with the results in order. */
async function batched<T>(count: number, make: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let i = 0; i < count; i += BATCH) {
    const size = Math.min(BATCH, count - i);
    results.push(...(await Promise.all(Array.from({ length: size }, (_, j) => make(i + j)))));
  }
  return results;
}

/** One way of waiting: `prepare` makes what a waiter needs, `wait` starts waiting on a lock. */
interface Waiters {
  /** Server watchers a waiting call has (Mutex: one range watch over the key ahead and its own). */
  readonly watchersPerWaiter: number;
  prepare(count: number): Promise<void>;
  /** Starts waiter `i` of the prepared ones on lock `name`; the promise settles when it stops. */
  wait(name: string, i: number, signal: AbortSignal): Promise<unknown>;
}

function mutexWaiters(etcd: Etcd): Waiters {
  let sessions: Session[] = [];
  return {
    watchersPerWaiter: 1,
    async prepare(count) {
      sessions = await batched(count, () => Session.create(etcd, { ttl: 600 }));
    },
    wait: (name, i, signal) => new Mutex(sessions[i] as Session, name).lock({ signal }),
  };
}

function v3lockWaiters(etcd: Etcd): Waiters {
  let leases: Lease[] = [];
  return {
    watchersPerWaiter: 2,
    async prepare(count) {
      leases = await batched(count, () => etcd.lease.grant(600));
    },
    wait: (name, i, signal) => etcd.lock.lock(name, { lease: leases[i], signal }),
  };
}

async function measure(way: Way, count: number, gc: () => void) {
  const server = await ServerProcess.start();
  const etcd = new Etcd({ endpoints: server.endpoints });
  const stop = new AbortController();
  // Every waiter listens on this one signal.
  setMaxListeners(0, stop.signal);
  const waiting: Array<Promise<unknown>> = [];
  const start = (name: string, i: number) => {
    const settled = waiters.wait(name, i, stop.signal).catch(() => undefined);
    waiting.push(settled);
    return settled;
  };
  const waiters = way === 'recipes Mutex.lock()' ? mutexWaiters(etcd) : v3lockWaiters(etcd);
  try {
    // Holders of both locks (index 0 and 1), the warm waiters, then the sessions or leases of the
    // measured ones: all there before the first measure.
    await waiters.prepare(2 + WARM + count);
    await start('bench/warm', 0);
    await start('bench/lock', 1);
    for (let i = 0; i < WARM; i++) start('bench/warm', 2 + i);
    await server.until((stats) => stats.watchers >= WARM * waiters.watchersPerWaiter);
    gc();
    const clientBefore = used();
    const serverBefore = await server.stats();
    const started = performance.now();
    for (let i = 0; i < count; i++) start('bench/lock', 2 + WARM + i);
    await server.until(
      (stats) => stats.watchers >= serverBefore.watchers + count * waiters.watchersPerWaiter,
    );
    const waitMs = performance.now() - started;
    // The server creates a watcher before it answers; let the last answers reach the client.
    await new Promise((resolve) => setTimeout(resolve, 500));
    gc();
    const clientAfter = used();
    const serverAfter = await server.stats();
    return {
      way,
      waiters: count,
      'client bytes per waiter': Math.round((clientAfter - clientBefore) / count),
      'server bytes per waiter': Math.round((serverAfter.used - serverBefore.used) / count),
      'all waiting after (ms)': Math.round(waitMs),
    };
  } finally {
    stop.abort();
    await Promise.all(waiting);
    await etcd.close();
    await server.stop();
  }
}

/** The waiter memory suite: client and server heap bytes per blocked lock call, two ways. */
export const waiterMemorySuite = {
  name: 'waiter-memory',
  description: 'heap bytes per lock waiter blocked behind a holder, client and embedded server',
  async report(): Promise<Array<Record<string, string | number>>> {
    const gc = collector();
    const rows: Array<Record<string, string | number>> = [];
    for (const count of COUNTS) {
      for (const way of ['recipes Mutex.lock()', 'etcd.lock.lock() (v3lock)'] as const) {
        rows.push(await measure(way, count, gc));
      }
    }
    return rows;
  },
};
