// A process of the recipes suite's lock cycles over several processes (bench/recipes.ts): for each
// message { id, endpoint, name, contenders, ms } it opens `contenders` sessions (each its own
// client) and answers { id }; on { id, go } each locks and unlocks the mutex `name` in a loop for
// `ms`, then it answers { id, cycles, ms } (the cycles, and how long they took) and closes them.
// One process serves every measure of a server, so it is warmed once, as the bench process is.
import { Etcd } from '../packages/client/src/index.js';
import { Mutex, Session } from '../packages/recipes/src/index.js';

interface Measure {
  readonly id: number;
  readonly endpoint: string;
  readonly name: string;
  readonly contenders: number;
  readonly ms: number;
}

const starts = new Map<number, () => void>();

process.on('message', (message: Measure | { readonly id: number; readonly go: true }) => {
  if ('go' in message) starts.get(message.id)?.();
  else void measure(message);
});
// The parent went away: nothing left to measure for.
process.on('disconnect', () => process.exit(0));

async function measure({ id, endpoint, name, contenders, ms }: Measure): Promise<void> {
  const clients: Etcd[] = [];
  const sessions: Session[] = [];
  try {
    for (let i = 0; i < contenders; i++) {
      const etcd = new Etcd({ endpoints: [endpoint] });
      clients.push(etcd);
      sessions.push(await Session.create(etcd, { ttl: 60 }));
    }
    const go = new Promise<void>((resolve) => starts.set(id, resolve));
    process.send?.({ id });
    await go;
    let cycles = 0;
    const started = performance.now();
    const deadline = started + ms;
    await Promise.all(
      sessions.map(async (session) => {
        const mutex = new Mutex(session, name);
        while (performance.now() < deadline) {
          await (await mutex.lock()).unlock();
          cycles++;
        }
      }),
    );
    process.send?.({ id, cycles, ms: performance.now() - started });
  } finally {
    starts.delete(id);
    for (const session of sessions) await session.close().catch(() => {});
    for (const etcd of clients) await etcd.close();
  }
}
