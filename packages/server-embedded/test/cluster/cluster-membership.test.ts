// Membership changes on a simulated cluster, as etcd 3.4 makes them with its strict reconfiguration
// check on (its default): a voting member added is not started and counts for the quorum at once,
// starts with startAdded(); a member removed leaves the quorum and its port closes; MemberUpdate
// changes peer URLs. Errors are etcd's (checked against 3.4.23, see the cluster conformance test).
import {
  etcdserverpb_Cluster as Cluster,
  etcdserverpb_KV as KV,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { describe, expect, it } from 'vitest';
import { type EmbeddedClusterMember, GrpcCode } from '../../src/index.js';
import { b } from '../support/bytes.js';
import { status } from '../support/grpc-client.js';
import { connectOutcome } from '../support/net.js';
import { clusterFixture, type ThreeMembers } from './cluster-support.js';

const UNHEALTHY = status(GrpcCode.UNAVAILABLE, 'etcdserver: unhealthy cluster');
const NOT_ENOUGH_STARTED = status(
  GrpcCode.UNKNOWN,
  'etcdserver: re-configuration failed due to not enough started members',
);
const NOT_FOUND = status(GrpcCode.NOT_FOUND, 'etcdserver: member not found');
const PEER_URL_EXISTS = status(
  GrpcCode.FAILED_PRECONDITION,
  'etcdserver: Peer URLs already exists',
);
// etcd 3.5 (the default version) sends a proposal's timeout as DeadlineExceeded; 3.4 as Unknown.
const PROPOSAL_TIMED_OUT = status(GrpcCode.DEADLINE_EXCEEDED, 'context deadline exceeded');

describe('EmbeddedCluster membership', () => {
  const fixture = clusterFixture();
  const { clientOf } = fixture;
  const start = (members: number, requestTimeoutMs?: number) =>
    fixture.start({ members, requestTimeoutMs });
  const listOf = async (member: EmbeddedClusterMember) =>
    (await clientOf(member).unary(Cluster.MemberList, {})).members.map((m) => ({
      id: m.ID,
      name: m.name,
      peerURLs: m.peerURLs,
      clientURLs: m.clientURLs,
      isLearner: m.isLearner,
    }));
  const entryOf = (member: EmbeddedClusterMember, peerURLs: string[]) => ({
    id: member.memberId,
    name: member.name,
    peerURLs,
    clientURLs: [member.endpoint],
    isLearner: false,
  });
  const peerUrlsOf = async (member: EmbeddedClusterMember): Promise<string[]> =>
    (await listOf(member)).find((m) => m.id === member.memberId)!.peerURLs ?? [];
  const byId = <T extends { id?: bigint | null }>(list: T[]) =>
    [...list].sort((x, y) => (x.id! < y.id! ? -1 : x.id! > y.id! ? 1 : 0));

  it('MemberAdd registers a voting member not started: peer URLs only, and the quorum counts it (etcd 3.4: then every add is refused)', async () => {
    // etcd 3.4's strict check wants every voter connected; 3.5 on accepts the next add (the
    // cluster conformance suite pins both).
    const c = await fixture.start({ members: 3, etcdVersion: '3.4' });
    const [m0, m1, m2] = c.members as ThreeMembers;
    const before = await listOf(m0);
    const added = await clientOf(m1).unary(Cluster.MemberAdd, {
      peerURLs: ['http://127.0.0.1:1'],
    });
    const id = added.member!.ID!;
    expect({ peerURLs: added.member!.peerURLs, isLearner: added.member!.isLearner }).toEqual({
      peerURLs: ['http://127.0.0.1:1'],
      isLearner: false,
    });
    expect(added.header!.memberId).toBe(m1.memberId);
    const unstarted = {
      id,
      name: '',
      peerURLs: ['http://127.0.0.1:1'],
      clientURLs: [],
      isLearner: false,
    };
    for (const member of [m0, m1, m2]) {
      expect(await listOf(member)).toEqual(byId([...before, unstarted]));
    }
    expect(c.votingMembers).toBe(4);
    expect(c.members).toEqual([m0, m1, m2]);

    // The new member is connected to nobody: every other add is refused, a learner's too.
    await expect(
      clientOf(m0).unary(Cluster.MemberAdd, { peerURLs: ['http://127.0.0.1:2'] }),
    ).rejects.toMatchObject(UNHEALTHY);
    await expect(
      clientOf(m0).unary(Cluster.MemberAdd, { peerURLs: ['http://127.0.0.1:3'], isLearner: true }),
    ).rejects.toMatchObject(UNHEALTHY);

    // 3 of 4 reach each other: a quorum. One more down, and there is none.
    expect(c.leader).toBe(m0);
    await m2.stop();
    expect(c.leader).toBeUndefined();
    expect((await clientOf(m0).unary(Maintenance.Status, {})).leader).toBe(0n);

    // The added member starts: it serves, publishes its name and client URL, and brings the
    // quorum back (3 of 4) in a new term.
    const term = c.term;
    const m3 = await c.startAdded(id);
    expect(m3.name).toBe('member3');
    expect(m3.memberId).toBe(id);
    expect(c.members).toEqual([m0, m1, m2, m3]);
    expect(c.endpoints).toEqual([m0, m1, m2, m3].map((m) => m.endpoint));
    expect(c.leader).toBe(m0);
    expect(c.term).toBe(term + 1);
    const ownStatus = await clientOf(m3).unary(Maintenance.Status, {});
    expect({
      member: ownStatus.header!.memberId,
      cluster: ownStatus.header!.clusterId,
      leader: ownStatus.leader,
      term: ownStatus.raftTerm,
    }).toEqual({ member: id, cluster: c.clusterId, leader: m0.memberId, term: BigInt(c.term) });
    const written = await clientOf(m3).unary(KV.Put, { key: b('k'), value: b('v') });
    expect(written.header!.memberId).toBe(id);
    expect((await listOf(m1)).find((m) => m.id === id)).toEqual(
      entryOf(m3, ['http://127.0.0.1:1']),
    );
  });

  it('adding a voting member to a single member leaves no quorum until it starts', async () => {
    const c = await start(1, 300);
    const [m0] = c.members as [EmbeddedClusterMember];
    const client = clientOf(m0);
    const added = await client.unary(Cluster.MemberAdd, { peerURLs: ['http://127.0.0.1:1'] });
    expect(added.members).toHaveLength(2);
    expect(c.leader).toBeUndefined();
    const lost = await client.unary(Maintenance.Status, {});
    expect({ leader: lost.leader, errors: lost.errors }).toEqual({
      leader: 0n,
      errors: ['etcdserver: no leader'],
    });
    await expect(client.unary(KV.Put, { key: b('k'), value: b('v') })).rejects.toMatchObject(
      PROPOSAL_TIMED_OUT,
    );
    // etcd checks before proposing, leader or not: 1 started of 3 is short of a quorum.
    await expect(
      client.unary(Cluster.MemberAdd, { peerURLs: ['http://127.0.0.1:2'] }),
    ).rejects.toMatchObject(NOT_ENOUGH_STARTED);
    // Nor can the member alone be removed: no started member would be left.
    await expect(client.unary(Cluster.MemberRemove, { ID: m0.memberId })).rejects.toMatchObject(
      NOT_ENOUGH_STARTED,
    );
    // Removing the added member passes the check but needs a leader to commit it.
    await expect(
      client.unary(Cluster.MemberRemove, { ID: added.member!.ID }),
    ).rejects.toMatchObject(PROPOSAL_TIMED_OUT);

    const m1 = await c.startAdded(added.member!.ID!, { name: 'late' });
    expect(c.leader).toBe(m0);
    expect(m1.leaderId).toBe(m0.memberId);
    await client.unary(KV.Put, { key: b('k'), value: b('v') });
    expect(await listOf(m1)).toEqual(
      byId([entryOf(m0, await peerUrlsOf(m0)), entryOf(m1, ['http://127.0.0.1:1'])]),
    );
  });

  it('MemberRemove of a follower: the quorum shrinks, its port closes, every member lists the rest', async () => {
    const c = await start(3);
    const [m0, m1, m2] = c.members as ThreeMembers;
    const removed = await clientOf(m0).unary(Cluster.MemberRemove, { ID: m2.memberId });
    expect(removed.members.map((m) => m.ID).sort()).toEqual([m0.memberId, m1.memberId].sort());
    expect(m2.removed).toBe(true);
    expect(c.members).toEqual([m0, m1]);
    expect(c.votingMembers).toBe(2);
    await m2.exited();
    await expect(connectOutcome(m2.port)).resolves.toBe('ECONNREFUSED');
    await expect(m2.start()).rejects.toThrow('member2 was removed from the cluster');
    for (const member of [m0, m1]) {
      expect((await listOf(member)).map((m) => m.name).sort()).toEqual(['member0', 'member1']);
    }
    // Gone for good: its id is not found again.
    await expect(
      clientOf(m1).unary(Cluster.MemberRemove, { ID: m2.memberId }),
    ).rejects.toMatchObject(NOT_FOUND);
    await expect(
      clientOf(m1).unary(Cluster.MemberUpdate, { ID: m2.memberId, peerURLs: ['http://a:1'] }),
    ).rejects.toMatchObject(NOT_FOUND);
    // The quorum of 2 is 2: one down, and there is no leader.
    await m1.stop();
    expect(c.leader).toBeUndefined();
  });

  it('MemberRemove of the leader, asked of the leader: it answers, its port closes, the others elect', async () => {
    const c = await start(3);
    const [m0, m1, m2] = c.members as ThreeMembers;
    const term = c.term;
    const removed = await clientOf(m0).unary(Cluster.MemberRemove, { ID: m0.memberId });
    expect(removed.header!.memberId).toBe(m0.memberId);
    expect(removed.members).toHaveLength(2);
    expect(c.leader).toBe(m1);
    expect(c.term).toBe(term + 1);
    const seen = await clientOf(m2).unary(Maintenance.Status, {});
    expect({ leader: seen.leader, term: seen.raftTerm }).toEqual({
      leader: m1.memberId,
      term: BigInt(term + 1),
    });
    await m0.exited();
    await expect(connectOutcome(m0.port)).resolves.toBe('ECONNREFUSED');
  });

  it('the strict check: a running member may not go while another is down; the one down may', async () => {
    const c = await start(3);
    const [m0, m1, m2] = c.members as ThreeMembers;
    await m2.stop();
    const client = clientOf(m0);
    // Connected to m1 only: without it, m0 alone is short of the quorum of 2.
    await expect(client.unary(Cluster.MemberRemove, { ID: m1.memberId })).rejects.toMatchObject(
      UNHEALTHY,
    );
    await expect(client.unary(Cluster.MemberRemove, { ID: 12345n })).rejects.toMatchObject(
      NOT_FOUND,
    );
    const removed = await client.unary(Cluster.MemberRemove, { ID: m2.memberId });
    expect(removed.members.map((m) => m.ID).sort()).toEqual([m0.memberId, m1.memberId].sort());
    expect(c.leader).toBe(m0);
    expect(m2.removed).toBe(true);
  });

  it('MemberUpdate: new peer URLs everywhere; an unknown id and a peer URL in use are refused', async () => {
    const c = await start(3);
    const [m0, m1, m2] = c.members as ThreeMembers;
    const client = clientOf(m2);
    const inUse = await peerUrlsOf(m0);
    await expect(
      client.unary(Cluster.MemberUpdate, { ID: m1.memberId, peerURLs: inUse }),
    ).rejects.toMatchObject(PEER_URL_EXISTS);
    await expect(
      client.unary(Cluster.MemberUpdate, { ID: 12345n, peerURLs: ['http://127.0.0.1:7'] }),
    ).rejects.toMatchObject(NOT_FOUND);
    const updated = await client.unary(Cluster.MemberUpdate, {
      ID: m1.memberId,
      peerURLs: ['http://127.0.0.1:7'],
    });
    expect(updated.members.find((m) => m.ID === m1.memberId)!.peerURLs).toEqual([
      'http://127.0.0.1:7',
    ]);
    for (const member of [m0, m1, m2]) {
      expect(await listOf(member)).toContainEqual(entryOf(m1, ['http://127.0.0.1:7']));
    }
  });

  it('adds a learner, lists it with the members, and removes it (test/cluster/cluster-learner.test.ts starts one)', async () => {
    const c = await start(3);
    const client = clientOf(c.members[1]!);
    const added = await client.unary(Cluster.MemberAdd, {
      peerURLs: ['http://127.0.0.1:2'],
      isLearner: true,
    });
    expect(added.member!.isLearner).toBe(true);
    expect(added.members).toHaveLength(4);
    expect(c.votingMembers).toBe(3);
    await client.unary(Cluster.MemberRemove, { ID: added.member!.ID });
    expect((await client.unary(Cluster.MemberList, {})).members).toHaveLength(3);
  });
});
