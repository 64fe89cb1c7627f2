// Consul's lock-delay on a Mutex: a holder that takes over from a LOST holder waits before acting.
//
//   npm run example -- lock-delay [--endpoints http://127.0.0.1:2379] [--delay ms]
//
// Three takeovers of `locks/report`, each with `lockDelayMs`: after a holder that unlocked, the
// next holder starts at once; after a holder whose lease was lost (it may still be running: a pause,
// a partition), the next holder holds the lock for the delay before its lock() resolves, so the
// lost holder's stragglers stop first; a lock found free is not delayed. Fencing tokens stay the
// guarantee for what holders write (docs/locks-and-fencing.md, "Lock-delay").
import { Mutex, Session } from '@etcdkit/recipes';
import { commandLine, connect, ENDPOINTS_FLAG, numberFlag, sleep } from './support.js';

const flags = commandLine('lock-delay', { ...ENDPOINTS_FLAG, delay: 'ms' });
const delayMs = numberFlag('lock-delay', 'delay', flags.delay, 1500);
const { etcd, server, close } = await connect(flags.endpoints);
try {
  const sessions: Session[] = [];
  /** Takes the lock on a new session once `before` has happened; prints how long it waited. */
  const takeOver = async (who: string, before: () => Promise<void>) => {
    const session = await Session.create(etcd, { ttl: 10 });
    sessions.push(session);
    const mutex = new Mutex(session, 'locks/report');
    const taking = mutex.lock({ lockDelayMs: delayMs });
    // Queued behind the holder first: a lock() that finds the lock free is never delayed.
    while ((await etcd.get(mutex.key)) === undefined) await sleep(10);
    const started = performance.now();
    await before();
    const lock = await taking;
    const waited = performance.now() - started;
    console.log(
      `${who}: holds with token ${lock.fencingToken} ${waited.toFixed(0)} ms after the handover`,
    );
    return { session, lock, waited };
  };

  const a = await takeOver('A (lock was free)', async () => {});
  const b = await takeOver('B (after A unlocked)', () => a.lock.unlock());
  // B's lease is lost while it holds: expired by the fault injector, revoked on a real etcd.
  const c = await takeOver('C (after B was lost)', async () => {
    if (server) server.faults.expireLease(b.session.leaseId);
    else await etcd.lease.revoke(b.session.leaseId);
  });
  await c.lock.unlock();
  for (const session of sessions) await session.close();

  // C waited the delay; A found the lock free and B followed an unlock, so they did not.
  console.log(`C waited at least the ${delayMs} ms delay: ${c.waited >= delayMs}`);
  if (c.waited >= delayMs) console.log('lock-delay OK');
  else process.exitCode = 1;
} finally {
  await close();
}
