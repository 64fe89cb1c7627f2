// A counter every process shares, with no lost update (Curator's DistributedAtomicLong).
//
//   npm run example -- shared-counter [--endpoints http://127.0.0.1:2379] [--workers n]
//
// Several workers, each with its own client, add 1 to `counters/orders` ten times at once. Every
// add is a txn guarded by the revision it read: a lost race is retried with the fresh value, so
// the total is exact. Each add reports the value it wrote and the revision of that write; then a
// compare-and-set only wins when the counter still holds what the caller expected.
import { Etcd } from '@etcdkit/client';
import { SharedCounter } from '@etcdkit/recipes';
import { commandLine, connect, ENDPOINTS_FLAG, numberFlag } from './support.js';

const flags = commandLine('shared-counter', { ...ENDPOINTS_FLAG, workers: 'n' });
const workers = numberFlag('shared-counter', 'workers', flags.workers, 4);
const { etcd, endpoints, close } = await connect(flags.endpoints);
const ADDS = 10;
try {
  await etcd.delete('counters/orders');
  // One client per worker: their adds race at the server as separate processes' would.
  const clients = Array.from({ length: workers }, () => new Etcd({ endpoints: [...endpoints] }));
  const written = await Promise.all(
    clients.map(async (client) => {
      const orders = new SharedCounter(client, 'counters/orders');
      const values: bigint[] = [];
      for (let i = 0; i < ADDS; i++) values.push((await orders.add(1n)).value);
      return values;
    }),
  );
  await Promise.all(clients.map((client) => client.close()));

  const orders = new SharedCounter(etcd, 'counters/orders');
  const { value, revision } = await orders.get();
  // Every value from 1 to the total was written by exactly one add: none lost, none twice.
  const all = written.flat().sort((a, b) => (a < b ? -1 : 1));
  const exact = all.every((v, i) => v === BigInt(i + 1));
  console.log(`${workers} workers x ${ADDS} adds: counter ${value} at revision ${revision}`);
  console.log(`each value 1..${all.length} written by exactly one add: ${exact}`);

  const stale = await orders.compareAndSet(0n, 1000n);
  console.log(`compareAndSet(0 -> 1000): succeeded ${stale.succeeded}, counter ${stale.value}`);
  const fresh = await orders.compareAndSet(value, 1000n);
  console.log(
    `compareAndSet(${value} -> 1000): succeeded ${fresh.succeeded}, counter ${fresh.value}`,
  );

  const ok = value === BigInt(workers * ADDS) && exact && !stale.succeeded && fresh.succeeded;
  if (ok) console.log('shared-counter OK');
  else process.exitCode = 1;
  await etcd.delete('counters/orders');
} finally {
  await close();
}
