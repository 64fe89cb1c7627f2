// A distributed lock that actually protects something: the fencing token.
//
//   npm run example -- lock-with-fencing [--endpoints http://127.0.0.1:2379]
//
// Two services share an "inventory" kept in etcd. Each takes the Mutex `locks/inventory` before
// changing it. A lease-based lock alone is not enough (Jepsen, etcd 3.4.3): a holder paused past its
// lease wakes up still believing it holds the lock. So every write carries the lock's fencing token
// (the create revision of its lock key, strictly increasing across holders), and the resource
// refuses a token lower than the highest it accepted:
// - state kept in etcd: `lock.txn()` puts the ownership compare in the same txn as the write;
// - state kept elsewhere: `FencedResource` (or your own store) remembers the highest token.
// Here service A's lease is lost while it is "paused"; B takes over; A's late writes are refused.
import { op } from '@etcdkit/client';
import {
  FencedResource,
  LockLostError,
  Mutex,
  Session,
  StaleFencingTokenError,
} from '@etcdkit/recipes';
import { commandLine, connect, ENDPOINTS_FLAG } from './support.js';

const { etcd, server, close } = await connect(
  commandLine('lock-with-fencing', ENDPOINTS_FLAG).endpoints,
);
try {
  const inventory = new FencedResource(etcd, 'inventory/widgets');
  await inventory.put(0n, '100');

  // Service A takes the lock and is paused in its critical section.
  const sessionA = await Session.create(etcd, { ttl: 10 });
  const lockA = await new Mutex(sessionA, 'locks/inventory').lock();
  console.log(`A holds the lock with fencing token ${lockA.fencingToken}`);

  // A's lease ends while it is paused (here: expired by the embedded server's fault injector, or
  // revoked from outside on a real etcd). Its lock key goes with it.
  if (server) server.faults.expireLease(sessionA.leaseId);
  else await etcd.lease.revoke(sessionA.leaseId);

  // Service B gets the lock and writes with its (higher) token.
  const sessionB = await Session.create(etcd, { ttl: 10 });
  await new Mutex(sessionB, 'locks/inventory').withLock(async (lockB) => {
    console.log(`B holds the lock with fencing token ${lockB.fencingToken}`);
    await inventory.update(lockB.fencingToken, (kv) => String(Number(kv?.text() ?? '0') - 1));
    await lockB.txn().then(op.put('inventory/last-writer', 'B')).commit();
    console.log('B: inventory updated to 99');
  });

  // A wakes up. Its lock.signal has fired (a careful service checks it before acting), but even a
  // service that does not check is stopped by the fence.
  console.log(`A wakes up; lock.signal aborted: ${lockA.signal.aborted}`);
  try {
    await inventory.update(lockA.fencingToken, (kv) => String(Number(kv?.text() ?? '0') - 1));
    throw new Error('the stale write was accepted');
  } catch (error) {
    if (!(error instanceof StaleFencingTokenError)) throw error;
    console.log(
      `A's write REJECTED: token ${error.token} < highest accepted ${error.highestToken}`,
    );
  }
  try {
    await lockA.txn().then(op.put('inventory/last-writer', 'A')).commit();
    throw new Error('the guarded txn applied');
  } catch (error) {
    if (!(error instanceof LockLostError)) throw error;
    console.log("A's guarded txn REJECTED: the lock is lost, nothing applied");
  }

  const final = await inventory.read();
  const lastWriter = await etcd.get('inventory/last-writer');
  console.log(`final: inventory ${final.kv?.text()}, last writer ${lastWriter?.text()}`);
  if (final.kv?.text() !== '99' || lastWriter?.text() !== 'B') process.exitCode = 1;
  else console.log('lock-with-fencing OK');
  await sessionA.close();
  await sessionB.close();
  await etcd.delete({ prefix: 'inventory/' });
} finally {
  await close();
}
