// Moving money between accounts with software transactional memory (runStm).
//
//   npm run example -- stm-bank-transfer [--endpoints http://127.0.0.1:2379] [--transfers 200]
//
// Eight tellers move random amounts between five accounts at the same time. Each transfer reads two
// balances and writes both in one runStm call: its writes commit in ONE etcd txn that applies only
// if what it read is still current, otherwise it runs again on fresh values. However the transfers
// interleave, no money is created or lost and no balance goes negative.
import { runStm } from '@etcdkit/recipes';
import { commandLine, connect, ENDPOINTS_FLAG, numberFlag } from './support.js';

const ACCOUNTS = ['alice', 'bob', 'carol', 'dave', 'erin'];
const TELLERS = 8;
const flags = commandLine('stm-bank-transfer', { ...ENDPOINTS_FLAG, transfers: 'count' });
const TRANSFERS = numberFlag('stm-bank-transfer', 'transfers', flags.transfers, 200);
const key = (name: string) => `bank/accounts/${name}`;

const { etcd, close } = await connect(flags.endpoints);
try {
  for (const name of ACCOUNTS) await etcd.put(key(name), '1000');
  const before = ACCOUNTS.length * 1000;

  let retries = 0;
  let moved = 0;
  const next = { transfer: 0 };
  const teller = async (): Promise<void> => {
    while (next.transfer < TRANSFERS) {
      next.transfer++;
      const from = ACCOUNTS[Math.floor(Math.random() * ACCOUNTS.length)] ?? 'alice';
      const to = ACCOUNTS.filter((a) => a !== from)[Math.floor(Math.random() * 4)] ?? 'bob';
      const wanted = 1 + Math.floor(Math.random() * 300);
      const result = await runStm(
        etcd,
        async (stm) => {
          const fromBalance = Number((await stm.get(key(from))) ?? '0');
          const toBalance = Number((await stm.get(key(to))) ?? '0');
          const amount = Math.min(wanted, fromBalance); // never overdraw
          stm.put(key(from), String(fromBalance - amount));
          stm.put(key(to), String(toBalance + amount));
          return amount;
        },
        { isolation: 'serializable-snapshot', maxRetries: 50 },
      );
      retries += result.attempts - 1;
      moved += result.value;
    }
  };
  await Promise.all(Array.from({ length: TELLERS }, teller));

  const balances: string[] = [];
  let after = 0;
  for (const name of ACCOUNTS) {
    const balance = Number((await etcd.get(key(name)))?.text());
    if (balance < 0) process.exitCode = 1;
    after += balance;
    balances.push(`${name} ${balance}`);
  }
  console.log(
    `${TRANSFERS} transfers by ${TELLERS} tellers, ${moved} moved, ${retries} conflicts retried`,
  );
  console.log(`balances: ${balances.join(', ')}`);
  console.log(`total before ${before}, after ${after}`);
  if (after !== before) process.exitCode = 1;
  else console.log('stm-bank-transfer OK: the total is preserved');
  await etcd.delete({ prefix: 'bank/' });
} finally {
  await close();
}
