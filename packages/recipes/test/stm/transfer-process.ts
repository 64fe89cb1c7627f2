// STM transfers in a process of their own, for the contention-across-processes test. Arguments:
// endpoint, key prefix, transfers, afterConflicts. Prints `ready`, waits for a line on stdin, then
// runs the transfers one after the other (even ones move 1 from a to b, odd ones 2 from b to a)
// with stmKeyLocks on its own session, printing `attempts <n>` after each, then `done`.
import { createInterface } from 'node:readline';
import { Etcd } from '@etcdkit/client';
import { stmKeyLocks } from '../../src/lock/stm-key-locks.js';
import { Session } from '../../src/session/session.js';
import { runStm } from '../../src/stm/stm.js';

const [endpoint, prefix, transfers, afterConflicts] = process.argv.slice(2);
if (!endpoint || !prefix || !transfers || !afterConflicts) {
  throw new Error('usage: endpoint prefix transfers afterConflicts');
}
const etcd = new Etcd({ endpoints: [endpoint] });
const session = await Session.create(etcd, { ttl: 30 });
const locks = stmKeyLocks(session, `${prefix}locks`);
const say = (line: string) => process.stdout.write(`${line}\n`);
say('ready');
const input = createInterface({ input: process.stdin });
await new Promise((resolve) => input.once('line', resolve));
// An open stdin would keep the process alive after its transfers.
input.close();
process.stdin.destroy();
for (let i = 0; i < Number(transfers); i++) {
  const [from, to, amount] = i % 2 === 0 ? ['a', 'b', 1] : ['b', 'a', 2];
  const { attempts } = await runStm(
    etcd,
    async (stm) => {
      const source = Number(await stm.get(`${prefix}${from}`));
      const target = Number(await stm.get(`${prefix}${to}`));
      stm.put(`${prefix}${from}`, String(source - amount));
      stm.put(`${prefix}${to}`, String(target + amount));
    },
    { contention: { locks, afterConflicts: Number(afterConflicts) } },
  );
  say(`attempts ${attempts}`);
}
await session.close();
await etcd.close();
say('done');
