// Learners on a simulated cluster, as in etcd 3.4: MemberAdd with isLearner registers one, startAdded()
// starts it; it publishes its name and client URL, does not vote, refuses every stream and every
// unary call but Status and a serializable Range ("rpc not supported for learner"), and
// MemberPromote makes it a voting member once it is in sync with the leader (while it runs and
// reaches it). Checked against etcd 3.4.23 in test/conformance/cluster-conformance.test.ts.
import {
  etcdserverpb_Cluster as Cluster,
  grpc_health_v1_Health as Health,
  etcdserverpb_KV as KV,
  etcdserverpb_Lease as Lease,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { describe, expect, it } from 'vitest';
import { GrpcCode } from '../../src/index.js';
import { b } from '../support/bytes.js';
import { type CallError, status } from '../support/grpc-client.js';
import { openKeepAlive } from '../support/keepalive-client.js';
import { clusterFixture, type ThreeMembers } from './cluster-support.js';

const NOT_SUPPORTED = status(GrpcCode.UNAVAILABLE, 'etcdserver: rpc not supported for learner');
const NOT_READY = status(
  GrpcCode.FAILED_PRECONDITION,
  'etcdserver: can only promote a learner member which is in sync with leader',
);
const NOT_LEARNER = status(
  GrpcCode.FAILED_PRECONDITION,
  'etcdserver: can only promote a learner member',
);
const REQUIRE_LEADER = { metadata: { hasleader: 'true' } } as const;

describe('EmbeddedCluster learners', () => {
  const { start, clientOf, closeAfter } = clusterFixture();
  const failure = async (call: Promise<unknown>): Promise<CallError | 'answered'> => {
    try {
      await call;
      return 'answered';
    } catch (error) {
      const { code, details } = error as CallError;
      return { code, details };
    }
  };
  /** A 3-member cluster with a learner added (by member1) and started as `learner`. */
  const withLearner = async (options: { requestTimeoutMs?: number } = {}) => {
    const c = await start({ members: 3, ...options });
    const added = await clientOf(c.members[1]!).unary(Cluster.MemberAdd, {
      peerURLs: ['http://127.0.0.1:2'],
      isLearner: true,
    });
    const id = added.member!.ID!;
    return { c, id };
  };

  it('a learner started publishes its name and client URL, listed with isLearner; it does not vote', async () => {
    const { c, id } = await withLearner();
    const [m0, m1, m2] = c.members as ThreeMembers;
    const learner = await c.startAdded(id, { name: 'learner' });
    expect(c.members).toEqual([m0, m1, m2, learner]);
    expect(c.votingMembers).toBe(3);
    for (const member of [m0, m1, m2]) {
      const list = await clientOf(member).unary(Cluster.MemberList, {});
      expect(list.members.find((m) => m.ID === id)).toEqual(
        expect.objectContaining({
          name: 'learner',
          peerURLs: ['http://127.0.0.1:2'],
          clientURLs: [learner.endpoint],
          isLearner: true,
        }),
      );
    }
    // Two voting members down: one voting member and the learner are no quorum of 3. The learner
    // goes on naming the leader it knew (it never campaigns, so raft never clears it).
    expect(learner.leaderId).toBe(m0.memberId);
    await m1.stop();
    await m2.stop();
    expect(c.leader).toBeUndefined();
    expect(m0.leaderId).toBe(0n);
    expect(learner.leaderId).toBe(m0.memberId);
    expect(() => c.elect(learner)).toThrow('it is a learner');
  });

  it('a learner refuses every call but Status and a serializable Range', async () => {
    const { c, id } = await withLearner();
    await clientOf(c.members[0]!).unary(KV.Put, { key: b('k'), value: b('v') });
    const learner = await c.startAdded(id);
    const client = clientOf(learner);

    const read = await client.unary(KV.Range, { key: b('k'), serializable: true });
    expect({
      value: Buffer.from(read.kvs[0]!.value!).toString(),
      member: read.header!.memberId,
    }).toEqual({ value: 'v', member: id });
    const own = await client.unary(Maintenance.Status, {});
    expect({ isLearner: own.isLearner, leader: own.leader, member: own.header!.memberId }).toEqual({
      isLearner: true,
      leader: c.leader!.memberId,
      member: id,
    });
    const refused = await Promise.all([
      failure(client.unary(KV.Range, { key: b('k') })),
      failure(client.unary(KV.Put, { key: b('k'), value: b('x') })),
      failure(client.unary(KV.DeleteRange, { key: b('k') })),
      failure(client.unary(KV.Txn, { success: [{ requestRange: { key: b('k') } }] })),
      failure(client.unary(Lease.LeaseGrant, { TTL: 60n })),
      failure(client.unary(Cluster.MemberList, {})),
      failure(client.unary(Cluster.MemberPromote, { ID: id })),
      failure(client.unary(Maintenance.HashKV, {})),
      failure(client.unary(Maintenance.Alarm, {})),
      failure(client.unary(Health.Check, {})),
    ]);
    expect(refused).toEqual(refused.map(() => NOT_SUPPORTED));
    // Streams are refused as they open.
    const keepAlive = closeAfter(openKeepAlive(learner.endpoint));
    const ended = await keepAlive.ended;
    expect(status(ended.code, ended.details)).toEqual(NOT_SUPPORTED);
    // Nothing changed.
    const after = await clientOf(c.members[0]!).unary(KV.Range, { key: b('k') });
    expect(Buffer.from(after.kvs[0]!.value!).toString()).toBe('v');
  });

  it('MemberPromote: not ready until started, then a voting member the quorum counts; a voting member is not a learner', async () => {
    const { c, id } = await withLearner();
    const leader = clientOf(c.leader!);
    await expect(leader.unary(Cluster.MemberPromote, { ID: id })).rejects.toMatchObject(NOT_READY);
    const learner = await c.startAdded(id, { name: 'learner' });
    // A follower asks the leader, which knows the learner is in sync.
    const promoted = await clientOf(c.members[2]!).unary(Cluster.MemberPromote, { ID: id });
    expect(promoted.members.find((m) => m.ID === id)?.isLearner).toBe(false);
    expect(c.votingMembers).toBe(4);
    await expect(leader.unary(Cluster.MemberPromote, { ID: id })).rejects.toMatchObject(
      NOT_LEARNER,
    );

    // It serves everything now, and votes: 2 of 4 are no quorum, 3 of 4 are.
    const written = await clientOf(learner).unary(KV.Put, { key: b('k'), value: b('v') });
    expect(written.header!.memberId).toBe(id);
    expect((await clientOf(learner).unary(Maintenance.Status, {})).isLearner).toBe(false);
    await c.members[1]!.stop();
    expect(c.leader).toBe(c.members[0]);
    await c.members[2]!.stop();
    expect(c.leader).toBeUndefined();
    await c.members[2]!.start();
    expect(c.leader).toBeDefined();
  });

  it('a learner down keeps the log it had: in sync until the leader has 10% more, and again once back', async () => {
    const { c, id } = await withLearner();
    const learner = await c.startAdded(id);
    const leader = clientOf(c.leader!);
    // A log of some length first, so one entry is less than 10% of it.
    for (let i = 0; i < 20; i++) await leader.unary(KV.Put, { key: b('k'), value: b(`${i}`) });
    await learner.stop();
    const had = Number((await leader.unary(Maintenance.Status, {})).raftIndex);
    // Each put takes a log entry: past had / 0.9 the learner is behind.
    for (let i = 0; i <= Math.floor(had / 9); i++) {
      await leader.unary(KV.Put, { key: b('k'), value: b(`${i}`) });
    }
    const index = Number((await leader.unary(Maintenance.Status, {})).raftIndex);
    expect(had).toBeLessThan(0.9 * index);
    await expect(leader.unary(Cluster.MemberPromote, { ID: id })).rejects.toMatchObject(NOT_READY);
    // Back, it has the whole log at once. Cut off after that, it keeps it: one entry more is
    // not 10% more, so it is still in sync (etcd looks at the log only) and is promoted; the
    // quorum is then 3 of 4, which the others still are.
    await learner.start();
    learner.partition();
    await leader.unary(KV.Put, { key: b('k'), value: b('x') });
    const promoted = await leader.unary(Cluster.MemberPromote, { ID: id });
    expect(promoted.members.find((m) => m.ID === id)?.isLearner).toBe(false);
    expect(c.votingMembers).toBe(4);
    expect(c.leader).toBeDefined();
  });

  it('a learner cut off goes on naming its leader: require-leader calls pass, it answers from what it had applied', async () => {
    const { c, id } = await withLearner();
    const learner = await c.startAdded(id);
    const leaderId = c.leader!.memberId;
    const client = clientOf(learner);
    await clientOf(c.leader!).unary(KV.Put, { key: b('k'), value: b('v') });
    learner.partition();
    const later = await clientOf(c.leader!).unary(KV.Put, { key: b('k'), value: b('w') });
    const [status, read, put] = await Promise.all([
      client.unary(Maintenance.Status, {}, REQUIRE_LEADER),
      client.unary(KV.Range, { key: b('k'), serializable: true }, REQUIRE_LEADER),
      failure(client.unary(KV.Put, { key: b('k'), value: b('x') }, REQUIRE_LEADER)),
    ]);
    expect({
      leader: status.leader,
      errors: status.errors,
      value: Buffer.from(read.kvs[0]!.value!).toString(),
      revision: read.header!.revision,
      put,
    }).toEqual({
      leader: leaderId,
      errors: [],
      value: 'v',
      revision: later.header!.revision! - 1n,
      put: NOT_SUPPORTED,
    });
    // Healed, it catches up at once.
    learner.heal();
    const caughtUp = await client.unary(KV.Range, { key: b('k'), serializable: true });
    expect(Buffer.from(caughtUp.kvs[0]!.value!).toString()).toBe('w');
  });

  it('MoveLeader to a learner never completes: the call ends at its deadline, the leader stays', async () => {
    const { c, id } = await withLearner();
    await c.startAdded(id);
    const leader = c.leader!;
    const moved = await failure(
      clientOf(leader).unary(Maintenance.MoveLeader, { targetID: id }, { deadlineMs: 300 }),
    );
    expect(moved).toMatchObject({ code: GrpcCode.DEADLINE_EXCEEDED });
    expect(c.leader).toBe(leader);
  });
});
