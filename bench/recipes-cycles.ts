// A process of the recipes suite's lock cycles over several processes (bench/recipes.ts): for each
// message { id, endpoint, name, contenders, ms } it opens `contenders` sessions (each its own
// client) and answers { id }; on { id, go } each locks and unlocks the mutex `name` in a loop for
// `ms`, then it answers { id, cycles, ms, cpuMs, systemMs, writes, reads } (the cycles, how long
// they took, this process's CPU time over them: process.cpuUsage, user plus system, and its socket
// writes and reads) and closes them.
// One process serves every measure of a server, so it is warmed once, as the bench process is.
// ETCDKIT_BENCH_RECIPES_ROOT names another checkout (e.g. a clone at an older commit) whose client
// and recipes it runs instead of this one's: the before side of a before/after comparison.
import { pathToFileURL } from 'node:url';
import { watchSocketIo } from './recipes-socket-io.js';

type ClientModule = typeof import('../packages/client/src/index.js');
type RecipesModule = typeof import('../packages/recipes/src/index.js');
type Session = import('../packages/recipes/src/index.js').Session;
type Etcd = import('../packages/client/src/index.js').Etcd;

const root = process.env.ETCDKIT_BENCH_RECIPES_ROOT;
const from = (path: string) =>
  root ? pathToFileURL(`${root}/${path}.ts`).href : new URL(`../${path}.js`, import.meta.url).href;
const client = (await import(from('packages/client/src/index'))) as ClientModule;
const recipes = (await import(from('packages/recipes/src/index'))) as RecipesModule;

interface Measure {
  readonly id: number;
  readonly endpoint: string;
  readonly name: string;
  readonly contenders: number;
  readonly ms: number;
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
    const cpuBefore = process.cpuUsage();
    const ioBefore = { ...io };
    const started = performance.now();
    const deadline = started + ms;
    await Promise.all(
      sessions.map(async (session) => {
        const mutex = new recipes.Mutex(session, name);
        while (performance.now() < deadline) {
          await (await mutex.lock()).unlock();
          cycles++;
        }
      }),
    );
    const took = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const writes = io.writes - ioBefore.writes;
    const reads = io.reads - ioBefore.reads;
    const cpuMs = (cpu.user + cpu.system) / 1000;
    process.send?.({ id, cycles, ms: took, cpuMs, systemMs: cpu.system / 1000, writes, reads });
  } finally {
    starts.delete(id);
    for (const session of sessions) await session.close().catch(() => {});
    for (const etcd of clients) await etcd.close();
  }
}
