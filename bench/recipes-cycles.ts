// A process of the recipes suite's lock cycles over several processes (bench/recipes.ts): for each
// message { id, endpoint, name, contenders, ms } it opens `contenders` sessions (each its own
// client) and answers { id }; on { id, go } each locks and unlocks the mutex `name` in a loop for
// `ms`, then it answers { id, cycles, ms, cpuMs, systemMs, writes, reads } (the cycles, how long
// they took, this process's CPU time over them: process.cpuUsage, user plus system, and its socket
// writes and reads) and closes them.
// One process serves every measure of a server, so it is warmed once, as the bench process is.
// It runs the built packages (packages/*/dist, what users run: built-packages.ts), or with
// ETCDKIT_BENCH_CODE=source the TypeScript sources under tsx. ETCDKIT_BENCH_RECIPES_ROOT names
// another checkout (e.g. a clone at an older commit) whose client and recipes it runs instead of
// this one's: the before side of a before/after comparison.
import { pathToFileURL } from 'node:url';
import { builtPackages } from './built-packages.js';
import { watchSocketIo } from './recipes-socket-io.js';

type ClientModule = typeof import('../packages/client/src/index.js');
type RecipesModule = typeof import('../packages/recipes/src/index.js');
type Session = import('../packages/recipes/src/index.js').Session;
type Etcd = import('../packages/client/src/index.js').Etcd;

const root = process.env.ETCDKIT_BENCH_RECIPES_ROOT;
const source = (path: string) =>
  root ? pathToFileURL(`${root}/${path}.ts`).href : new URL(`../${path}.js`, import.meta.url).href;
const built = process.env.ETCDKIT_BENCH_CODE === 'source' ? undefined : await builtPackages();
const client = (await import(built?.client ?? source('packages/client/src/index'))) as ClientModule;
const recipes = (await import(
  built?.recipes ?? source('packages/recipes/src/index')
)) as RecipesModule;

interface Measure {
  readonly id: number;
  readonly endpoint: string;
  readonly name: string;
  readonly contenders: number;
  readonly ms: number;
  /**
   * The floor of a FIFO handoff across processes instead of lock cycles: this process is place
   * `index` of a ring of `ring` processes (one client each, `contenders` unused): it watches its
   * own key, and on each put there (process 0 also once at the start) counts a turn and puts the
   * next place's key. One put and one woken process per handoff: the fewest messages any FIFO lock
   * across processes can pass a turn with.
   */
  readonly floor?: { readonly index: number; readonly ring: number };
}

const starts = new Map<number, () => void>();

// The socket writes and reads of this process (its clients'), counted over each measure.
const io = { writes: 0, reads: 0 };
watchSocketIo(
  () => io.writes++,
  () => io.reads++,
);

process.on('message', (message: Measure | { readonly id: number; readonly go: true }) => {
  if ('go' in message) starts.get(message.id)?.();
  else if (message.floor !== undefined) void handoffFloor(message, message.floor);
  else void measure(message);
});
// The parent went away: nothing left to measure for.
process.on('disconnect', () => process.exit(0));
// Stopped by the parent: exit, so that a --cpu-prof run writes its profile.
process.on('SIGTERM', () => process.exit(0));

async function measure({ id, endpoint, name, contenders, ms }: Measure): Promise<void> {
  const clients: Etcd[] = [];
  const sessions: Session[] = [];
  try {
    for (let i = 0; i < contenders; i++) {
      const etcd = new client.Etcd({ endpoints: [endpoint] });
      clients.push(etcd);
      sessions.push(await recipes.Session.create(etcd, { ttl: 60 }));
    }
    const go = new Promise<void>((resolve) => starts.set(id, resolve));
    process.send?.({ id });
    await go;
    let cycles = 0;
    const done = meter(id);
    const deadline = performance.now() + ms;
    await Promise.all(
      sessions.map(async (session) => {
        const mutex = new recipes.Mutex(session, name);
        while (performance.now() < deadline) {
          await (await mutex.lock()).unlock();
          cycles++;
        }
      }),
    );
    process.send?.(done(cycles));
  } finally {
    starts.delete(id);
    for (const session of sessions) await session.close().catch(() => {});
    for (const etcd of clients) await etcd.close();
  }
}

/** Counts the CPU time and socket I/O of this process from now: the answer to the parent. */
function meter(id: number) {
  const cpuBefore = process.cpuUsage();
  const ioBefore = { ...io };
  const started = performance.now();
  return (cycles: number) => {
    const took = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const [writes, reads] = [io.writes - ioBefore.writes, io.reads - ioBefore.reads];
    const cpuMs = (cpu.user + cpu.system) / 1000;
    return { id, cycles, ms: took, cpuMs, systemMs: cpu.system / 1000, writes, reads };
  };
}

/** This process's place in a handoff ring (Measure.floor): its turns until `ms` have passed. */
async function handoffFloor(
  { id, endpoint, name, ms }: Measure,
  { index, ring }: { readonly index: number; readonly ring: number },
): Promise<void> {
  const etcd = new client.Etcd({ endpoints: [endpoint] });
  try {
    const key = (place: number) => `${name}/${place}`;
    const watcher = etcd.watch({ key: key(index), filters: ['noDelete'] });
    await watcher.ready();
    // One value: the put's size does not matter next to the messages.
    const next = key((index + 1) % ring);
    let turns = 0;
    let deadline = Infinity;
    const turn = () => {
      if (performance.now() >= deadline) return;
      turns++;
      // A failure shows as fewer turns; the ring does not wait for the answer.
      etcd.put(next, 't').catch(() => undefined);
    };
    watcher.on('put', turn);
    const go = new Promise<void>((resolve) => starts.set(id, resolve));
    process.send?.({ id });
    await go;
    const done = meter(id);
    deadline = performance.now() + ms;
    if (index === 0) turn();
    await new Promise((resolve) => setTimeout(resolve, ms));
    process.send?.(done(turns));
    watcher.close();
  } finally {
    starts.delete(id);
    // Let the last put in flight settle before the client goes.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await etcd.close();
  }
}
