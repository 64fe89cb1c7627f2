// A lock worker whose unlock fails retries it until the hold is over. Before, it let the failure
// go: its key stayed in etcd under a live session and its session's next lock() waited behind it
// (a Mutex takes a session's key in call order), so on a virtual clock no one took the lock again.
import { Etcd } from '@etcdkit/client';
import { EmbeddedEtcd, GrpcCode } from '@etcdkit/server-embedded';
import { expect, it } from 'vitest';
import type { Target } from '../src/target.js';
import { lockWorkload } from '../src/workloads/lock-workload.js';

const PREFIX = 'unlock-failure/';

it('refused unlocks are retried: the lock goes on changing hands', {
  timeout: 120_000,
}, async () => {
  // Virtual clock: leases never expire by themselves, so a key left behind stays.
  const server = await EmbeddedEtcd.start({ clock: 'virtual' });
  const target: Target = {
    description: 'embedded server, virtual clock',
    endpoints: [...server.endpoints],
    faults: {},
    stop: () => server.stop(),
  };
  const etcd = new Etcd({ endpoints: [...server.endpoints] });
  const counter = async () => Number((await etcd.get(`${PREFIX}counter`))?.text() ?? 0);
  const until = async (condition: () => Promise<boolean>, what: string) => {
    const deadline = Date.now() + 30_000;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  try {
    const run = lockWorkload(target, {
      prefix: PREFIX,
      durationMs: 6_000,
      clients: 2,
      fenced: false,
      clientPauses: false,
      faults: [],
    });
    // Right after a write (a Put) the writer's next Txn is its unlock: refuse the next 20 Txns,
    // the unlock and the other worker's lock attempts meanwhile.
    await until(async () => (await counter()) >= 1, 'a first increment');
    server.faults.failNext('Txn', { code: GrpcCode.INTERNAL, count: 20 });
    const before = await counter();
    await until(async () => (await counter()) >= before + 3, 'three increments after the failures');
    const { history } = await run;
    expect(history.filter((op) => op.input.type === 'increment').length).toBeGreaterThan(3);
  } finally {
    await etcd.close();
    await target.stop();
  }
});
