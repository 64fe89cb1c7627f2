// Checking your own critical section with @etcdkit/verify.
//
//   npm run example -- verify-critical-section [--endpoints http://127.0.0.1:2379]
//
// Three workers take a Mutex and move a counter kept in etcd from n to n + 1: your code would do
// something more useful in the same place. Each critical section is recorded (what it read, when it
// began and ended, whether its write took effect) and the history is checked against the
// lock-guarded counter model: linearizable exactly when no increment was lost or doubled.
// In the middle of the run one worker's lease is expired while it is inside (a GC pause, a stopped
// VM): unfenced, its late write loses an increment and the checker shows which ones; fenced with
// lock.txn(), the write is refused and the history is valid.
import { op } from '@etcdkit/client';
import { LockLostError, Mutex, Session } from '@etcdkit/recipes';
import {
  type CounterInput,
  type CounterOutput,
  checkLinearizable,
  counterModel,
  Recorder,
} from '@etcdkit/verify';
import { commandLine, connect, ENDPOINTS_FLAG, sleep } from './support.js';

const flags = commandLine('verify-critical-section', ENDPOINTS_FLAG);
const { etcd, server, close } = await connect(flags.endpoints);

async function run(fenced: boolean): Promise<boolean> {
  const recorder = new Recorder<CounterInput, CounterOutput>();
  const counter = `example/verify/${fenced ? 'fenced' : 'unfenced'}/counter`;
  let expired = false;
  const worker = async (id: number) => {
    const session = await Session.create(etcd, { ttl: 10 });
    try {
      for (let round = 0; round < 4; round++) {
        const lock = await new Mutex(session, `${counter}-lock`).lock().catch(() => undefined);
        if (lock === undefined) break; // this worker's session is gone
        const began = recorder.now();
        const kv = await etcd.get(counter);
        const from = kv === undefined ? 0 : Number(kv.text());
        // Backdated to before the read: the critical section began there.
        const section = recorder.invoke(id, { type: 'increment', from }, began);
        if (id === 0 && round === 1 && !expired) {
          // Worker 0 "pauses" here; its lease ends and worker 1 or 2 takes the lock meanwhile.
          expired = true;
          if (server) server.faults.expireLease(session.leaseId);
          else await etcd.lease.revoke(session.leaseId);
          await sleep(300);
        }
        try {
          if (fenced)
            await lock
              .txn()
              .then(op.put(counter, String(from + 1)))
              .commit();
          else await etcd.put(counter, String(from + 1));
          section.ok({ type: 'increment', wrote: true });
        } catch (error) {
          if (!(error instanceof LockLostError)) throw error;
          section.ok({ type: 'increment', wrote: false });
          console.log(`  worker ${id}: write from ${from} REFUSED, the lock was lost`);
        }
        await lock.unlock().catch(() => {});
      }
    } finally {
      await session.close().catch(() => {});
    }
  };
  await Promise.all([0, 1, 2].map(worker));
  const final = recorder.invoke(9, { type: 'read' });
  const kv = await etcd.get(counter);
  final.ok({ type: 'read', value: kv === undefined ? 0 : Number(kv.text()) });

  const result = checkLinearizable(counterModel(), recorder.history());
  console.log(
    `${fenced ? 'fenced' : 'unfenced'}: ${result.ops} operations, valid: ${result.valid}`,
  );
  for (const anomaly of result.anomalies)
    for (const line of anomaly.timeline) console.log(`  ${line}`);
  return result.valid === true;
}

try {
  const unfenced = await run(false);
  const fenced = await run(true);
  if (unfenced || !fenced)
    throw new Error('expected the unfenced run to be caught and the fenced run valid');
  console.log('verify-critical-section OK: the lost increment was caught, the fenced run is valid');
} finally {
  await close();
}
