// Memory of kept-alive leases, client and server apart: N leases granted on an EmbeddedEtcd (in a
// child process, see memory.ts) and kept alive, each measured once every lease has had its first
// keep-alive answered. etcdkit keeps every lease of a client alive over ONE LeaseKeepAlive stream;
// the `etcd3` npm package opens one stream per lease, so its rows are also the naive baseline.
// The heaps are measured after a full GC; the TTL (60 s) leaves no second keep-alive inside a row.
// ETCDKIT_BENCH_LEASES (comma list, default 1000,10000) sets N. Reports numbers; asserts nothing.
import { Etcd3, type Lease as Etcd3Lease } from 'etcd3';
import { Etcd } from '../packages/client/src/etcd.js';
import { collector, ServerProcess, used } from './memory.js';

const COUNTS = (process.env.ETCDKIT_BENCH_LEASES ?? '1000,10000')
  .split(',')
  .map((n) => Number(n.trim()))
  .filter((n) => Number.isSafeInteger(n) && n > 0);
const TTL_SECONDS = 60;
/** Grants in flight at once, as a service starting many would pace them. */
const BATCH = 250;

type Client = 'etcdkit' | 'etcd3';

/** One client keeping leases alive. */
interface Keeper {
  /** Grants a lease and keeps it alive; resolves with its handle after its first keep-alive reply. */
  keep(): Promise<unknown>;
  close(): Promise<void>;
}

function etcdkitKeeper(endpoints: string[]): Keeper {
  const etcd = new Etcd({ endpoints });
  return {
    async keep() {
      const lease = await etcd.lease.grant(TTL_SECONDS);
      const answered = new Promise((resolve) => lease.once('keepalive', resolve));
      lease.keepAlive();
      await answered;
      return lease;
    },
    close: () => etcd.close(),
  };
}

function etcd3Keeper(endpoints: string[]): Keeper {
  const etcd = new Etcd3({ hosts: endpoints });
  const leases: Etcd3Lease[] = [];
  return {
    async keep() {
      const lease = etcd.lease(TTL_SECONDS);
      leases.push(lease);
      // etcd3 grants in the constructor and starts the keep-alive loop (its own stream) on its own.
      await new Promise((resolve, reject) => {
        lease.once('keepaliveSucceeded', resolve);
        lease.once('lost', reject);
      });
      return lease;
    },
    async close() {
      // Without this, each lease retries its keep-alive after the client closed, for 2 TTLs.
      for (const lease of leases) lease.release();
      etcd.close();
    },
  };
}

async function measure(client: Client, count: number, gc: () => void) {
  const server = await ServerProcess.start();
  const keeper = (client === 'etcdkit' ? etcdkitKeeper : etcd3Keeper)(server.endpoints);
  try {
    // One batch first, so that the connection, the stream and the code paths are warm.
    const held = await Promise.all(Array.from({ length: BATCH }, () => keeper.keep()));
    gc();
    const clientBefore = used();
    const serverBefore = await server.stats();
    const started = performance.now();
    for (let i = 0; i < count; i += BATCH) {
      const batch = Array.from({ length: Math.min(BATCH, count - i) }, () => keeper.keep());
      held.push(...(await Promise.all(batch)));
    }
    const keepMs = performance.now() - started;
    gc();
    const clientAfter = used();
    const serverAfter = await server.stats();
    if (held.length !== count + BATCH) throw new Error('a lease is missing');
    return {
      client,
      leases: count,
      'keep-alive streams': client === 'etcdkit' ? 1 : count + BATCH,
      'client bytes per lease': Math.round((clientAfter - clientBefore) / count),
      'server bytes per lease': Math.round((serverAfter.used - serverBefore.used) / count),
      'server expiry entries per lease': (
        (serverAfter.expiryEntries - serverBefore.expiryEntries) /
        count
      ).toFixed(1),
      'grant + first keep-alive, all (ms)': Math.round(keepMs),
    };
  } finally {
    await keeper.close();
    await server.stop();
  }
}

/** The lease memory suite: client and server heap bytes per kept-alive lease, etcdkit vs etcd3. */
export const leaseMemorySuite = {
  name: 'lease-memory',
  description: `heap bytes per kept-alive lease, client and embedded server (TTL ${TTL_SECONDS} s)`,
  async report(): Promise<Array<Record<string, string | number>>> {
    const gc = collector();
    const rows: Array<Record<string, string | number>> = [];
    for (const count of COUNTS) {
      for (const client of ['etcdkit', 'etcd3'] as const)
        rows.push(await measure(client, count, gc));
    }
    return rows;
  },
};
