// `etcdkit lock`: three supervisors of one NAME whose commands append heartbeats to one file never
// run two commands at once, whether holders exit, lose their lease to a revoke, or stall (SIGSTOP)
// longer than the TTL; and the lock's exit statuses, environment and signals.
import { writeFileSync } from 'node:fs';
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it, vi } from 'vitest';
import { EXIT_STATUS } from '../src/exit-status.js';
import {
  heartbeats,
  oneAtATime,
  type Running,
  readBeats,
  runsOf,
  SUPERVISOR_TEST_MS,
  startEtcdctl,
  startEtcdkit,
  until,
} from './support/etcdkit-process.js';
import { cliFixture } from './support/fixture.js';

// Each test starts supervisors through tsx (seconds each under load): the limit only stops a hang.
vi.setConfig({ testTimeout: SUPERVISOR_TEST_MS });

const TTL = ['--ttl', '3', '--kill-grace', '0.5'];

describeEachBackend('etcdkit lock', ({ name, backend, prefix }) => {
  const { etcd, endpoint, path, queued } = cliFixture(backend);

  const lock = (lockName: string, command: readonly string[], flags = TTL): Running =>
    startEtcdkit(['lock', `--endpoints=${endpoint()}`, ...flags, lockName, '--', ...command]);
  /**
   * Starts a holder running `first`, then two waiters running `rest` once it beats, each queued
   * before the next starts (FIFO order known).
   */
  async function threeSupervisors(
    lockName: string,
    file: string,
    first: readonly string[],
    rest: readonly string[],
  ): Promise<Running[]> {
    const holder = lock(lockName, first);
    await until(() => readBeats(file).length > 0, 'the first holder to beat');
    const second = lock(lockName, rest);
    await queued(lockName, 2);
    const third = lock(lockName, rest);
    await queued(lockName, 3);
    return [holder, second, third];
  }

  function expectOneAtATime(file: string, holders: number): void {
    const runs = runsOf(readBeats(file));
    expect(runs).toHaveLength(holders);
    expect(oneAtATime(runs), JSON.stringify(runs)).toBe(true);
  }

  it('runs one command at a time while holders exit normally', async () => {
    const file = path('beats');
    const lockName = `${prefix()}normal`;
    const release = path('release');
    const supervisors = await threeSupervisors(
      lockName,
      file,
      heartbeats(file, { until: release }),
      heartbeats(file, 6),
    );
    writeFileSync(release, '');
    const exits = await Promise.all(supervisors.map((s) => s.exited));
    expect(exits.map((exit) => exit.code)).toEqual([0, 0, 0]);
    expectOneAtATime(file, 3);
    expect(
      runsOf(readBeats(file))
        .map((run) => run.beats)
        .slice(1),
    ).toEqual([6, 6]);
    expect(await etcd().count({ prefix: `${lockName}/` })).toBe(0n);
  });

  it("stops the holder's command when its lease is revoked, then the next one runs", async () => {
    const file = path('beats');
    const lockName = `${prefix()}revoked`;
    const [holder, ...waiters] = await threeSupervisors(
      lockName,
      file,
      heartbeats(file, 'forever'),
      heartbeats(file, 4),
    );
    const lease = readBeats(file)[0]!.lease;
    if (name === 'etcd') {
      const revoke = await startEtcdctl(endpoint(), ['lease', 'revoke', lease]).exited;
      expect(revoke.stdout).toContain('revoked');
    } else {
      await etcd().lease.revoke(BigInt(`0x${lease}`));
    }
    const holderExit = await holder!.exited;
    expect(holderExit.code).toBe(EXIT_STATUS.lost);
    expect(holderExit.stderr).toContain(`the lock ${lockName} was lost`);
    expect((await Promise.all(waiters.map((w) => w.exited))).map((e) => e.code)).toEqual([0, 0]);
    expectOneAtATime(file, 3);
  });

  it('stops the command of a supervisor stalled (SIGSTOP) past its TTL before the lock passes on', async () => {
    const file = path('beats');
    const lockName = `${prefix()}stalled`;
    const [holder, ...waiters] = await threeSupervisors(
      lockName,
      file,
      heartbeats(file, 'forever'),
      heartbeats(file, 4),
    );
    holder!.child.kill('SIGSTOP');
    // The lease expires (3 s TTL) and the next holder runs while the supervisor is still stopped.
    await until(() => runsOf(readBeats(file)).length >= 2, 'the next holder to beat');
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    holder!.child.kill('SIGCONT');
    const holderExit = await holder!.exited;
    expect(holderExit.code).toBe(EXIT_STATUS.lost);
    expect(holderExit.stderr).toContain('its lease could not be confirmed in time');
    expect((await Promise.all(waiters.map((w) => w.exited))).map((e) => e.code)).toEqual([0, 0]);
    expectOneAtATime(file, 3);
  });

  it("exits with CMD's status and gives CMD the lock's key, revision and fencing token", async () => {
    const lockName = `${prefix()}env`;
    const exit = await lock(lockName, [
      'sh',
      '-c',
      'echo "$ETCD_LOCK_KEY|$ETCD_LOCK_REV|$ETCDKIT_KEY|$ETCDKIT_FENCING_TOKEN|$ETCDKIT_LEASE_ID"; exit 7',
    ]).exited;
    expect(exit.code).toBe(7);
    const [key, rev, ownKey, token, lease] = exit.stdout.trim().split('|');
    expect(key).toBe(`${lockName}/${lease}`);
    expect(ownKey).toBe(key);
    // The lock was taken in one txn when free: the response's revision is the key's creation.
    expect(rev).toBe(token);
    expect(BigInt(token!)).toBeGreaterThan(0n);
    expect(await etcd().count({ prefix: `${lockName}/` })).toBe(0n);
  });

  it('passes SIGTERM and SIGINT to CMD and releases the lock after it exits', async () => {
    const lockName = `${prefix()}signals`;
    const trapping = lock(lockName, [
      'sh',
      '-c',
      'trap "echo got-term; exit 5" TERM; echo ready; while true; do sleep 0.05; done',
    ]);
    await until(() => trapping.stdout().includes('ready'), 'CMD to start');
    trapping.child.kill('SIGTERM');
    const trapped = await trapping.exited;
    expect(trapped.stdout).toContain('got-term');
    expect(trapped.code).toBe(5);
    const plain = lock(lockName, ['sh', '-c', 'echo ready; while true; do sleep 0.05; done']);
    await until(() => plain.stdout().includes('ready'), 'CMD to start');
    plain.child.kill('SIGINT');
    expect((await plain.exited).code).toBe(128 + 2);
    expect(await etcd().count({ prefix: `${lockName}/` })).toBe(0n);
  });

  it('exits 75 when --wait-timeout (or 0) passes, 127 for a missing CMD, 64 for bad flags', async () => {
    const lockName = `${prefix()}statuses`;
    const holder = lock(lockName, ['sh', '-c', 'echo ready; sleep 30']);
    await until(() => holder.stdout().includes('ready'), 'the holder');
    const timedOut = await lock(lockName, ['true'], [...TTL, '--wait-timeout', '0.5']).exited;
    expect(timedOut.code).toBe(EXIT_STATUS.waitTimeout);
    expect(timedOut.stderr).toContain('--wait-timeout');
    const tried = await lock(lockName, ['true'], [...TTL, '--wait-timeout', '0']).exited;
    expect(tried.code).toBe(EXIT_STATUS.waitTimeout);
    expect(tried.stderr).toContain('is held by another');
    holder.child.kill('SIGTERM');
    await holder.exited;
    const missing = await lock(lockName, ['etcdkit-no-such-command']).exited;
    expect(missing.code).toBe(EXIT_STATUS.notFound);
    const badTtl = await lock(lockName, ['true'], ['--ttl', '1.5']).exited;
    expect(badTtl.code).toBe(EXIT_STATUS.usage);
    expect(badTtl.stderr).toContain('--ttl');
    const tooLongGrace = await lock(lockName, ['true'], ['--ttl', '3', '--kill-grace', '2']).exited;
    expect(tooLongGrace.code).toBe(EXIT_STATUS.usage);
    expect(tooLongGrace.stderr).toContain('--kill-grace');
  });

  it('without CMD prints the key and an empty value and holds until SIGINT, as etcdctl', async () => {
    const lockName = `${prefix()}bare`;
    const bare = startEtcdkit(['lock', `--endpoints=${endpoint()}`, lockName]);
    await until(() => bare.stdout().split('\n').length >= 3, 'the key to be printed');
    const { kvs } = await etcd().range({ prefix: `${lockName}/` });
    expect(bare.stdout()).toBe(`${kvs[0]!.keyText()}\n\n`);
    bare.child.kill('SIGINT');
    expect((await bare.exited).code).toBe(0);
    expect(await etcd().count({ prefix: `${lockName}/` })).toBe(0n);
  });

  it('reads the endpoints from ETCDCTL_ENDPOINTS; takes a free lock with --wait-timeout 0', async () => {
    const flags = ['--ttl', '3', '--wait-timeout', '0'];
    const exit = await startEtcdkit(['lock', ...flags, `${prefix()}env-var`, '--', 'true'], {
      ETCDCTL_ENDPOINTS: endpoint(),
    }).exited;
    expect(exit.code).toBe(0);
  });
});
