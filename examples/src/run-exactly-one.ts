// The `etcdkit` command (@etcdkit/cli): run a command on exactly one machine, stopped on a loss.
//
//   npm run example -- run-exactly-one [--endpoints http://127.0.0.1:2379]
//
// Here the "machines" are processes: each runs `etcdkit` as a cron entry or a service unit would
// (from the CLI's TypeScript sources, as `npx etcdkit` does in this repository). Their commands
// append what they do to one log file, so its lines are the true order. It shows:
// 1. three `etcdkit lock jobs/nightly -- CMD` at once: the commands run one after another, each with
//    a higher ETCDKIT_FENCING_TOKEN, and each etcdkit exits with its command's status (0);
// 2. a lost lock: the holder's lease is revoked while its command runs; etcdkit sends the command
//    SIGTERM and exits with its own status 79 (the lock passed on, the job must not go on);
// 3. `etcdkit semaphore --limit 2 backups -- CMD` three times: never more than two commands at once;
// 4. `etcdkit elect services/ingest -- CMD` twice: the second leads (and runs) once the first's
//    command exited and it resigned, with the next leader epoch.
// docs/run-exactly-one.md explains the watchdog that also stops CMD when etcdkit itself stalls.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandLine, connect, ENDPOINTS_FLAG, sleep } from './support.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ETCDKIT = ['--conditions=etcdkit-source', '--import', 'tsx', 'packages/cli/src/cli/main.ts'];
const dir = mkdtempSync(join(tmpdir(), 'etcdkit-run-exactly-one-'));
const log = join(dir, 'log');
writeFileSync(log, '');

// The supervised command: logs its start (with what etcdkit told it) and end, and a SIGTERM.
const JOB = `
const { appendFileSync } = require('node:fs');
const say = (line) => appendFileSync(process.env.LOG, process.env.WHO + ' ' + line + '\\n');
const env = process.env;
say('start token=' + env.ETCDKIT_FENCING_TOKEN + ' lease=' + env.ETCDKIT_LEASE_ID +
  (env.ETCDKIT_LEADER_EPOCH ? ' epoch=' + env.ETCDKIT_LEADER_EPOCH : ''));
process.on('SIGTERM', () => { say('got SIGTERM'); process.exit(143); });
setTimeout(() => { say('end'); }, Number(env.RUN_MS));
`;

/**
 * Starts `etcdkit ARGS -- node -e JOB` as `who`; resolves with etcdkit's exit status once it ended,
 * having printed what etcdkit itself said on stderr.
 */
function etcdkit(who: string, args: readonly string[], runMs = 300): Promise<number | null> {
  const child: ChildProcess = spawn(
    process.execPath,
    [...ETCDKIT, ...args, '--', process.execPath, '-e', JOB],
    {
      cwd: ROOT,
      env: { ...process.env, LOG: log, WHO: who, RUN_MS: String(runMs) },
      stdio: ['ignore', 'inherit', 'pipe'],
    },
  );
  let said = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    said += chunk.toString();
  });
  return new Promise((resolve) =>
    child.on('close', (code) => {
      for (const line of said.split('\n').filter(Boolean))
        console.log(`  (${who}'s etcdkit) ${line}`);
      resolve(code);
    }),
  );
}

/** The log's lines since `from` (a line count), each `WHO WHAT...`. */
const lines = (from = 0) => readFileSync(log, 'utf8').split('\n').filter(Boolean).slice(from);
/** The most commands running at once in `entries` (starts minus ends, in order). */
function mostAtOnce(entries: readonly string[]): number {
  let running = 0;
  let most = 0;
  for (const entry of entries) {
    if (/ start /.test(entry)) most = Math.max(most, ++running);
    if (/ (end|got SIGTERM)$/.test(entry)) running--;
  }
  return most;
}

const { etcd, endpoints, close } = await connect(
  commandLine('run-exactly-one', ENDPOINTS_FLAG).endpoints,
);
const flags = [`--endpoints=${endpoints.join(',')}`];
const failures: string[] = [];
try {
  console.log('\n-- 1. etcdkit lock, three at once');
  const locks = await Promise.all(
    ['host-a', 'host-b', 'host-c'].map((who) => etcdkit(who, ['lock', ...flags, 'jobs/nightly'])),
  );
  const locked = lines();
  for (const line of locked) console.log(`  ${line}`);
  const tokens = locked.map((line) => /token=(\d+)/.exec(line)?.[1]).filter((t) => t !== undefined);
  console.log(`exit statuses ${locks.join(', ')}; at most ${mostAtOnce(locked)} running at once`);
  if (mostAtOnce(locked) !== 1 || locks.some((code) => code !== 0)) failures.push('lock');
  if (tokens.some((token, i) => i > 0 && BigInt(token) <= BigInt(tokens[i - 1] ?? 0))) {
    failures.push('fencing tokens');
  }

  console.log('\n-- 2. the lock is lost while its command runs');
  const before = lines().length;
  const lost = etcdkit('host-a', ['lock', '--ttl=5', ...flags, 'jobs/nightly'], 60_000);
  let started: string | undefined;
  while (started === undefined) {
    await sleep(20);
    started = lines(before).find((line) => line.includes(' start '));
  }
  const lease = BigInt(`0x${/lease=([0-9a-f]+)/.exec(started)?.[1]}`);
  console.log(
    `  ${started}; revoking its lease ${lease.toString(16)} (as etcdctl lease revoke would)`,
  );
  await etcd.lease.revoke(lease);
  const status = await lost;
  for (const line of lines(before + 1)) console.log(`  ${line}`);
  console.log(`etcdkit exited with ${status} (79: the hold was lost, CMD was stopped)`);
  if (status !== 79 || !lines(before).includes('host-a got SIGTERM')) failures.push('loss');

  console.log('\n-- 3. etcdkit semaphore --limit 2, three at once');
  const fromSemaphore = lines().length;
  const permits = await Promise.all(
    ['host-a', 'host-b', 'host-c'].map((who) =>
      etcdkit(who, ['semaphore', '--limit=2', ...flags, 'backups'], 2_000),
    ),
  );
  const semaphore = lines(fromSemaphore);
  for (const line of semaphore) console.log(`  ${line}`);
  console.log(
    `exit statuses ${permits.join(', ')}; at most ${mostAtOnce(semaphore)} running at once`,
  );
  if (mostAtOnce(semaphore) > 2 || permits.some((code) => code !== 0)) failures.push('semaphore');

  console.log('\n-- 4. etcdkit elect, two candidates');
  const fromElect = lines().length;
  const elections = await Promise.all(
    ['host-a', 'host-b'].map((who) =>
      etcdkit(who, ['elect', `--value=${who}`, ...flags, 'services/ingest']),
    ),
  );
  const elected = lines(fromElect);
  for (const line of elected) console.log(`  ${line}`);
  console.log(
    `exit statuses ${elections.join(', ')}; at most ${mostAtOnce(elected)} leading at once`,
  );
  if (mostAtOnce(elected) !== 1 || elections.some((code) => code !== 0)) failures.push('elect');

  if (failures.length === 0) console.log('run-exactly-one OK');
  else {
    console.log(`run-exactly-one FAILED: ${failures.join(', ')}`);
    process.exitCode = 1;
  }
} finally {
  await close();
  rmSync(dir, { recursive: true, force: true });
}
