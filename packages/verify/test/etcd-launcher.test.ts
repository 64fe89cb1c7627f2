// The launcher of the etcd targets against /usr/bin/etcd: a member or a cluster on loopback, the
// faults, and a stop that leaves neither processes nor data behind.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Etcd } from '@etcdkit/client';
import { afterEach, describe, expect, it } from 'vitest';
import { TargetUnavailableError } from '../src/errors.js';
import { type LaunchedEtcd, launchEtcd } from '../src/etcd-launcher.js';

const BINARY = '/usr/bin/etcd';
const TIMEOUT = 120_000;

let launched: LaunchedEtcd | undefined;
afterEach(async () => {
  await launched?.stop();
  launched = undefined;
});

/** Whether `pid` is a live process (a zombie counts as gone). */
async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat !== undefined && stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
}

/** Resolves once `pid` is gone (SIGKILL lands a moment after it is sent). */
async function gone(pid: number): Promise<void> {
  while (await alive(pid)) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** A client of one member only, with short deadlines. */
function clientOf(endpoint: string): Etcd {
  return new Etcd({ endpoints: [endpoint], callTimeoutMs: 1_000 });
}

describe('launchEtcd', () => {
  it('starts one member that keeps its data through kill -9, a restart and a pause', {
    timeout: TIMEOUT,
  }, async () => {
    const etcd = await launchEtcd({ binary: BINARY });
    launched = etcd;
    expect(etcd.version).toBe('3.4.23');
    expect(etcd.members.map((m) => m.name)).toEqual(['member0']);
    expect(etcd.endpoints).toEqual([etcd.members[0]!.endpoint]);
    expect(etcd.endpoints[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const member = etcd.members[0]!;
    const client = new Etcd({ endpoints: [...etcd.endpoints] });
    try {
      await client.put('launcher/a', '1');
      const first = member.pid!;
      await member.kill();
      expect(member.running).toBe(false);
      expect(await alive(first)).toBe(false);
      await member.start();
      expect(member.pid).not.toBe(first);
      expect((await client.get('launcher/a'))?.text()).toBe('1');
      await client.put('launcher/a', '2');
      await member.restart();
      expect((await client.get('launcher/a'))?.text()).toBe('2');

      await member.pause();
      const stat = await readFile(`/proc/${member.pid}/stat`, 'utf8');
      expect(stat.charAt(stat.lastIndexOf(')') + 2)).toBe('T');
      const paused = clientOf(member.endpoint);
      try {
        await expect(paused.get('launcher/a')).rejects.toThrow();
      } finally {
        member.resume();
        await paused.close();
      }
      expect((await client.get('launcher/a'))?.text()).toBe('2');
      expect(await etcd.leader()).toBe(member);
    } finally {
      await client.close();
    }
  });

  it('starts a 3-member cluster whose killed leader is replaced, then comes back', {
    timeout: TIMEOUT,
  }, async () => {
    const etcd = await launchEtcd({ binary: BINARY, members: 3 });
    launched = etcd;
    expect(etcd.members.map((m) => m.name)).toEqual(['member0', 'member1', 'member2']);
    expect(new Set(etcd.endpoints).size).toBe(3);
    const client = new Etcd({ endpoints: [...etcd.endpoints] });
    try {
      await client.put('launcher/c', 'before');
      const leader = await etcd.leader();
      await leader.kill();
      const next = await etcd.leader();
      expect(next).not.toBe(leader);
      await client.put('launcher/c', 'during');
      await leader.start();
      const back = clientOf(leader.endpoint);
      try {
        // A generous deadline here: the member back from the dead must first hear from the
        // leader, which a loaded run can make take longer than the short default's 1 s.
        expect((await back.get('launcher/c', { timeoutMs: 20_000 }))?.text()).toBe('during');
      } finally {
        await back.close();
      }
      const follower = etcd.members.find((m) => m !== next)!;
      await follower.restart();
      expect(follower.running).toBe(true);
      expect((await client.get('launcher/c'))?.text()).toBe('during');
    } finally {
      await client.close();
    }
  });

  it('stops every member, a paused one too, and removes the data', {
    timeout: TIMEOUT,
  }, async () => {
    const etcd = await launchEtcd({ binary: BINARY, members: 3 });
    const pids = etcd.members.map((m) => m.pid!);
    await etcd.members[1]!.pause();
    await etcd.members[2]!.kill();
    await etcd.stop();
    await etcd.stop();
    expect(etcd.members.map((m) => m.running)).toEqual([false, false, false]);
    expect(await Promise.all(pids.map(alive))).toEqual([false, false, false]);
    expect(existsSync(etcd.dir)).toBe(false);
    await expect(etcd.members[0]!.start()).rejects.toThrow(
      'the etcd processes were stopped and their data removed',
    );
  });

  it('refuses a binary that does not run with TargetUnavailableError', async () => {
    const error = await launchEtcd({ binary: '/nonexistent/etcd' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TargetUnavailableError);
    expect((error as TargetUnavailableError).code).toBe('TARGET_UNAVAILABLE');
    expect((error as TargetUnavailableError).target).toBe('etcd');
    expect((error as Error).message).toBe(
      'cannot run /nonexistent/etcd --version (spawnSync /nonexistent/etcd ENOENT)',
    );
  });

  it.each([
    ['exits without stopping them', 'exit', [0, null]],
    ['is ended by SIGTERM', 'wait', [null, 'SIGTERM']],
    ['is ended by SIGINT', 'wait', [null, 'SIGINT']],
  ] as const)(
    'kills the members when the process %s',
    { timeout: TIMEOUT },
    async (_, how, end) => {
      const child = spawn(
        process.execPath,
        [
          '--conditions=etcdkit-source',
          '--import',
          'tsx',
          fileURLToPath(new URL('./launcher-child.ts', import.meta.url)),
          '3',
          how,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const exited = once(child, 'exit');
      const [line] = (await once(child.stdout!, 'data')) as [Buffer];
      const { pids, dir } = JSON.parse(line.toString()) as { pids: number[]; dir: string };
      expect(existsSync(dir)).toBe(true);
      expect(pids).toHaveLength(3);
      if (how === 'wait') child.kill(end[1]!);
      expect(await exited).toEqual(end);
      await Promise.all(pids.map(gone));
      expect(await Promise.all(pids.map(alive))).toEqual([false, false, false]);
    },
  );
});
