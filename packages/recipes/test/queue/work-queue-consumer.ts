// A work queue consumer in a process of its own, for the kill tests: it claims and acks `normal`
// items, then goes through one more item up to `step` and stops there, waiting to be killed with
// SIGKILL. Arguments: endpoint, queue prefix, step, normal. Prints one line per event:
// `ready`, `acked <id> <revision>`, and `at <step>` once stopped.
import { Etcd } from '@etcdkit/client';
import { SessionExpiredError } from '../../src/errors.js';
import { type WorkItem, WorkQueue } from '../../src/queue/work-queue.js';
import { Session } from '../../src/session/session.js';

const [endpoint, prefix, step, normal] = process.argv.slice(2);
if (!endpoint || !prefix || !step || !normal) throw new Error('usage: endpoint prefix step normal');

const etcd = new Etcd({ endpoints: [endpoint] });
let session = await Session.create(etcd, { ttl: 3 });
const queue = new WorkQueue(etcd, prefix, { maxAttempts: 100 });
const say = (line: string) => process.stdout.write(`${line}\n`);
const stop = (): Promise<never> => {
  say(`at ${step}`);
  return new Promise(() => {});
};
/** Claims an item; a session lost while waiting (a starved keepalive) is replaced, as a service would. */
async function claim(): Promise<WorkItem> {
  for (;;) {
    try {
      return await queue.claim(session);
    } catch (error) {
      if (!(error instanceof SessionExpiredError)) throw error;
      session = await Session.create(etcd, { ttl: 3 });
    }
  }
}
say('ready');
for (let i = 0; ; i++) {
  const last = i === Number(normal);
  if (last && step === 'claiming') {
    void queue.claim(session).catch(() => {});
    await stop();
  }
  const item = await claim();
  if (last && step === 'claimed') await stop();
  await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
  if (last && step === 'working') await stop();
  const ack = queue.ack(item);
  if (last && step === 'acking') {
    ack.catch(() => {});
    await stop();
  }
  say(`acked ${item.id} ${(await ack).revision}`);
  if (last && step === 'acked') await stop();
}
