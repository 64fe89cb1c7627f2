// `etcdkit semaphore --limit N`: at most N commands at once across supervisors.
import { readFileSync, writeFileSync } from 'node:fs';
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it, vi } from 'vitest';
import {
  type Running,
  SUPERVISOR_TEST_MS,
  startEtcdkit,
  until,
  untilAsync,
} from './support/etcdkit-process.js';
import { cliFixture } from './support/fixture.js';

// Each test starts supervisors through tsx (seconds each under load): the limit only stops a hang.
vi.setConfig({ testTimeout: SUPERVISOR_TEST_MS });

describeEachBackend('etcdkit semaphore', ({ backend, prefix }) => {
  const { etcd, endpoint, path } = cliFixture(backend);

  it('runs at most --limit commands at once', async () => {
    const name = `${prefix()}pool`;
    const log = path('log');
    const release = path('release');
    const lines = (): string[] => {
      try {
        return readFileSync(log, 'utf8').split('\n').filter(Boolean);
      } catch {
        return [];
      }
    };
    const supervisors: Running[] = [];
    for (let i = 0; i < 3; i++) {
      supervisors.push(
        startEtcdkit([
          'semaphore',
          `--endpoints=${endpoint()}`,
          '--limit=2',
          '--ttl=3',
          name,
          '--',
          'sh',
          '-c',
          `echo "start $$" >> '${log}'; while [ ! -e '${release}' ]; do sleep 0.05; done; echo "end $$" >> '${log}'`,
        ]),
      );
    }
    await until(() => lines().length === 2, 'two commands to start');
    // All three queued (the third supervisor's key written, however slow its start), the third
    // still waiting.
    await untilAsync(
      async () => (await etcd().count({ prefix: `${name}/` })) === 3n,
      'the third supervisor to queue',
    );
    expect(lines()).toHaveLength(2);
    writeFileSync(release, '');
    expect((await Promise.all(supervisors.map((s) => s.exited))).map((e) => e.code)).toEqual([
      0, 0, 0,
    ]);
    let running = 0;
    let most = 0;
    for (const line of lines()) {
      running += line.startsWith('start') ? 1 : -1;
      most = Math.max(most, running);
    }
    expect(lines()).toHaveLength(6);
    expect(most).toBe(2);
  });
});
