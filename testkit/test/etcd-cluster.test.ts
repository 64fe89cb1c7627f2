import { existsSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { type EtcdCluster, EtcdHttpGateway, startEtcdCluster } from '../src/index.js';
import { noEtcd, processExists } from './helpers.js';

async function cluster(): Promise<EtcdCluster> {
  const started = await startEtcdCluster({ members: 3 });
  onTestFinished(() => started.stop());
  return started;
}

describe.skipIf(noEtcd)('startEtcdCluster (real etcd binary)', () => {
  it('starts 3 members on their own ports and dirs that agree on a leader', async () => {
    const etcd = await cluster();

    expect(etcd.members.map((member) => member.name)).toEqual(['member0', 'member1', 'member2']);
    expect(new Set(etcd.endpoints).size).toBe(3);
    expect(new Set(etcd.members.map((member) => member.dataDir)).size).toBe(3);
    const leader = await etcd.waitForLeader();
    for (const member of etcd.members) {
      const status = await new EtcdHttpGateway(member.endpoint).status();
      expect(status.leader).not.toBe('0');
      expect(await new EtcdHttpGateway(leader.endpoint).status()).toMatchObject({
        memberId: status.leader,
      });
    }
  });

  it('replicates a write made on one member to the others', async () => {
    const etcd = await cluster();

    await new EtcdHttpGateway(etcd.endpoints[0]!).put('replicated', 'yes');

    expect(await new EtcdHttpGateway(etcd.endpoints[2]!).get('replicated')).toBe('yes');
  });

  it('survives a killed leader; the member catches up after start()', async () => {
    const etcd = await cluster();
    const oldLeader = await etcd.waitForLeader();

    await oldLeader.kill();
    const newLeader = await etcd.waitForLeader();
    expect(newLeader.name).not.toBe(oldLeader.name);
    await new EtcdHttpGateway(newLeader.endpoint).put('while-down', 'written');

    await oldLeader.start();
    expect(oldLeader.running).toBe(true);
    expect(await new EtcdHttpGateway(oldLeader.endpoint).get('while-down')).toBe('written');
  });

  it('restarts members of a cluster that lost quorum without waiting for each', async () => {
    const etcd = await cluster();
    const [first, second] = etcd.members;
    await Promise.all([first!.kill(), second!.kill()]);

    await first!.start({ waitUntilReady: false });
    await second!.start({ waitUntilReady: false });

    await etcd.waitForLeader();
    await new EtcdHttpGateway(first!.endpoint).put('quorum', 'back');
    expect(await new EtcdHttpGateway(second!.endpoint).get('quorum')).toBe('back');
  });

  it('stop() ends every member and removes all data', async () => {
    const etcd = await startEtcdCluster({ members: 3 });
    const pids = etcd.members.map((member) => member.pid!);

    await etcd.stop();

    expect(pids.filter(processExists)).toEqual([]);
    expect(etcd.members.filter((member) => existsSync(member.dataDir))).toEqual([]);
  });
});
