// Counts, per contended lock cycle, what the recipes send: watch creations (from a revision, from
// now), the watch events they are sent, and unary calls by method, with N contenders (each its own client and session) locking and
// unlocking one mutex, against real etcd 3.4 and the embedded server in its own process. A count
// is not noisy the way a timing is on a shared machine; nor, much, is the CPU time the clients
// of this process used per cycle (reported too). Run it with
// `node --conditions=etcdkit-source --import tsx bench/recipes-count.ts [contenders] [cycles]`.
import { Etcd, type WatchRequest } from '../packages/client/src/index.js';
import { Mutex, Session } from '../packages/recipes/src/index.js';
import { startEtcd } from '../testkit/src/index.js';
import { ServerProcess } from './memory.js';

const CONTENDERS = Number(process.argv[2] ?? '32') || 32;
const CYCLES = Number(process.argv[3] ?? '640') || 640;

interface Counts {
  counting: boolean;
  readonly calls: Map<string, number>;
  watchesFrom: number;
  watchesNow: number;
  /** Watches that ended (cancelled) while counting; a watch kept open past the cycles is not. */
  watchesEnded: number;
  /** Watch events delivered to the recipes' watchers (deletes of keys in their ranges). */
  events: number;
  /** CPU time of this process (user + system, microseconds) while counting: JS per cycle. */
  cpuMicros: number;
}

async function count(endpoint: string): Promise<{ cycles: number; counts: Counts }> {
  const counts: Counts = {
    counting: false,
    calls: new Map(),
    watchesFrom: 0,
    watchesNow: 0,
    watchesEnded: 0,
    events: 0,
    cpuMicros: 0,
  };
  const clients: Etcd[] = [];
  const sessions: Session[] = [];
  for (let i = 0; i < CONTENDERS; i++) {
    const etcd = new Etcd({
      endpoints: [endpoint],
      hooks: {
        onCall: (event) => {
          if (!counts.counting) return;
          const method = event.method.slice(event.method.lastIndexOf('/') + 1);
          counts.calls.set(method, (counts.calls.get(method) ?? 0) + 1);
        },
      },
    });
    const watch = etcd.watch.bind(etcd);
    etcd.watch = (request: WatchRequest) => {
      if (counts.counting) {
        if ((request.startRevision ?? 0n) > 0n) counts.watchesFrom++;
        else counts.watchesNow++;
      }
      const watcher = watch(request);
      watcher.on('batch', (batch) => {
        if (counts.counting) counts.events += batch.events.length;
      });
      watcher.on('end', () => {
        if (counts.counting) counts.watchesEnded++;
      });
      return watcher;
    };
    clients.push(etcd);
    sessions.push(await Session.create(etcd, { ttl: 60 }));
  }
  const name = `count/${Date.now()}`;
  let cycles = 0;
  try {
    counts.counting = true;
    const cpu = process.cpuUsage();
    await Promise.all(
      sessions.map(async (session) => {
        const mutex = new Mutex(session, name);
        while (cycles < CYCLES) {
          await (await mutex.lock()).unlock();
          cycles++;
        }
      }),
    );
    counts.counting = false;
    const used = process.cpuUsage(cpu);
    counts.cpuMicros = used.user + used.system;
  } finally {
    for (const session of sessions) await session.close().catch(() => {});
    for (const etcd of clients) await etcd.close();
  }
  return { cycles, counts };
}

function report(server: string, { cycles, counts }: { cycles: number; counts: Counts }): void {
  const per = (n: number) => (n / cycles).toFixed(3);
  const calls = [...counts.calls].sort(([a], [b]) => a.localeCompare(b));
  const unary = calls.reduce((sum, [, n]) => sum + n, 0);
  console.log(
    `${server}: ${cycles} cycles, ${CONTENDERS} contenders; per cycle: watches from a revision ` +
      `${per(counts.watchesFrom)}, from now ${per(counts.watchesNow)}, ended ${per(counts.watchesEnded)}; events ${per(counts.events)}; ` +
      `unary ${per(unary)} (` +
      `${calls.map(([method, n]) => `${method} ${per(n)}`).join(', ')}); ` +
      `client CPU ${(counts.cpuMicros / 1000 / cycles).toFixed(3)} ms`,
  );
}

const etcd = await startEtcd();
try {
  report(`etcd ${etcd.version}`, await count(etcd.endpoint));
} finally {
  await etcd.stop();
}
const server = await ServerProcess.start();
try {
  report('EmbeddedEtcd (own process)', await count(server.endpoints[0] as string));
} finally {
  await server.stop();
}
