// The child process of the memory benchmarks (memory.ts): an in-memory EmbeddedEtcd that sends
// its endpoints to the parent, then answers each message with its memory after a full GC.
import { collector, type ServerStats, used } from './memory.js';

type ServerModule = typeof import('../packages/server-embedded/src/index.js');
// ETCDKIT_BENCH_SERVER_MODULE: another build of the server (see ServerProcess.start).
const { EmbeddedEtcd }: ServerModule = await import(
  process.env.ETCDKIT_BENCH_SERVER_MODULE ?? '../packages/server-embedded/src/index.js'
);
const gc = collector();
const server = await EmbeddedEtcd.start();

function stats(): ServerStats {
  gc();
  // The expiry queue is private to the lease table; its size tells stale entries apart.
  const expiries = (server.leases as unknown as { expiries?: { size: number } }).expiries;
  return {
    used: used(),
    heapUsed: process.memoryUsage().heapUsed,
    rss: process.memoryUsage().rss,
    leases: server.leases.size,
    expiryEntries: expiries?.size ?? 0,
    watchers: server.watchable.size,
  };
}

process.on('message', (message: { id: number }) => {
  process.send?.({ id: message.id, stats: stats() });
});
process.on('SIGTERM', () => {
  void server.stop().finally(() => process.exit(0));
});
// The parent went away: nothing is left to measure for.
process.on('disconnect', () => process.exit(0));
process.send?.({ endpoints: [...server.endpoints] });
