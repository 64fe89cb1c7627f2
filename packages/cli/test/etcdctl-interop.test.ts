// `etcdkit lock` and `etcdctl lock` on one NAME: one lock (Go's layout), mutual exclusion both ways
// and one FIFO queue.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it, vi } from 'vitest';
import { EXIT_STATUS } from '../src/exit-status.js';
import {
  SUPERVISOR_TEST_MS,
  startEtcdctl,
  startEtcdkit,
  until,
} from './support/etcdkit-process.js';
import { cliFixture } from './support/fixture.js';

// Each test starts supervisors through tsx (seconds each under load): the limit only stops a hang.
vi.setConfig({ testTimeout: SUPERVISOR_TEST_MS });

describeEachBackend('etcdkit lock with etcdctl lock', ({ backend, prefix }) => {
  const { endpoint, path, queued } = cliFixture(backend);
  it('excludes etcdctl lock and is excluded by it, in one FIFO queue', async () => {
    const lockName = `${prefix()}shared`;
    const ran = path('ran');
    const release = path('release');
    const first = startEtcdctl(endpoint(), ['lock', lockName]);
    await until(() => first.stdout().includes('\n'), 'etcdctl to hold the lock');
    const ours = startEtcdkit([
      'lock',
      `--endpoints=${endpoint()}`,
      '--ttl=3',
      lockName,
      '--',
      'sh',
      '-c',
      `echo "$ETCD_LOCK_KEY" > '${ran}'; while [ ! -e '${release}' ]; do sleep 0.05; done`,
    ]);
    await queued(lockName, 2);
    const last = startEtcdctl(endpoint(), ['lock', lockName]);
    await queued(lockName, 3);
    // etcdctl holds: etcdkit's CMD has not run.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(existsSync(ran)).toBe(false);
    first.child.kill('SIGINT');
    expect((await first.exited).code).toBe(0);
    await until(() => existsSync(ran) && readFileSync(ran, 'utf8') !== '', 'etcdkit to run CMD');
    const ourKey = readFileSync(ran, 'utf8').trim();
    expect(ourKey.startsWith(`${lockName}/`)).toBe(true);
    // etcdkit holds: the etcdctl queued behind it still waits.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(last.stdout()).toBe('');
    writeFileSync(release, '');
    expect((await ours.exited).code).toBe(0);
    await until(() => last.stdout().includes('\n'), 'the last etcdctl to hold the lock');
    const lastKey = last.stdout().split('\n')[0]!;
    expect(lastKey.startsWith(`${lockName}/`)).toBe(true);
    expect(lastKey).not.toBe(ourKey);
    // etcdctl holds again: etcdkit cannot get the lock.
    const excluded = await startEtcdkit([
      'lock',
      `--endpoints=${endpoint()}`,
      '--ttl=3',
      '--wait-timeout=0.5',
      lockName,
      '--',
      'true',
    ]).exited;
    expect(excluded.code).toBe(EXIT_STATUS.waitTimeout);
    last.child.kill('SIGINT');
    expect((await last.exited).code).toBe(0);
  });
});
