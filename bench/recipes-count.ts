// Counts, per contended lock cycle, what the recipes send: watch creations (from a revision, from
// now), the watch events they are sent, and unary calls by method, with N contenders (each its own client and session) locking and
// unlocking one mutex, against real etcd 3.4 and the embedded server in its own process. A count
// is not noisy the way a timing is on a shared machine; nor, much, is the CPU time the clients
// of this process used per cycle (reported too). Run it with
// `node --conditions=etcdkit-source --import tsx bench/recipes-count.ts [contenders] [cycles] [processes]`.
// With processes > 1 the contenders are spread over that many child processes (as the cycles rows
// over processes are, recipes-cycles.ts), each counting for `cycles` milliseconds after a second of
// warm-up, and the socket writes and reads of the clients are counted too;
// ETCDKIT_BENCH_CYCLES_PROF=<dir> makes the first child write a CPU profile there (node --cpu-prof).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Etcd, type WatchRequest } from '../packages/client/src/index.js';
import { Mutex, Session } from '../packages/recipes/src/index.js';
import { startEtcd } from '../testkit/src/index.js';
import { ServerProcess } from './memory.js';
import { watchSocketIo } from './recipes-socket-io.js';

const CONTENDERS = Number(process.argv[2] ?? '32') || 32;
const CYCLES = Number(process.argv[3] ?? '640') || 640;
const PROCESSES = Number(process.argv[4] ?? '1') || 1;
const WARM_MS = 1_000;

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
  /** Socket writes and reads of this process's clients while counting. */
  writes: number;
  reads: number;
}

/** What a child (or the one process) counted: plain numbers, to send to the parent. */
interface Counted {
  readonly cycles: number;
  readonly counts: Omit<Counts, 'calls' | 'counting'> & { readonly calls: [string, number][] };
}

const counts: Counts = {
  counting: false,
  calls: new Map(),
  watchesFrom: 0,
  watchesNow: 0,
  watchesEnded: 0,
  events: 0,
  cpuMicros: 0,
  writes: 0,
  reads: 0,
};
watchSocketIo(
  () => {
    if (counts.counting) counts.writes++;
  },
  () => {
    if (counts.counting) counts.reads++;
  },
);

/** `contenders` sessions, each its own client whose calls and watches are counted. */
async function contenders(endpoint: string, n: number): Promise<Session[]> {
  const sessions: Session[] = [];
  for (let i = 0; i < n; i++) {
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
    sessions.push(await Session.create(etcd, { ttl: 60 }));
  }
  return sessions;
}

async function closeAll(sessions: readonly Session[]): Promise<void> {
  for (const session of sessions) {
    await session.close().catch(() => {});
    await session.etcd.close();
  }
}

function counted(cycles: number): Counted {
  const { counting: _, calls, ...rest } = counts;
  return { cycles, counts: { ...rest, calls: [...calls] } };
}

/** All contenders in this process, for CYCLES cycles. */
async function count(endpoint: string): Promise<Counted> {
  const sessions = await contenders(endpoint, CONTENDERS);
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
    await closeAll(sessions);
  }
  return counted(cycles);
}

interface ChildJob {
  readonly endpoint: string;
  readonly name: string;
  readonly contenders: number;
  readonly ms: number;
}

/** A child: its contenders lock and unlock `name`, counted for `ms` after the warm-up. */
async function childCount({ endpoint, name, contenders: n, ms }: ChildJob): Promise<Counted> {
  const sessions = await contenders(endpoint, n);
  let cycles = 0;
  try {
    const warmEnd = performance.now() + WARM_MS;
    const end = warmEnd + ms;
    let cpu = process.cpuUsage();
    let started = false;
    await Promise.all(
      sessions.map(async (session) => {
        const mutex = new Mutex(session, name);
        for (;;) {
          const now = performance.now();
          if (now >= end) break;
          if (!started && now >= warmEnd) {
            started = true;
            counts.counting = true;
            cpu = process.cpuUsage();
          }
          await (await mutex.lock()).unlock();
          if (counts.counting) cycles++;
        }
      }),
    );
    counts.counting = false;
    const used = process.cpuUsage(cpu);
    counts.cpuMicros = used.user + used.system;
  } finally {
    await closeAll(sessions);
  }
  return counted(cycles);
}

/** The contenders spread over PROCESSES children; their counts summed. */
async function countOverProcesses(endpoint: string): Promise<Counted> {
  const script = fileURLToPath(import.meta.url);
  const name = `count/${Date.now()}`;
  const per = Math.ceil(CONTENDERS / PROCESSES);
  const jobs = Array.from({ length: PROCESSES }, (_, i) =>
    Math.min(per, CONTENDERS - i * per),
  ).filter((n) => n > 0);
  const profile = process.env.ETCDKIT_BENCH_CYCLES_PROF;
  const results = await Promise.all(
    jobs.map(
      (n, i) =>
        new Promise<Counted>((resolve, reject) => {
          // The first child's CPU profile, with ETCDKIT_BENCH_CYCLES_PROF=<dir>.
          const prof = i === 0 && profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
          const child = fork(script, process.argv.slice(2), {
            execArgv: [...process.execArgv, ...prof],
            env: { ...process.env, ETCDKIT_COUNT_CHILD: '1' },
            stdio: 'inherit',
          });
          child.once('message', (message) => {
            resolve(message as Counted);
            child.disconnect();
          });
          child.once('error', reject);
          child.once('exit', (code) => {
            if (code !== 0) reject(new Error(`count child exited ${code}`));
          });
          child.send({ endpoint, name, contenders: n, ms: CYCLES } satisfies ChildJob);
        }),
    ),
  );
  const sum = (pick: (c: Counted['counts']) => number) =>
    results.reduce((total, r) => total + pick(r.counts), 0);
  const calls = new Map<string, number>();
  for (const r of results)
    for (const [m, n] of r.counts.calls) calls.set(m, (calls.get(m) ?? 0) + n);
  return {
    cycles: results.reduce((total, r) => total + r.cycles, 0),
    counts: {
      calls: [...calls],
      watchesFrom: sum((c) => c.watchesFrom),
      watchesNow: sum((c) => c.watchesNow),
      watchesEnded: sum((c) => c.watchesEnded),
      events: sum((c) => c.events),
      cpuMicros: sum((c) => c.cpuMicros),
      writes: sum((c) => c.writes),
      reads: sum((c) => c.reads),
    },
  };
}

function report(server: string, { cycles, counts: c }: Counted): void {
  const per = (n: number) => (n / cycles).toFixed(3);
  const calls = [...c.calls].sort(([a], [b]) => a.localeCompare(b));
  const unary = calls.reduce((sum, [, n]) => sum + n, 0);
  const where = PROCESSES > 1 ? `over ${PROCESSES} processes` : 'in one process';
  console.log(
    `${server}: ${cycles} cycles, ${CONTENDERS} contenders ${where}; per cycle: watches from a revision ` +
      `${per(c.watchesFrom)}, from now ${per(c.watchesNow)}, ended ${per(c.watchesEnded)}; events ${per(c.events)}; ` +
      `unary ${per(unary)} (` +
      `${calls.map(([method, n]) => `${method} ${per(n)}`).join(', ')}); ` +
      `socket writes ${per(c.writes)}, reads ${per(c.reads)}; ` +
      `client CPU ${(c.cpuMicros / 1000 / cycles).toFixed(3)} ms`,
  );
}

if (process.env.ETCDKIT_COUNT_CHILD === '1') {
  process.once('message', (job) => {
    void childCount(job as ChildJob).then(
      (result) => process.send?.(result),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
} else {
  const run = PROCESSES > 1 ? countOverProcesses : count;
  const servers = new Set((process.env.ETCDKIT_BENCH_SERVERS ?? 'etcd,embedded').split(','));
  if (servers.has('etcd')) {
    const etcd = await startEtcd();
    try {
      report(`etcd ${etcd.version}`, await run(etcd.endpoint));
    } finally {
      await etcd.stop();
    }
  }
  if (servers.has('embedded')) {
    const server = await ServerProcess.start();
    try {
      report('EmbeddedEtcd (own process)', await run(server.endpoints[0] as string));
    } finally {
      await server.stop();
    }
  }
}
