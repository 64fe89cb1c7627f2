// One process of bench/stm.ts' multi-process rows: `contenders` loops moving 1 between two random
// keys of `keys` with runStm for `ms` after the parent's 'go', each run with its own session's
// stmKeyLocks when `contention` is 1. Arguments: endpoint, prefix, keys, contenders, ms,
// contention. Sends 'ready', then { latencies, calls } (each transfer's ms; the unary calls made,
// by method, and 'watch msgs', the watch responses its watchers got; cpuMs, the CPU time the
// transfers took) and exits.
// With contention `token:<index>/<processes>` it measures the handoff floor instead: the processes
// pass a token round in FIFO order, process i watching only its key `<prefix>token/<i>` and putting
// the next turn's number to the next process's key when its own shows its turn: one put and one
// watch delivery a handoff, to the next process only; latencies are its times round the ring.
import { Etcd } from '../packages/client/src/etcd.js';
import { stmKeyLocks } from '../packages/recipes/src/lock/stm-key-locks.js';
import { Session } from '../packages/recipes/src/session/session.js';
import { runStm, type StmOptions } from '../packages/recipes/src/stm/stm.js';

const [endpoint, prefix, keys, contenders, ms, contention] = process.argv.slice(2);
if (!endpoint || !prefix || !keys || !contenders || !ms || !contention) {
  throw new Error('usage: endpoint prefix keys contenders ms contention');
}
const calls: Record<string, number> = {};
const etcd = new Etcd({
  endpoints: [endpoint],
  hooks: {
    onCall: ({ method }) => {
      const name = method.slice(method.lastIndexOf('/') + 1);
      calls[name] = (calls[name] ?? 0) + 1;
    },
  },
});
// Watch responses delivered to this process's watchers (the stream's messages, minus empty ones).
const openWatch = etcd.watch.bind(etcd);
etcd.watch = (request) => {
  const watcher = openWatch(request);
  watcher.on('batch', () => {
    calls['watch msgs'] = (calls['watch msgs'] ?? 0) + 1;
  });
  return watcher;
};
if (contention.startsWith('token:')) await passToken(contention.slice(6));
const session = contention === '1' ? await Session.create(etcd, { ttl: 30 }) : undefined;
const options: StmOptions = session
  ? { contention: { locks: stmKeyLocks(session, `${prefix}locks`) } }
  : {};
const count = Number(keys);
const latencies: number[] = [];
process.send?.('ready');
await new Promise((resolve) => process.once('message', resolve));
// Only the calls of the transfers: not the session's grant, nor its revoke below.
for (const name of Object.keys(calls)) delete calls[name];
const cpuAtGo = process.cpuUsage();
const end = performance.now() + Number(ms);
await Promise.all(
  Array.from({ length: Number(contenders) }, async () => {
    while (performance.now() < end) {
      const from = Math.floor(Math.random() * count);
      const to = (from + 1 + Math.floor(Math.random() * (count - 1))) % count;
      const started = performance.now();
      await runStm(
        etcd,
        async (stm) => {
          const a = Number(await stm.get(`${prefix}${from}`));
          const b = Number(await stm.get(`${prefix}${to}`));
          stm.put(`${prefix}${from}`, String(a - 1));
          stm.put(`${prefix}${to}`, String(b + 1));
        },
        options,
      );
      latencies.push(performance.now() - started);
    }
  }),
);
const made = { ...calls };
const cpu = cpuMs(cpuAtGo);
await session?.close();
await etcd.close();
process.send?.({ latencies, calls: made, cpuMs: cpu }, () => process.exit(0));

/** The CPU time this process spent since `start`, in ms (user and system). */
function cpuMs(start: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
}

/** The handoff floor: `ring` is `<index>/<processes>`; process i's key is `<prefix>token/<i>`. */
async function passToken(ring: string): Promise<never> {
  const [index, processes] = ring.split('/').map(Number) as [number, number];
  const key = `${prefix}token/${index}`;
  const next = `${prefix}token/${(index + 1) % processes}`;
  const watcher = etcd.watch({ key });
  await watcher.ready();
  const laps: number[] = [];
  let last: number | undefined;
  let stopped = false;
  let taken = -1;
  const take = async (turn: number) => {
    // The first turn can come both by the read below and by the watch.
    if (stopped || turn % processes !== index || turn <= taken) return;
    taken = turn;
    const now = performance.now();
    if (last !== undefined) laps.push(now - last);
    last = now;
    await etcd.put(next, String(turn + 1));
  };
  watcher.on('put', (event) => void take(Number(event.kv.text())));
  process.send?.('ready');
  await new Promise((resolve) => process.once('message', resolve));
  for (const name of Object.keys(calls)) delete calls[name];
  const cpuAtGo = process.cpuUsage();
  // The first turn is the one the parent put (on process 0's key) before 'go'.
  const start = Number((await etcd.get(key))?.text());
  if (start % processes === index) void take(start);
  await new Promise((resolve) => setTimeout(resolve, Number(ms)));
  stopped = true;
  const made = { ...calls };
  const cpu = cpuMs(cpuAtGo);
  await watcher.close();
  await etcd.close();
  const turns = laps.length + (last === undefined ? 0 : 1);
  process.send?.({ latencies: laps, calls: made, count: turns, cpuMs: cpu }, () => process.exit(0));
  return new Promise<never>(() => {});
}
