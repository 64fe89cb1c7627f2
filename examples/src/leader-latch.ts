// A leadership group whose members are told when they lead (Curator's LeaderLatch).
//
//   npm run example -- leader-latch [--endpoints http://127.0.0.1:2379]
//
// Three nodes join the latch `elections/scheduler`, each on its own session; exactly one leads.
// Each prints its transitions (events `leader` / `notLeader` / `closed`). The leader's lease is
// lost (expired by the embedded server's fault injector, revoked on a real etcd): its latch becomes
// not-leader and closes, since a lost lease cannot come back, and the next node in line leads.
import { LeaderLatch, Session } from '@etcdkit/recipes';
import { commandLine, connect, ENDPOINTS_FLAG } from './support.js';

const { etcd, server, close } = await connect(
  commandLine('leader-latch', ENDPOINTS_FLAG).endpoints,
);
try {
  const nodes = await Promise.all(
    ['node-a', 'node-b', 'node-c'].map(async (name) => {
      const session = await Session.create(etcd, { ttl: 10 });
      const latch = new LeaderLatch(session, 'elections/scheduler', { value: name });
      latch.on('leader', (leadership) =>
        console.log(`${name}: leader (epoch ${leadership.epoch})`),
      );
      latch.on('notLeader', () => console.log(`${name}: not leader`));
      latch.on('closed', (reason) => console.log(`${name}: closed: ${reason.message}`));
      return { name, session, latch: latch.start() };
    }),
  );

  // Whoever leads first: leadership() resolves for exactly one of them.
  const first = await Promise.race(nodes.map((node) => node.latch.leadership().then(() => node)));
  const leading = () => nodes.filter((node) => node.latch.hasLeadership).map((node) => node.name);
  console.log(`leading: ${leading().join(', ')}`);

  // The leader's lease ends as in a partition or a long pause.
  if (server) server.faults.expireLease(first.session.leaseId);
  else await etcd.lease.revoke(first.session.leaseId);
  const others = nodes.filter((node) => node !== first);
  const next = await Promise.race(others.map((node) => node.latch.leadership().then(() => node)));
  // The old leader learns of the loss from its own session, which can come after the server
  // handed the leadership on: fence what a leader writes (leadership.txn(), epoch).
  if (first.latch.state !== 'closed')
    await new Promise((resolve) => first.latch.once('closed', resolve));
  console.log(`after ${first.name}'s lease ended, leading: ${leading().join(', ')}`);
  console.log(`${first.name}'s latch: ${first.latch.state}`);

  const ok = leading().length === 1 && leading()[0] === next.name && first.latch.state === 'closed';
  // The one not leading leaves first, so that closing the leader hands nothing on.
  for (const node of [...others.filter((node) => node !== next), next]) {
    await node.latch.close();
    await node.session.close();
  }
  if (ok) console.log('leader-latch OK');
  else process.exitCode = 1;
} finally {
  await close();
}
