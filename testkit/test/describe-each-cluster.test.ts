// The embedded side of TestCluster: what failover suites rely on behaves as on a real cluster
// (the real side is etcd-cluster.test.ts).
import { Etcd } from '@etcdkit/client';
import { EmbeddedCluster } from '@etcdkit/server-embedded';
import { afterEach, describe, expect, it } from 'vitest';
import { fromEmbedded, type TestCluster } from '../src/index.js';

describe('fromEmbedded', () => {
  let cluster: TestCluster | undefined;

  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });

  it('names the members, follows kill/start, and finds the leader a quorum agrees on', async () => {
    const embedded = await EmbeddedCluster.start({ members: 3 });
    cluster = fromEmbedded(embedded);
    expect(cluster.backend).toBe('embedded');
    expect(cluster.members.map((m) => m.name)).toEqual(['member0', 'member1', 'member2']);
    expect(cluster.endpoints).toEqual(embedded.endpoints);

    const first = await cluster.waitForLeader();
    expect(first.name).toBe('member0');
    await first.kill();
    expect(first.running).toBe(false);
    const second = await cluster.waitForLeader();
    expect(second.name).toBe('member1');
    // The members still running name it too.
    const client = new Etcd({ endpoints: [cluster.members[2]!.endpoint] });
    try {
      expect((await client.maintenance.status()).leader).toBe(embedded.members[1]!.memberId);
    } finally {
      await client.close();
    }
    await first.start();
    expect(first.running).toBe(true);
  });

  it('waitForLeader fails after its timeout when no quorum is left', async () => {
    cluster = fromEmbedded(await EmbeddedCluster.start({ members: 3 }));
    await cluster.members[1]!.kill();
    await cluster.members[2]!.kill();
    await expect(cluster.waitForLeader(100)).rejects.toThrow(
      'embedded cluster has no leader after 100 ms',
    );
  });

  it('pause takes the member out of the cluster; resume brings it back', async () => {
    cluster = fromEmbedded(await EmbeddedCluster.start({ members: 3 }));
    const leader = await cluster.waitForLeader();
    await leader.pause();
    expect((await cluster.waitForLeader()).name).not.toBe(leader.name);
    leader.resume();
    expect((await cluster.waitForLeader()).name).toBe('member1');
  });
});
