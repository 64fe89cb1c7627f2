// The embedded server's bytes allocated per Mutex lock cycle: a count, not a time, so it can be
// compared on a loaded machine. Each etcdkit-server (this checkout's, and ETCDKIT_BENCH_SERVER_CLI_BEFORE
// when set: another entry, e.g. a bundle of an older commit) runs in its own process with
// --trace-gc-nvp, whose every GC line gives the bytes V8 allocated since the one before; their sum
// over a run of CYCLES lock cycles (CONTENDERS sessions of this process on one Mutex, each its own
// client, locking and unlocking in a loop) is the run's allocation, within one young generation
// (about 1 MiB) at each end. Rounds alternate the servers ABBA after a warm-up run on each.
// ETCDKIT_BENCH_SERVER_FLAGS / _BEFORE add node flags (e.g. --min-semi-space-size=16);
// ETCDKIT_BENCH_SERVER_HEAP_PROFILE=dir: each server writes a sampling profile of its allocations.
// Run alone: node --conditions=etcdkit-source --import tsx bench/server-alloc.ts
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Etcd } from '../packages/client/src/index.js';
import { Mutex, Session } from '../packages/recipes/src/index.js';
import { freePort } from '../testkit/src/internal/ports.js';
import { median } from './report.js';
import { allocationSampler } from './server-contention-cpu.js';
import { untilServing } from './server-cpu.js';

const CONTENDERS = Number(process.env.ETCDKIT_BENCH_ALLOC_CONTENDERS ?? 8);
const CYCLES = Number(process.env.ETCDKIT_BENCH_ALLOC_CYCLES ?? 2000);
const ROUNDS = Number(process.env.ETCDKIT_BENCH_ALLOC_ROUNDS ?? 4);
const REPO = fileURLToPath(new URL('../', import.meta.url));
const CLI =
  process.env.ETCDKIT_BENCH_SERVER_CLI ??
  fileURLToPath(new URL('../packages/server-embedded/src/cli/main.ts', import.meta.url));
const BEFORE = process.env.ETCDKIT_BENCH_SERVER_CLI_BEFORE;

interface Server {
  readonly name: string;
  readonly endpoint: string;
  /** Bytes allocated and GCs (scavenges, mark-compacts) so far, from the GC lines read. */
  readonly gc: { allocated: number; scavenges: number; compactions: number };
  stop(): Promise<void>;
}

async function startServer(name: string, cli: string, flags: readonly string[]): Promise<Server> {
  const endpoint = `http://127.0.0.1:${await freePort()}`;
  const heapDir = process.env.ETCDKIT_BENCH_SERVER_HEAP_PROFILE;
  const child = spawn(
    process.execPath,
    [
      '--trace-gc-nvp',
      ...(heapDir ? ['--import', allocationSampler(heapDir)] : []),
      ...flags,
      ...(cli.endsWith('.js') ? [] : ['--conditions=etcdkit-source', '--import', 'tsx']),
      cli,
      '--listen-client-urls',
      endpoint,
    ],
    {
      cwd: cli.includes('/packages/') ? cli.slice(0, cli.lastIndexOf('/packages/')) : REPO,
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  const gc = { allocated: 0, scavenges: 0, compactions: 0 };
  let rest = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      const allocated = / allocated=(\d+)/.exec(line);
      if (allocated === null) continue;
      gc.allocated += Number(allocated[1]);
      if (/ gc=s /.test(line)) gc.scavenges++;
      else gc.compactions++;
    }
  });
  await untilServing(endpoint, child);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  return { name, endpoint, gc, stop };
}

let runs = 0;

/** CYCLES lock cycles of CONTENDERS sessions on a fresh Mutex of `server`: its GC figures. */
async function run(server: Server) {
  const clients = Array.from(
    { length: CONTENDERS },
    () => new Etcd({ endpoints: [server.endpoint] }),
  );
  const sessions = await Promise.all(clients.map((etcd) => Session.create(etcd, { ttl: 60 })));
  const name = `bench/alloc/${runs++}`;
  // The GC lines come through a pipe: let the ones of the setup arrive first.
  await new Promise((resolve) => setTimeout(resolve, 200));
  const before = { ...server.gc };
  let cycles = 0;
  await Promise.all(
    sessions.map(async (session) => {
      const mutex = new Mutex(session, name);
      while (cycles < CYCLES) {
        await (await mutex.lock()).unlock();
        cycles++;
      }
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 200));
  const after = { ...server.gc };
  for (const session of sessions) await session.close().catch(() => {});
  for (const etcd of clients) await etcd.close();
  return {
    bytes: (after.allocated - before.allocated) / cycles,
    scavenges: (after.scavenges - before.scavenges) / cycles,
    compactions: (after.compactions - before.compactions) / cycles,
  };
}

const flagsOf = (list: string | undefined) => list?.split(' ').filter((f) => f.length > 0) ?? [];

async function report(): Promise<Array<Record<string, string>>> {
  const servers = [await startServer('now', CLI, flagsOf(process.env.ETCDKIT_BENCH_SERVER_FLAGS))];
  if (BEFORE !== undefined) {
    servers.push(
      await startServer('before', BEFORE, flagsOf(process.env.ETCDKIT_BENCH_SERVER_FLAGS_BEFORE)),
    );
  }
  const samples = new Map(servers.map((s) => [s.name, [] as Awaited<ReturnType<typeof run>>[]]));
  try {
    for (const server of servers) await run(server);
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 4 === 1 || round % 4 === 2 ? [...servers].reverse() : servers;
      for (const server of order) samples.get(server.name)!.push(await run(server));
    }
  } finally {
    for (const server of servers) await server.stop();
  }
  return servers.map(({ name }) => {
    const of = samples.get(name)!;
    return {
      server: name,
      'bytes allocated per lock cycle (median; min-max)': `${median(of.map((s) => s.bytes)).toFixed(0)} (${Math.min(...of.map((s) => s.bytes)).toFixed(0)}-${Math.max(...of.map((s) => s.bytes)).toFixed(0)})`,
      'scavenges per 1000 cycles': (median(of.map((s) => s.scavenges)) * 1000).toFixed(1),
      'mark-compacts per 1000 cycles': (median(of.map((s) => s.compactions)) * 1000).toFixed(1),
    };
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(
    `bytes the etcdkit-server allocates per Mutex lock cycle, ${CONTENDERS} contenders in one process, ${CYCLES} cycles a run, ${ROUNDS} rounds ABBA`,
  );
  console.table(await report());
}
