import { describe, expect, it } from 'vitest';
import { parseCli, UsageError } from '../src/cli/args.js';
import { EXIT, runCli } from '../src/cli/run.js';

async function run(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
  });
  return { code, stdout, stderr };
}

describe('etcdkit-verify command line', () => {
  it('reads every flag', () => {
    const request = parseCli([
      '--workload',
      'lock',
      '--fenced',
      '--etcd-binary',
      '/usr/bin/etcd',
      '--members',
      '3',
      '--faults',
      'pause,client-pause',
      '--time',
      '1.5m',
      '--clients',
      '5',
      '--report',
      'out.html',
      '--json',
    ]);
    expect(request).toEqual({
      options: {
        workload: 'lock',
        target: { kind: 'etcd', binary: '/usr/bin/etcd', members: 3 },
        durationMs: 90_000,
        maxOps: undefined,
        clients: 5,
        faults: ['pause', 'client-pause'],
        serializable: false,
        fenced: true,
        checkBudgetMs: undefined,
      },
      fenced: true,
      report: 'out.html',
      historyFile: undefined,
      json: true,
    });
    expect(
      parseCli([
        '--workload',
        'register',
        '--endpoints',
        'http://127.0.0.1:2379,http://127.0.0.1:22379',
      ])?.options.target,
    ).toEqual({
      kind: 'endpoints',
      endpoints: ['http://127.0.0.1:2379', 'http://127.0.0.1:22379'],
    });
    expect(parseCli(['--help'])).toBeUndefined();
  });

  it('rejects bad usage with a clear message and exit code 64', async () => {
    const cases: [string[], string][] = [
      [[], '--workload is required'],
      [
        ['--workload', 'bank'],
        '--workload must be one of register, txn, lock, election, watch, got "bank"',
      ],
      [
        ['--workload', 'txn', '--time', '10'],
        '--time takes a duration such as 500ms, 10s or 2m, got "10"',
      ],
      [['--workload', 'txn', '--faults', 'meteor'], 'unknown fault "meteor"'],
      [
        ['--workload', 'txn', '--embedded', '--endpoints', 'http://127.0.0.1:2379'],
        'give one of --endpoints',
      ],
      [['--workload', 'txn', '--clients', '0'], '--clients takes a positive integer, got "0"'],
    ];
    for (const [argv, message] of cases) {
      expect(() => parseCli(argv)).toThrow(UsageError);
      expect(() => parseCli(argv)).toThrow(message);
      const { code, stderr } = await run(argv);
      expect(code).toBe(EXIT.usage);
      expect(stderr).toContain(message);
    }
  });

  it('reports a typed failure on one line with exit code 70', async () => {
    const { code, stdout, stderr } = await run([
      '--workload',
      'lock',
      '--endpoints',
      'http://127.0.0.1:2379',
      '--faults',
      'lease-expiry',
    ]);
    expect(code).toBe(EXIT.failed);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'etcdkit-verify: FaultUnavailableError: lease-expiry needs an embedded target on a virtual clock (--embedded), not endpoints http://127.0.0.1:2379\n',
    );
  });

  it('prints one JSON object as the last line and exits 0 when valid', {
    timeout: 60_000,
  }, async () => {
    const { code, stdout } = await run([
      '--workload',
      'register',
      '--embedded',
      '--ops',
      '20',
      '--time',
      '50s',
      '--clients',
      '2',
      '--json',
    ]);
    expect(code).toBe(EXIT.valid);
    const last = JSON.parse(stdout.trimEnd().split('\n').at(-1)!);
    expect(last.valid).toBe(true);
    expect(last.workload).toBe('register');
    expect(last.anomalies).toEqual([]);
    expect(last.ops).toBe(20);
    expect(last.ops).toBe(last.outcomes.ok + last.outcomes.fail + last.outcomes.unknown);
  });
});
