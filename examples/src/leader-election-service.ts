// A service that runs leader-only work on one instance at a time, and hands over gracefully.
//
//   npm run example -- leader-election-service [--name node-a] [--duration 2000] [--endpoints ...]
//
// The instance campaigns in the Election `elections/report-generator`. Once leader it does the
// leader-only work (here: a report every 200 ms, written by a txn guarded by its leadership, so a
// deposed leader can never write). It stops leading when:
// - SIGTERM or SIGINT arrives (a deploy, Ctrl-C): it finishes the current step, RESIGNS (its key is
//   deleted at once, so the next candidate takes over without waiting for a lease to expire),
//   closes its session and exits 0;
// - `--duration ms` elapses (so CI can run it and see it end by itself): same graceful path;
// - its leadership is lost (lease expired, key deleted): leadership.signal aborts, work stops.
// Run two instances against one etcd (`--endpoints`) and stop the leader to watch the failover.
import { op } from '@etcdkit/client';
import { Election, Session } from '@etcdkit/recipes';
import { commandLine, connect, ENDPOINTS_FLAG, numberFlag, sleep } from './support.js';

const flags = commandLine('leader-election-service', {
  ...ENDPOINTS_FLAG,
  name: 'name',
  duration: 'ms',
});
const name = flags.name ?? `node-${process.pid}`;
const durationMs = numberFlag('leader-election-service', 'duration', flags.duration, Infinity);

// One signal for "this process should stop": SIGTERM, SIGINT or the end of --duration.
const stop = new AbortController();
const onSignal = (signal: NodeJS.Signals) => {
  console.log(`${name}: ${signal} received, stopping gracefully`);
  stop.abort();
};
process.once('SIGTERM', onSignal);
process.once('SIGINT', onSignal);
const timer = Number.isFinite(durationMs) ? setTimeout(() => stop.abort(), durationMs) : undefined;

const { etcd, close } = await connect(flags.endpoints);
const session = await Session.create(etcd, { ttl: 5 });
try {
  const election = new Election(session, 'elections/report-generator');
  console.log(`${name}: campaigning`);
  const leadership = await election.campaign(name, { signal: stop.signal }).catch((error) => {
    if (stop.signal.aborted) return undefined; // asked to stop before winning
    throw error;
  });
  if (leadership) {
    console.log(`${name}: leading (epoch ${leadership.epoch})`);
    // Work until asked to stop or until the leadership may be lost, whichever comes first.
    const working = AbortSignal.any([stop.signal, leadership.signal]);
    let reports = 0;
    while (!working.aborted) {
      reports++;
      await leadership
        .txn()
        .then(op.put('reports/latest', `report ${reports} by ${name}`))
        .commit();
      console.log(`${name}: wrote report ${reports}`);
      await sleep(200);
    }
    if (leadership.signal.aborted && !stop.signal.aborted) {
      console.log(`${name}: leadership lost, stopped leader-only work`);
    } else {
      await leadership.resign();
      console.log(`${name}: resigned gracefully after ${reports} report(s)`);
    }
  }
} finally {
  clearTimeout(timer);
  await session.close();
  await close();
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
}
