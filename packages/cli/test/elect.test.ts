// `etcdkit elect`: with --restart, three supervisors keep exactly one CMD running while leaders are
// killed one after another; and etcdctl's forms without CMD.
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it, vi } from 'vitest';
import {
  heartbeats,
  oneAtATime,
  type Running,
  readBeats,
  runsOf,
  SUPERVISOR_TEST_MS,
  startEtcdkit,
  until,
} from './support/etcdkit-process.js';
import { cliFixture } from './support/fixture.js';

// Each test starts supervisors through tsx (seconds each under load): the limit only stops a hang.
vi.setConfig({ testTimeout: SUPERVISOR_TEST_MS });

describeEachBackend('etcdkit elect', ({ backend, prefix }) => {
  const { etcd, endpoint, path, queued } = cliFixture(backend);

  it('keeps exactly one CMD running across three --restart supervisors while leaders are killed', async () => {
    const file = path('beats');
    const election = `${prefix()}daemon`;
    const supervisors = new Map<string, Running>();
    for (const who of ['a', 'b', 'c']) {
      supervisors.set(
        who,
        startEtcdkit(
          [
            'elect',
            `--endpoints=${endpoint()}`,
            '--restart',
            '--ttl=3',
            '--kill-grace=0.5',
            `--value=${who}`,
            election,
            '--',
            ...heartbeats(file, 'forever'),
          ],
          { WHO: who },
        ),
      );
      // Each one campaigns before the next starts: the order of succession is a, b, c.
      await queued(election, supervisors.size);
    }
    /** Waits for the `n`th leader's CMD to beat three times; returns that run. */
    const leader = async (n: number) => {
      await until(() => {
        const runs = runsOf(readBeats(file));
        return runs.length >= n && runs[n - 1]!.beats >= 3;
      }, `leader ${n}`);
      return runsOf(readBeats(file))[n - 1]!;
    };
    const first = await leader(1);
    expect(first.who).toBe('a');
    // The leader's supervisor dies: its watchdog stops CMD; b leads once a's lease expires.
    supervisors.get('a')!.child.kill('SIGKILL');
    const second = await leader(2);
    expect(second.who).toBe('b');
    // b's CMD dies: b resigns and campaigns again, behind c.
    process.kill(second.pid, 'SIGKILL');
    const third = await leader(3);
    expect(third.who).toBe('c');
    supervisors.get('c')!.child.kill('SIGKILL');
    const fourth = await leader(4);
    expect(fourth.who).toBe('b');
    const runs = runsOf(readBeats(file));
    expect(runs).toHaveLength(4);
    expect(oneAtATime(runs), JSON.stringify(runs)).toBe(true);
    // The one leader left keeps running, and stops with its supervisor.
    const beats = fourth.beats;
    await until(() => runsOf(readBeats(file))[3]!.beats > beats + 3, 'the last leader to beat on');
    supervisors.get('b')!.child.kill('SIGTERM');
    expect((await supervisors.get('b')!.exited).code).toBe(128 + 15);
    expect(await etcd().count({ prefix: `${election}/` })).toBe(0n);
  });

  it("gives CMD the leader's value and exits with CMD's status, resigning", async () => {
    const election = `${prefix()}once`;
    const exit = await startEtcdkit([
      'elect',
      `--endpoints=${endpoint()}`,
      '--ttl=3',
      '--value=node-1',
      election,
      '--',
      'sh',
      '-c',
      'echo "$ETCDKIT_KEY|$ETCDKIT_ELECTION_VALUE|$ETCDKIT_LEASE_ID"; exit 4',
    ]).exited;
    expect(exit.code).toBe(4);
    const [key, value, lease] = exit.stdout.trim().split('|');
    expect(key).toBe(`${election}/${lease}`);
    expect(value).toBe('node-1');
    expect(await etcd().count({ prefix: `${election}/` })).toBe(0n);
  });

  it('without CMD campaigns with the proposal and prints it, and -l prints the leader, as etcdctl', async () => {
    const election = `${prefix()}bare`;
    const candidate = startEtcdkit(['elect', `--endpoints=${endpoint()}`, election, 'proposal-1']);
    await until(() => candidate.stdout().split('\n').length >= 3, 'the leader key to be printed');
    const { kvs } = await etcd().range({ prefix: `${election}/` });
    expect(candidate.stdout()).toBe(`${kvs[0]!.keyText()}\nproposal-1\n`);
    const observer = startEtcdkit(['elect', `--endpoints=${endpoint()}`, '-l', election]);
    await until(() => observer.stdout().split('\n').length >= 3, 'the observer to print');
    expect(observer.stdout()).toBe(`${kvs[0]!.keyText()}\nproposal-1\n`);
    candidate.child.kill('SIGINT');
    expect((await candidate.exited).code).toBe(0);
    expect(await etcd().count({ prefix: `${election}/` })).toBe(0n);
    observer.child.kill('SIGINT');
    expect((await observer.exited).code).toBe(0);
  });
});
