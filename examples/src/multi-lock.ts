// Several locks taken all-or-nothing without deadlock (Curator's InterProcessMultiLock).
//
//   npm run example -- multi-lock [--endpoints http://127.0.0.1:2379]
//
// Two services move money between the same two accounts in opposite directions, each needing both
// account locks. Taken one by one in the order each service names them, they could deadlock (each
// holding one, waiting for the other). A MultiLock takes its names in one global order whatever
// the caller's order, so both services finish. Each name has its own fencing token, and every
// write below is fenced by the tokens of both names in the same txn.
import { op } from '@etcdkit/client';
import { MultiLock, Session } from '@etcdkit/recipes';
import { commandLine, connect, ENDPOINTS_FLAG } from './support.js';

const { etcd, close } = await connect(commandLine('multi-lock', ENDPOINTS_FLAG).endpoints);
const ROUNDS = 5;
try {
  await etcd.put('accounts/alice', '100');
  await etcd.put('accounts/bob', '100');

  const service = async (name: string, from: string, to: string) => {
    const session = await Session.create(etcd, { ttl: 10 });
    // Named in this service's own order; taken in the MultiLock's order.
    const accounts = new MultiLock(session, [`locks/${from}`, `locks/${to}`]);
    console.log(`${name} names locks/${from}, locks/${to}; takes ${accounts.names.join(', ')}`);
    for (let round = 1; round <= ROUNDS; round++) {
      await using held = await accounts.lock({ signal: AbortSignal.timeout(10_000) });
      const balance = async (key: string) => Number((await etcd.get(key))?.text());
      const [a, b] = [await balance(`accounts/${from}`), await balance(`accounts/${to}`)];
      // Applied only while this service still holds both locks (both keys' ownership compared).
      const { succeeded } = await etcd
        .txn()
        .if(...held.isOwner())
        .then(op.put(`accounts/${from}`, String(a - 10)), op.put(`accounts/${to}`, String(b + 10)))
        .commit();
      if (!succeeded) throw new Error(`${name}: a lock was lost before the write`);
      const tokens = accounts.names.map((n) => `${n} #${held.fencingToken(n)}`).join(', ');
      console.log(`${name}: moved 10 from ${from} to ${to} holding ${tokens}`);
    }
    await session.close();
  };
  await Promise.all([service('east', 'alice', 'bob'), service('west', 'bob', 'alice')]);

  const total =
    Number((await etcd.get('accounts/alice'))?.text()) +
    Number((await etcd.get('accounts/bob'))?.text());
  console.log(`both services finished ${ROUNDS} rounds; total ${total}`);
  if (total === 200) console.log('multi-lock OK');
  else process.exitCode = 1;
  await etcd.delete({ prefix: 'accounts/' });
} finally {
  await close();
}
