// The etcdkit-server CLI as a child process: it serves on the URL it is given, logs like a server,
// stops cleanly on SIGTERM and SIGINT (exit 0, port released), and refuses bad command lines with
// etcd's exit codes (2: the flags do not parse; 1: the server cannot start).
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd, op } from '@etcdkit/client';
import { makeTestCertificates } from '@etcdkit/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { portIsFree } from '../support/net.js';
import { runCli, startCli, stopAllCliProcesses } from './cli-process.js';

afterEach(stopAllCliProcesses);

async function withClient<T>(
  endpoint: string,
  run: (etcd: Etcd) => Promise<T>,
  tls?: ConstructorParameters<typeof Etcd>[0]['tls'],
): Promise<T> {
  const etcd = new Etcd({ endpoints: [endpoint], ...(tls === undefined ? {} : { tls }) });
  try {
    return await run(etcd);
  } finally {
    await etcd.close();
  }
}

describe('etcdkit-server', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    'serves clients, logs its start and ready lines, and on %s stops with exit 0 and frees the port',
    async (signal) => {
      const cli = await startCli(['--name', 'cli-test']);
      const revision = await withClient(cli.endpoint, async (etcd) => {
        await etcd.put('k', 'v');
        expect((await etcd.get('k'))?.text()).toBe('v');
        const { members } = await etcd.cluster.memberList();
        expect(members.map((member) => [member.name, member.clientUrls])).toEqual([
          ['cli-test', [cli.endpoint]],
        ]);
        return (await etcd.get('k'))!.modRevision;
      });
      expect(revision).toBe(2n);

      const logs = cli.logs();
      expect(logs[0]).toMatchObject({
        level: 'info',
        msg: 'starting etcdkit-server',
        'etcdkit-version': '0.1.0',
        'etcd-version': '3.5.30',
      });
      expect(logs.find((line) => line.msg === 'started etcd server')).toMatchObject({
        name: 'cli-test',
        'listen-client-urls': [cli.endpoint],
        'advertise-client-urls': [cli.endpoint],
      });
      expect(logs.find((line) => line.msg === 'ready to serve client requests')).toMatchObject({
        endpoints: [cli.endpoint],
      });

      cli.child.kill(signal);
      const exit = await cli.exited;
      expect(exit.code).toBe(0);
      expect(exit.signal).toBeNull();
      const after = cli.logs().map((line) => line.msg);
      expect(after.slice(-3)).toEqual([
        'received signal; shutting down',
        'stopping etcd server',
        'stopped etcd server',
      ]);
      expect(
        cli.logs().find((line) => line.msg === 'received signal; shutting down'),
      ).toMatchObject({ signal });
      expect(await portIsFree(cli.port)).toBe(true);
    },
  );

  it('closes client connections when it stops', async () => {
    const cli = await startCli();
    // Short calls, so the read after the stop fails fast; the put before it, on a loaded machine,
    // gets the time it needs to dial the new process and be answered.
    const etcd = new Etcd({
      endpoints: [cli.endpoint],
      dialTimeoutMs: 5_000,
      callTimeoutMs: 1_000,
    });
    try {
      await etcd.put('k', 'v', { timeoutMs: 20_000 });
      cli.child.kill('SIGTERM');
      expect((await cli.exited).code).toBe(0);
      await expect(etcd.get('k')).rejects.toThrow();
    } finally {
      await etcd.close();
    }
  });

  it('refuses an unknown flag with exit 2 and the usage, like etcd', async () => {
    const exit = await runCli(['--no-such-flag']);
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain('flag provided but not defined: --no-such-flag');
    expect(exit.stderr).toContain('Usage: etcdkit-server [flags]');
    expect(exit.stdout).toBe('');
  });

  it.each([
    [['--max-txn-ops', 'many'], 'invalid value "many" for flag --max-txn-ops'],
    [['--name'], 'flag needs an argument: --name'],
    [['--client-cert-auth', 'false'], "'false' is not a valid flag"],
    [['--auto-tls'], '--auto-tls is not supported by etcdkit-server'],
  ])('refuses %j with exit 2', async (args, message) => {
    const exit = await runCli(args);
    expect(exit.code).toBe(2);
    expect(exit.stderr).toContain(message);
  });

  it.each([
    [['--listen-client-urls', 'https://127.0.0.1:0'], 'TLS key/cert must be provided'],
    [['--listen-client-urls', 'http://example.com:2379'], 'expected IP in URL for binding'],
    [['--auto-compaction-mode', 'hourly'], 'unsupported --auto-compaction-mode "hourly"'],
    [['--log-level', 'loud'], 'unknown --log-level "loud"'],
    [
      ['--cert-file', '/nonexistent.crt', '--key-file', '/nonexistent.key'],
      'cannot read --cert-file',
    ],
  ])('cannot start with %j: exit 1', async (args, message) => {
    const exit = await runCli(args);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain(message);
  });

  it('exits 1 when the port is taken', async () => {
    const first = await startCli();
    const exit = await runCli(['--listen-client-urls', first.endpoint]);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain('failed to start etcd server');
    expect(exit.stderr).toContain('EADDRINUSE');
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
  });

  it('prints its version and the etcd version it answers as', async () => {
    const exit = await runCli(['--version']);
    expect(exit.code).toBe(0);
    expect(exit.stdout.split('\n').slice(0, 2)).toEqual([
      'etcdkit-server Version: 0.1.0',
      'etcd Version: 3.5.30',
    ]);
    const chosen = await runCli(['--etcd-version', '3.4', '--version']);
    expect(chosen.stdout.split('\n')[1]).toBe('etcd Version: 3.4.23');
    const unknown = await runCli(['--etcd-version', '3.3', '--version']);
    expect([unknown.code, unknown.stderr]).toEqual([
      1,
      "etcdkit-server: --etcd-version: unknown etcd version \"3.3\": the embedded server answers as '3.4', '3.5', '3.6', '3.7'\n",
    ]);
  });

  it('prints the help with every supported flag', async () => {
    const exit = await runCli(['--help']);
    expect(exit.code).toBe(0);
    for (const flag of [
      '--name',
      '--listen-client-urls',
      '--advertise-client-urls',
      '--cert-file',
      '--key-file',
      '--trusted-ca-file',
      '--client-cert-auth',
      '--max-txn-ops',
      '--max-request-bytes',
      '--quota-backend-bytes',
      '--auto-compaction-retention',
      '--auto-compaction-mode',
      '--experimental-watch-progress-notify-interval',
      '--log-level',
      '--data-dir',
      '--simulated-members',
    ]) {
      expect(exit.stdout).toContain(flag);
    }
    expect((await runCli(['-h'])).stdout).toBe(exit.stdout);
  });

  it('keeps its data in --data-dir across a stop and a new start', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'etcdkit-cli-data-'));
    try {
      const first = await startCli([`--data-dir=${dir}`]);
      await withClient(first.endpoint, (etcd) => etcd.put('kept', 'yes'));
      first.child.kill('SIGTERM');
      expect((await first.exited).code).toBe(0);

      const second = await startCli(['--data-dir', dir]);
      await withClient(second.endpoint, async (etcd) => {
        const kept = await etcd.get('kept');
        expect(kept?.text()).toBe('yes');
        expect(kept?.modRevision).toBe(2n);
      });
      second.child.kill('SIGTERM');
      expect((await second.exited).code).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("refuses a --data-dir holding a real etcd's member/ tree: exit 1, one line naming it", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'etcdkit-cli-etcd-dir-'));
    try {
      // The layout etcd writes: member/wal/<seq>-<index>.wal and member/snap/db.
      await mkdir(join(dir, 'member', 'wal'), { recursive: true });
      await mkdir(join(dir, 'member', 'snap'));
      await writeFile(join(dir, 'member', 'wal', '0000000000000000-0000000000000000.wal'), '');
      await writeFile(join(dir, 'member', 'snap', 'db'), '');
      const exit = await runCli(['--listen-client-urls', 'http://127.0.0.1:0', '--data-dir', dir]);
      expect(exit.code).toBe(1);
      const errors = exit.stderr
        .split('\n')
        .filter((line) => line.includes('"level":"error"'))
        .map((line) => JSON.parse(line) as { msg: string; error: string });
      expect(errors).toEqual([
        {
          ...errors[0],
          msg: 'failed to start etcd server',
          error: `data dir ${dir} holds files that are not etcdkit-server's (member/): it looks like a real etcd's data dir (member/); etcdkit-server cannot read etcd's files; refusing to start and writing nothing into it (give an empty or new directory)`,
        },
      ]);
      expect(exit.stderr).not.toContain('recovered the data dir');
      expect((await readdir(dir)).sort()).toEqual(['member']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('applies limits and names from flags, and flags from ETCD_* variables', async () => {
    const cli = await startCli(
      ['--max-txn-ops=2', '--advertise-client-urls', 'http://etcd.example:2379'],
      { env: { ETCD_NAME: 'from-env', ETCD_MAX_TXN_OPS: '100' } },
    );
    await withClient(cli.endpoint, async (etcd) => {
      await expect(
        etcd.txn().then(op.put('a', '1'), op.put('b', '2'), op.put('c', '3')).commit(),
      ).rejects.toThrow('etcdserver: too many operations in txn request');
      const { members } = await etcd.cluster.memberList();
      expect(members.map((member) => [member.name, member.clientUrls])).toEqual([
        ['from-env', ['http://etcd.example:2379']],
      ]);
    });
    cli.child.kill('SIGTERM');
    expect((await cli.exited).code).toBe(0);
  });

  it('serves mutual TLS from --cert-file, --key-file, --trusted-ca-file and --client-cert-auth', async () => {
    const certs = await makeTestCertificates();
    try {
      const cli = await startCli(
        [
          '--cert-file',
          certs.server.certFile,
          '--key-file',
          certs.server.keyFile,
          '--trusted-ca-file',
          certs.ca.certFile,
          '--client-cert-auth',
        ],
        { scheme: 'https' },
      );
      expect(cli.endpoint.startsWith('https://')).toBe(true);
      await withClient(cli.endpoint, (etcd) => etcd.put('secure', 'yes'), certs.clientTls);
      const refused = new Etcd({
        endpoints: [cli.endpoint],
        tls: { ca: certs.ca.cert },
        dialTimeoutMs: 500,
        callTimeoutMs: 1_500,
      });
      await expect(refused.get('secure')).rejects.toThrow();
      await refused.close();
      cli.child.kill('SIGINT');
      expect((await cli.exited).code).toBe(0);
    } finally {
      await certs.remove();
    }
  });
});
