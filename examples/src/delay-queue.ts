// A queue whose items become visible at a given time (Curator's DistributedDelayQueue).
//
//   npm run example -- delay-queue [--endpoints http://127.0.0.1:2379]
//
// Reminders are enqueued out of order with delays of 1.2 s, 0.4 s, 0 and 0.8 s. Two consumers take
// them: each item exactly once, in the order they become visible, and none before its time.
import { DelayQueue } from '@etcdkit/recipes';
import { commandLine, connect, ENDPOINTS_FLAG } from './support.js';

const { etcd, close } = await connect(commandLine('delay-queue', ENDPOINTS_FLAG).endpoints);
try {
  const reminders = new DelayQueue(etcd, 'reminders');
  const started = Date.now();
  const delays = [1200, 400, 0, 800];
  // Times from one start, so slow enqueues do not reorder them.
  for (const ms of delays) await reminders.enqueue(`in ${ms} ms`, { visibleAt: started + ms });
  console.log(`enqueued: ${delays.map((ms) => `in ${ms} ms`).join(', ')}`);

  const taken: string[] = [];
  let early = 0;
  // Both consumers stop waiting once every item is taken.
  const done = new AbortController();
  const consumer = async (name: string) => {
    while (!done.signal.aborted) {
      const kv = await reminders.dequeue({ signal: done.signal }).then(
        (item) => item.kv,
        (error: unknown) => {
          if (done.signal.aborted) return undefined; // the other consumer took the last item
          throw error;
        },
      );
      if (kv === undefined) return;
      const visibleAt = reminders.visibleAt(kv);
      if (Date.now() < visibleAt) early++;
      taken.push(kv.text());
      console.log(
        `+${Date.now() - started} ms ${name} took "${kv.text()}" (due at +${visibleAt - started} ms)`,
      );
      if (taken.length === delays.length) done.abort();
    }
  };
  await Promise.all([consumer('consumer-1'), consumer('consumer-2')]);

  const order = ['in 0 ms', 'in 400 ms', 'in 800 ms', 'in 1200 ms'];
  const ok = early === 0 && taken.join() === order.join();
  console.log(`taken in time order, each once, none early: ${ok}`);
  if (ok) console.log('delay-queue OK');
  else process.exitCode = 1;
} finally {
  await close();
}
