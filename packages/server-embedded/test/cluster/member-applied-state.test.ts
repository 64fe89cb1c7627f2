// A member of the simulated cluster cut off from the quorum answers alone from what it had applied
// then, whatever the quorum writes, compacts or elects meanwhile, as a real etcd member does
// (nothing is committed, so nothing is applied, without a leader): serializable reads and
// read-only serializable txns (compares included), headers, Status, Hash, HashKV, Snapshot,
// LeaseLeases and MemberList. Healed, it answers from the cluster's state again.
import {
  etcdserverpb_Cluster as Cluster,
  etcdserverpb_KV as KV,
  etcdserverpb_Lease as Lease,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { describe, expect, it } from 'vitest';
import { GrpcCode } from '../../src/index.js';
import { b, text } from '../support/bytes.js';
import { type RawClient, status } from '../support/grpc-client.js';
import { clusterFixture, putText, sleep, type ThreeMembers } from './cluster-support.js';

const EQUAL = 0;
const VALUE = 3;
const MOD = 2;
const FUTURE = status(
  GrpcCode.OUT_OF_RANGE,
  'etcdserver: mvcc: required revision is a future revision',
);

describe('a member cut off from the quorum answers from what it had applied', () => {
  const { start, clientOf } = clusterFixture();
  const put = putText;

  /**
   * A 3-member cluster, member2 cut off after `before` ran (with clients of member0 and member2);
   * returns those clients.
   */
  const partitioned = async (before: (quorum: RawClient, cut: RawClient) => Promise<void>) => {
    // 3.6: HashKV answers hash_revision, which these tests compare.
    const cluster = await start({ members: 3, etcdVersion: '3.6' });
    const [m0, , m2] = cluster.members as ThreeMembers;
    const quorum = clientOf(m0);
    const cut = clientOf(m2);
    await before(quorum, cut);
    m2.partition();
    return { c: cluster, quorum, cut, m2 };
  };
  const valueIs = (key: string, value: string) => ({
    key: b(key),
    target: VALUE,
    result: EQUAL,
    value: b(value),
  });
  const serializableRange = (key: string, revision = 0n) => ({
    requestRange: { key: b(key), serializable: true, revision },
  });

  it('a serializable read-only txn evaluates its compares and reads at the revision it had', async () => {
    const { c, quorum, cut } = await partitioned(async (q) => {
      await put(q, 'k', 'before');
    });
    const had = c.store.revision;
    await put(quorum, 'k', 'after');
    await put(quorum, 'other', 'x');

    const txn = await cut.unary(KV.Txn, {
      compare: [
        valueIs('k', 'before'),
        { key: b('k'), target: MOD, result: EQUAL, modRevision: BigInt(had) },
      ],
      success: [serializableRange('k'), serializableRange('other')],
      failure: [serializableRange('other')],
    });
    expect({
      succeeded: txn.succeeded,
      revision: txn.header!.revision,
      values: txn.responses.map((r) => r.responseRange!.kvs!.map((kv) => text(kv.value))),
      rangeRevisions: txn.responses.map((r) => r.responseRange!.header!.revision),
    }).toEqual({
      succeeded: true,
      revision: BigInt(had),
      values: [['before'], []],
      rangeRevisions: [BigInt(had), BigInt(had)],
    });
    // The same compare fails on the quorum, where the value moved on.
    const onQuorum = await quorum.unary(KV.Txn, { compare: [valueIs('k', 'before')] });
    expect({ succeeded: onQuorum.succeeded, revision: onQuorum.header!.revision }).toEqual({
      succeeded: false,
      revision: BigInt(had + 2),
    });
    // A txn of compares only is read-only and serializable too (etcd's isTxnSerializable).
    const comparesOnly = await cut.unary(KV.Txn, { compare: [valueIs('k', 'after')] });
    expect({ succeeded: comparesOnly.succeeded, revision: comparesOnly.header!.revision }).toEqual({
      succeeded: false,
      revision: BigInt(had),
    });
    // A revision the member never applied is a future one to it.
    await expect(
      cut.unary(KV.Txn, { success: [serializableRange('k', BigInt(had + 1))] }),
    ).rejects.toMatchObject(FUTURE);
  });

  it('a txn with a linearizable range or a write waits for the leader; healed, it runs on the cluster state', async () => {
    const { c, quorum, cut, m2 } = await partitioned(async (q) => {
      await put(q, 'k', 'before');
    });
    await put(quorum, 'k', 'after');
    const mixed = cut.unary(KV.Txn, {
      compare: [valueIs('k', 'after')],
      success: [serializableRange('k'), { requestRange: { key: b('k') } }],
    });
    const writing = cut.unary(KV.Txn, {
      compare: [valueIs('k', 'after')],
      success: [{ requestPut: { key: b('k'), value: b('written') } }],
    });
    await sleep(100);
    expect(c.store.revision).toBe(3);
    m2.heal();
    const [read, written] = await Promise.all([mixed, writing]);
    expect({
      succeeded: read.succeeded,
      values: read.responses.map((r) => text(r.responseRange!.kvs![0]!.value)),
    }).toEqual({ succeeded: true, values: ['after', 'after'] });
    expect({ succeeded: written.succeeded, revision: written.header!.revision }).toEqual({
      succeeded: true,
      revision: 4n,
    });
  });

  it('keeps the history it had when the quorum compacts past it', async () => {
    let hashKvBefore = { hash: 0 };
    const { c, quorum, cut } = await partitioned(async (q, m2) => {
      await put(q, 'k', 'one');
      await put(q, 'k', 'two');
      hashKvBefore = await m2.unary(Maintenance.HashKV, {});
    });
    await put(quorum, 'k', 'three');
    await quorum.unary(KV.Compact, { revision: BigInt(c.store.revision) });
    expect(c.store.compactRevision).toBe(4);

    const old = await cut.unary(KV.Range, { key: b('k'), serializable: true, revision: 2n });
    expect({ value: text(old.kvs[0]!.value), revision: old.header!.revision }).toEqual({
      value: 'one',
      revision: 3n,
    });
    const hashKv = await cut.unary(Maintenance.HashKV, {});
    expect({
      hash: hashKv.hash,
      compactRevision: hashKv.compactRevision,
      hashRevision: hashKv.hashRevision,
      revision: hashKv.header!.revision,
    }).toEqual({
      hash: hashKvBefore.hash,
      compactRevision: -1n,
      hashRevision: 3n,
      revision: 3n,
    });
    await expect(cut.unary(Maintenance.HashKV, { revision: 4n })).rejects.toMatchObject(FUTURE);
    await expect(quorum.unary(KV.Range, { key: b('k'), revision: 2n })).rejects.toMatchObject({
      code: GrpcCode.OUT_OF_RANGE,
    });
  });

  it('Status, headers, Hash, HashKV, Snapshot, LeaseLeases and MemberList stay what it had; healed, it catches up', async () => {
    let lease = 0n;
    // What member2 answers while it is still connected.
    const answersOf = (client: RawClient) =>
      Promise.all([
        client.unary(Maintenance.Status, {}),
        client.unary(Maintenance.Hash, {}),
        client.unary(Maintenance.HashKV, {}),
        client.serverStream(Maintenance.Snapshot, {}),
        client.unary(Cluster.MemberList, {}),
      ]);
    let before: Awaited<ReturnType<typeof answersOf>> | undefined;
    const { c, quorum, cut, m2 } = await partitioned(async (q, m2Client) => {
      await put(q, 'k', 'v');
      lease = (await q.unary(Lease.LeaseGrant, { TTL: 60n })).ID!;
      before = await answersOf(m2Client);
    });
    const [statusBefore, hashBefore, hashKvBefore, snapshotBefore, membersBefore] = before!;
    // What the quorum does meanwhile: a write, a lease, a new leader, a member's new peer URL (an
    // add would be refused: etcd's strict check finds member2 out of reach, "unhealthy cluster").
    const hadTerm = c.term;
    await put(quorum, 'k', 'w');
    const later = await quorum.unary(Lease.LeaseGrant, { TTL: 60n });
    c.elect(c.members[1]!);
    await quorum.unary(Cluster.MemberUpdate, {
      ID: c.members[0]!.memberId,
      peerURLs: ['http://127.0.0.1:1'],
    });
    expect(c.term).toBe(hadTerm + 1);

    const [statusCut, hashCut, hashKvCut, snapshotCut, leasesCut, membersCut] = await Promise.all([
      cut.unary(Maintenance.Status, {}),
      cut.unary(Maintenance.Hash, {}),
      cut.unary(Maintenance.HashKV, {}),
      cut.serverStream(Maintenance.Snapshot, {}),
      cut.unary(Lease.LeaseLeases, {}),
      cut.unary(Cluster.MemberList, {}),
    ]);
    const facts = (answer: typeof statusCut) => ({
      revision: answer.header!.revision,
      headerTerm: answer.header!.raftTerm,
      raftTerm: answer.raftTerm,
      raftIndex: answer.raftIndex,
      raftAppliedIndex: answer.raftAppliedIndex,
      dbSize: answer.dbSize,
    });
    expect(facts(statusCut)).toEqual(facts(statusBefore));
    expect({ leader: statusCut.leader, errors: statusCut.errors }).toEqual({
      leader: 0n,
      errors: ['etcdserver: no leader'],
    });
    expect({ hash: hashCut.hash, revision: hashCut.header!.revision }).toEqual({
      hash: hashBefore.hash,
      revision: statusBefore.header!.revision,
    });
    expect({ hash: hashKvCut.hash, revision: hashKvCut.header!.revision }).toEqual({
      hash: hashKvBefore.hash,
      revision: hashKvBefore.header!.revision,
    });
    expect(Buffer.concat(snapshotCut.map((m) => m.blob!))).toEqual(
      Buffer.concat(snapshotBefore.map((m) => m.blob!)),
    );
    expect({
      ids: leasesCut.leases.map((l) => l.ID),
      revision: leasesCut.header!.revision,
      term: leasesCut.header!.raftTerm,
    }).toEqual({ ids: [lease], revision: statusBefore.header!.revision, term: BigInt(hadTerm) });
    const peers = (list: typeof membersCut) => list.members.map((m) => [m.ID, m.peerURLs]);
    expect(peers(membersCut)).toEqual(peers(membersBefore));
    expect(membersCut.header!.raftTerm).toBe(BigInt(hadTerm));

    m2.heal();
    const [statusHealed, hashHealed, hashOnQuorum, leasesHealed] = await Promise.all([
      cut.unary(Maintenance.Status, {}),
      cut.unary(Maintenance.Hash, {}),
      quorum.unary(Maintenance.Hash, {}),
      cut.unary(Lease.LeaseLeases, {}),
    ]);
    expect({
      revision: statusHealed.header!.revision,
      raftTerm: statusHealed.raftTerm,
      raftIndex: statusHealed.raftIndex,
      leader: statusHealed.leader,
    }).toEqual({
      revision: BigInt(c.store.revision),
      raftTerm: BigInt(c.term),
      raftIndex: (await quorum.unary(Maintenance.Status, {})).raftIndex,
      leader: c.members[1]!.memberId,
    });
    expect(hashHealed.header!.revision).toBe(hashOnQuorum.header!.revision);
    expect(hashHealed.header!.revision).toBe(BigInt(c.store.revision));
    expect(leasesHealed.leases.map((l) => l.ID).sort()).toEqual([lease, later.ID].sort());
  });

  it('a member of a cluster without a quorum answers from what it had; with a quorum back, from the next term', async () => {
    const cluster = await start({ members: 3 });
    const [m0, m1, m2] = cluster.members as ThreeMembers;
    const client = clientOf(m0);
    await put(client, 'k', 'v');
    const before = await client.unary(Maintenance.Status, {});
    await m1.stop();
    await m2.stop();
    expect(cluster.leader).toBeUndefined();
    const alone = await client.unary(Maintenance.Status, {});
    expect({
      term: alone.raftTerm,
      index: alone.raftIndex,
      revision: alone.header!.revision,
    }).toEqual({
      term: before.raftTerm,
      index: before.raftIndex,
      revision: before.header!.revision,
    });
    const txn = await client.unary(KV.Txn, {
      compare: [valueIs('k', 'v')],
      success: [serializableRange('k')],
    });
    expect({ succeeded: txn.succeeded, revision: txn.header!.revision }).toEqual({
      succeeded: true,
      revision: before.header!.revision,
    });
    await m1.start();
    expect(cluster.leader).toBeDefined();
    const back = await client.unary(Maintenance.Status, {});
    expect({ term: back.raftTerm, index: back.raftIndex }).toEqual({
      term: before.raftTerm! + 1n,
      index: before.raftIndex! + 1n,
    });
  });
});
