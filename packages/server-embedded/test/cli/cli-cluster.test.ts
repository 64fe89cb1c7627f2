// The etcdkit-server CLI serving a simulated cluster (--simulated-members), as a child process: the
// startup lines name every member, @etcdkit/client reaches the cluster through every endpoint, the
// commands read from stdin stop, partition, heal and elect members with the effect a client sees,
// bad commands are answered without stopping anything, the end of stdin stops nothing, refused
// flag combinations exit 1, and SIGTERM or SIGINT stop every member and exit 0.
import { createServer } from 'node:net';
import { Etcd } from '@etcdkit/client';
import { freePort, makeTestCertificates } from '@etcdkit/testkit';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectOutcome, portIsFree } from '../support/net.js';
import {
  type CliClusterProcess,
  type PrintedMember,
  runCli,
  startCliCluster,
  stopAllCliProcesses,
} from './cli-process.js';

afterEach(stopAllCliProcesses);

const clients: Etcd[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((etcd) => etcd.close()));
});

/** A client of one member only, that tries each call once. */
function clientOf(member: PrintedMember, options: { requireLeader?: boolean } = {}): Etcd {
  const etcd = new Etcd({
    endpoints: [member.endpoint],
    retry: { maxAttempts: 1 },
    ...options,
  });
  clients.push(etcd);
  return etcd;
}

const idOf = (member: PrintedMember): bigint => BigInt(`0x${member.id}`);
const portOf = (member: PrintedMember): number => Number(new URL(member.endpoint).port);

/** Whether a process with this pid still exists. */
function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sends `signal`, expects exit 0 and that the process and its ports are gone. */
async function stopWith(cli: CliClusterProcess, signal: NodeJS.Signals): Promise<void> {
  cli.child.kill(signal);
  const exit = await cli.exited;
  expect(exit).toMatchObject({ code: 0, signal: null });
  expect(processExists(cli.child.pid!)).toBe(false);
  for (const member of cli.members) expect(await portIsFree(portOf(member))).toBe(true);
}

describe('etcdkit-server --simulated-members', () => {
  it('prints every member name, id and client URL, serves one cluster behind every endpoint, and on SIGTERM stops every member with exit 0', async () => {
    const cli = await startCliCluster(3);
    const { members } = cli;
    expect(members.map((member) => member.name)).toEqual(['member0', 'member1', 'member2']);
    for (const member of members) {
      expect(member.id).toMatch(/^[0-9a-f]{1,16}$/);
      expect(member.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    }
    expect(new Set(members.map((member) => member.id)).size).toBe(3);
    expect(new Set(members.map((member) => member.endpoint)).size).toBe(3);
    expect(cli.stdoutLines()).toEqual([
      ...members.map((member) => `member ${member.name} ${member.id} ${member.endpoint}`),
      `endpoints ${members.map((member) => member.endpoint).join(',')}`,
      'ready: one command a line on stdin; help lists them',
    ]);

    await clientOf(members[1]!).put('shared', 'from member1');
    for (const member of members) {
      const etcd = clientOf(member);
      const status = await etcd.maintenance.status();
      expect(status.memberId).toBe(idOf(member));
      expect(status.leader).toBe(idOf(members[0]!));
      expect((await etcd.get('shared'))?.text()).toBe('from member1');
      const list = await etcd.cluster.memberList();
      const listed = list.members
        .map((m) => [m.name, m.id, m.clientUrls])
        .sort(([a], [b]) => String(a).localeCompare(String(b)));
      expect(listed).toEqual(members.map((m) => [m.name, idOf(m), [m.endpoint]]));
    }
    expect(cli.logs().find((line) => line.msg === 'ready to serve client requests')).toMatchObject({
      endpoints: members.map((member) => member.endpoint),
    });

    await stopWith(cli, 'SIGTERM');
    expect(
      cli
        .logs()
        .map((line) => line.msg)
        .slice(-3),
    ).toEqual([
      'received signal; shutting down',
      'stopping embedded cluster',
      'stopped embedded cluster',
    ]);
  });

  it('stop <member>: its port refuses connections and the next member leads; start brings it back under that leader', async () => {
    const cli = await startCliCluster(3);
    const [member0, member1, member2] = cli.members as [
      PrintedMember,
      PrintedMember,
      PrintedMember,
    ];

    expect(await cli.command('stop member0')).toBe(
      'ok leader=member1 term=3 member0=stopped member1=leader member2=follower',
    );
    expect(await connectOutcome(portOf(member0))).toBe('ECONNREFUSED');
    const status = await clientOf(member2).maintenance.status();
    expect(status.leader).toBe(idOf(member1));
    expect(status.raftTerm).toBe(3n);
    await clientOf(member1, { requireLeader: true }).put('k', 'written without member0');

    expect(await cli.command('start member0')).toBe(
      'ok leader=member1 term=3 member0=follower member1=leader member2=follower',
    );
    const back = clientOf(member0);
    expect((await back.maintenance.status()).leader).toBe(idOf(member1));
    expect((await back.get('k'))?.text()).toBe('written without member0');

    await stopWith(cli, 'SIGINT');
  });

  it('partition <member> leaves it without a leader until heal; elect <member> moves the leadership', async () => {
    const cli = await startCliCluster(3);
    const [member0, , member2] = cli.members as [PrintedMember, PrintedMember, PrintedMember];

    // A member named by its id, as the startup lines print it.
    expect(await cli.command(`partition ${member2.id}`)).toBe(
      'ok leader=member0 term=2 member0=leader member1=follower member2=partitioned',
    );
    const cutOff = clientOf(member2, { requireLeader: true });
    await expect(cutOff.put('k', 'v')).rejects.toThrow('etcdserver: no leader');
    expect(await cli.command('heal')).toBe(
      'ok leader=member0 term=2 member0=leader member1=follower member2=follower',
    );
    await cutOff.put('k', 'v');

    expect(await cli.command('elect member2')).toBe(
      'ok leader=member2 term=3 member0=follower member1=follower member2=leader',
    );
    const status = await clientOf(member0).maintenance.status();
    expect(status.leader).toBe(idOf(member2));
    expect(status.raftTerm).toBe(3n);

    // Two of three cut off: no quorum, nobody leads.
    await cli.command('partition member0');
    expect(await cli.command('partition member1')).toBe(
      'ok leader=none term=3 member0=partitioned member1=partitioned member2=no-leader',
    );
    expect((await clientOf(member2).maintenance.status()).leader).toBe(0n);
    await stopWith(cli, 'SIGTERM');
  });

  it('answers bad commands with an error line and goes on serving', async () => {
    const cli = await startCliCluster(3);
    const [, member1] = cli.members as [PrintedMember, PrintedMember, PrintedMember];

    expect(await cli.command('frobnicate member1')).toBe(
      'error unknown command "frobnicate": status, stop, start, restart, partition, heal, pause, resume, elect, join, help',
    );
    expect(await cli.command('stop')).toBe('error usage: stop <member>');
    expect(await cli.command('pause member1 now')).toBe('error usage: pause <member>');
    expect(await cli.command('status member1')).toBe('error usage: status');
    expect(await cli.command('stop member7')).toBe(
      'error unknown member "member7": member0, member1, member2, or a member id',
    );
    await cli.command('stop member0');
    expect(await cli.command('elect member0')).toBe(
      'error member0 cannot lead: it is stopped, partitioned or paused',
    );
    expect(await cli.command('help')).toMatch(/^ok commands: status, stop <member>, /);

    expect(await cli.command('status')).toBe(
      'ok leader=member1 term=3 member0=stopped member1=leader member2=follower',
    );
    await clientOf(member1).put('still', 'serving');
    await stopWith(cli, 'SIGTERM');
  });

  it('keeps serving after stdin ends, until SIGTERM', async () => {
    const cli = await startCliCluster(2);
    cli.child.stdin!.end();
    await vi.waitFor(
      () =>
        expect(cli.logs().map((line) => line.msg)).toContain(
          'stdin closed: no more commands; the cluster serves until SIGINT or SIGTERM',
        ),
      { timeout: 20_000, interval: 20 },
    );
    for (const member of cli.members) await clientOf(member).put('after-eof', member.name);
    expect(cli.child.exitCode).toBeNull();
    await stopWith(cli, 'SIGTERM');
  });

  it('serves every member over mutual TLS from --cert-file, --key-file, --trusted-ca-file and --client-cert-auth', async () => {
    const certs = await makeTestCertificates();
    try {
      const cli = await startCliCluster(2, [
        '--listen-client-urls=https://127.0.0.1:0',
        `--cert-file=${certs.server.certFile}`,
        `--key-file=${certs.server.keyFile}`,
        `--trusted-ca-file=${certs.ca.certFile}`,
        '--client-cert-auth',
      ]);
      for (const member of cli.members) {
        expect(member.endpoint).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
        const etcd = new Etcd({ endpoints: [member.endpoint], tls: certs.clientTls });
        clients.push(etcd);
        expect((await etcd.maintenance.status()).memberId).toBe(idOf(member));
      }
      await stopWith(cli, 'SIGTERM');
    } finally {
      await certs.remove();
    }
  });

  it.each([
    [
      ['--data-dir', '/tmp/etcdkit-cli-cluster'],
      '--data-dir cannot be used with --simulated-members',
    ],
    [['--name', 'infra0'], '--name cannot be used with --simulated-members'],
    [['--simulated-members', '12'], '--simulated-members 12 is too many'],
  ])('refuses %j with exit 1 and says why', async (args, message) => {
    const exit = await runCli(['--simulated-members', '3', ...args]);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain(message);
    expect(exit.stdout).toBe('');
  });

  it("exits 1 when the first member's port is taken", async () => {
    const port = await freePort();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen({ host: '127.0.0.1', port }, resolve));
    try {
      const exit = await runCli([
        '--simulated-members=2',
        `--listen-client-urls=http://127.0.0.1:${port}`,
      ]);
      expect(exit.code).toBe(1);
      expect(exit.stderr).toContain('failed to start the simulated cluster');
      expect(exit.stderr).toContain('EADDRINUSE');
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
