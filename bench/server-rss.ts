// What a node flag costs an etcdkit-server process in resident memory: the CLI (ETCDKIT_BENCH_SERVER_CLI,
// e.g. a bundle; this checkout's sources by default) started with no flag and with each set of
// ETCDKIT_BENCH_RSS_FLAGS (sets separated by commas, e.g. "--min-semi-space-size=16"), in an order
// rotated every round; its VmRSS idle, then after KEYS puts of 100 B values (64 in flight, as
// server-memory.ts writes them) and a second's settling. No GC is forced (the CLI has no way to be
// asked), so garbage not yet collected counts: what a user's process would show.
// Run alone: node --conditions=etcdkit-source --import tsx bench/server-rss.ts
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Etcd } from '../packages/client/src/index.js';
import { freePort } from '../testkit/src/internal/ports.js';
import { median } from './report.js';
import { untilServing } from './server-cpu.js';

const KEYS = Number(process.env.ETCDKIT_BENCH_SERVER_MEMORY_KEYS ?? 200_000);
const ROUNDS = Number(process.env.ETCDKIT_BENCH_SERVER_MEMORY_ROUNDS ?? 3);
const IN_FLIGHT = 64;
const VALUE = 'v'.repeat(100);
const REPO = fileURLToPath(new URL('../', import.meta.url));
const CLI =
  process.env.ETCDKIT_BENCH_SERVER_CLI ??
  fileURLToPath(new URL('../packages/server-embedded/src/cli/main.ts', import.meta.url));
const FLAG_SETS = [
  '',
  ...(process.env.ETCDKIT_BENCH_RSS_FLAGS ?? '--min-semi-space-size=16').split(','),
];

const rssOf = (pid: number) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
const settle = () => new Promise((resolve) => setTimeout(resolve, 1000));

async function measure(flags: string): Promise<{ idle: number; loaded: number }> {
  const endpoint = `http://127.0.0.1:${await freePort()}`;
  const child = spawn(
    process.execPath,
    [
      ...flags.split(' ').filter((flag) => flag.length > 0),
      ...(CLI.endsWith('.js') ? [] : ['--conditions=etcdkit-source', '--import', 'tsx']),
      CLI,
      '--listen-client-urls',
      endpoint,
    ],
    { cwd: REPO, stdio: 'ignore' },
  );
  try {
    await untilServing(endpoint, child);
    await settle();
    const idle = rssOf(child.pid!);
    const etcd = new Etcd({ endpoints: [endpoint] });
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < KEYS) await etcd.put(`key/${String(next++).padStart(8, '0')}`, VALUE);
      }),
    );
    await etcd.close();
    await settle();
    return { idle, loaded: rssOf(child.pid!) };
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

const samples = new Map(
  FLAG_SETS.map((flags) => [flags, [] as { idle: number; loaded: number }[]]),
);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? FLAG_SETS : [...FLAG_SETS].reverse();
  for (const flags of order) samples.get(flags)!.push(await measure(flags));
}
const MiB = 1024 * 1024;
console.log(`etcdkit-server VmRSS idle and after ${KEYS} puts of 100 B, ${ROUNDS} rounds, medians`);
console.table(
  FLAG_SETS.map((flags) => {
    const of = samples.get(flags)!;
    return {
      flags: flags || '(none)',
      'idle RSS, MiB': (median(of.map((s) => s.idle)) / MiB).toFixed(1),
      'RSS after the puts, MiB': (median(of.map((s) => s.loaded)) / MiB).toFixed(1),
      'RSS per key, B': median(of.map((s) => s.loaded / KEYS)).toFixed(0),
      'growth per key, B': median(of.map((s) => (s.loaded - s.idle) / KEYS)).toFixed(0),
    };
  }),
);
