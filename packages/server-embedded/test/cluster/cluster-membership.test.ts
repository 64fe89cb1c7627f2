// Membership changes on a simulated cluster: its voting members are fixed, so adding or removing
// one is refused as not supported (etcd would do either); learners come and go as on one member.
import { etcdserverpb_Cluster as Cluster } from '@etcdkit/client/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedCluster, GrpcCode } from '../../src/index.js';
import { RawClient, status } from '../support/grpc-client.js';

describe('EmbeddedCluster membership', () => {
  let cluster: EmbeddedCluster;
  let client: RawClient;

  beforeAll(async () => {
    cluster = await EmbeddedCluster.start({ members: 3 });
    client = new RawClient(cluster.members[1]!.endpoint);
  });
  afterAll(async () => {
    client?.close();
    await cluster?.stop();
  });

  it('refuses to remove a voting member, and to add one, as not supported', async () => {
    await expect(
      client.unary(Cluster.MemberRemove, { ID: cluster.members[2]!.memberId }),
    ).rejects.toMatchObject(
      status(
        GrpcCode.UNIMPLEMENTED,
        'etcdkit embedded server: removing a voting member of a simulated cluster is not supported (its members are fixed)',
      ),
    );
    await expect(
      client.unary(Cluster.MemberAdd, { peerURLs: ['http://127.0.0.1:1'], isLearner: false }),
    ).rejects.toMatchObject({ code: GrpcCode.UNIMPLEMENTED });
    const list = await client.unary(Cluster.MemberList, {});
    expect(list.members.map((m) => m.ID).sort()).toEqual(
      cluster.members.map((m) => m.memberId).sort(),
    );
  });

  it('adds a learner, lists it with the members, and removes it', async () => {
    const added = await client.unary(Cluster.MemberAdd, {
      peerURLs: ['http://127.0.0.1:2'],
      isLearner: true,
    });
    expect(added.member!.isLearner).toBe(true);
    expect(added.members).toHaveLength(4);
    await client.unary(Cluster.MemberRemove, { ID: added.member!.ID });
    expect((await client.unary(Cluster.MemberList, {})).members).toHaveLength(3);
  });
});
