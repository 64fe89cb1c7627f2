// The simulated cluster as a raw gRPC client sees it: one store behind every member, distinct
// member ids, elections when members stop, partition or pause, and what a member without a leader
// answers (no leader with require-leader, held calls, stale serializable reads, stalled watches).
import {
  etcdserverpb_Cluster as Cluster,
  etcdserverpb_KV as KV,
  etcdserverpb_Lease as Lease,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { describe, expect, it } from 'vitest';
import { EmbeddedCluster, type EmbeddedClusterMember, GrpcCode } from '../../src/index.js';
import { b, text } from '../support/bytes.js';
import { type RawClient, status } from '../support/grpc-client.js';
import { openKeepAlive } from '../support/keepalive-client.js';
import { connectOutcome } from '../support/net.js';
import type { ResponseSummary } from '../watch/watch-client.js';
import { clusterFixture, putText, sleep, type ThreeMembers } from './cluster-support.js';

const REQUIRE_LEADER = { metadata: { hasleader: 'true' } } as const;
const NO_LEADER = status(GrpcCode.UNAVAILABLE, 'etcdserver: no leader');

describe('EmbeddedCluster', () => {
  const { start, clientOf, watchConnectionOf: watchOf, closeAfter } = clusterFixture();
  const put = putText;
  const readKey = async (client: RawClient, key: string, serializable = false) => {
    const response = await client.unary(KV.Range, { key: b(key), serializable });
    return {
      value: response.kvs[0] ? text(response.kvs[0].value) : undefined,
      revision: Number(response.header!.revision),
    };
  };
  const statusOf = (member: EmbeddedClusterMember) =>
    clientOf(member).unary(Maintenance.Status, {});

  it('serves one store on distinct endpoints, with one cluster id and distinct member ids', async () => {
    const { members, clusterId, endpoints } = await start({ members: 3 });
    expect(members.map((m) => m.name)).toEqual(['member0', 'member1', 'member2']);
    expect(endpoints).toEqual(members.map((m) => m.endpoint));
    expect(new Set(endpoints).size).toBe(3);
    expect(new Set(members.map((m) => m.memberId)).size).toBe(3);

    const [a, b1, c] = members.map(clientOf) as [RawClient, RawClient, RawClient];
    const written = await put(a, 'k', 'v1');
    expect(written.header!.memberId).toBe(members[0]!.memberId);
    for (const [i, client] of [a, b1, c].entries()) {
      const response = await client.unary(KV.Range, { key: b('k') });
      expect(text(response.kvs[0]!.value)).toBe('v1');
      expect(response.header!.clusterId).toBe(clusterId);
      expect(response.header!.memberId).toBe(members[i]!.memberId);
      expect(response.header!.revision).toBe(written.header!.revision);
    }
  });

  it('lists every member from every member; Status names the first member as leader', async () => {
    const { members } = await start({ members: 3 });
    for (const member of members) {
      const list = await clientOf(member).unary(Cluster.MemberList, {});
      expect(
        list.members
          .map((m) => ({ id: m.ID, name: m.name, clientURLs: m.clientURLs, learner: m.isLearner }))
          .sort((x, y) => (x.name ?? '').localeCompare(y.name ?? '')),
      ).toEqual(
        members.map((m) => ({
          id: m.memberId,
          name: m.name,
          clientURLs: [m.endpoint],
          learner: false,
        })),
      );
      const memberStatus = await statusOf(member);
      expect(memberStatus.leader).toBe(members[0]!.memberId);
      expect(memberStatus.header!.memberId).toBe(member.memberId);
      expect(memberStatus.raftTerm).toBe(2n);
    }
  });

  it('a stopped member refuses connections; the next member leads in a new term; it rejoins', async () => {
    const c = await start({ members: 3 });
    const [m0, m1, m2] = c.members as ThreeMembers;
    await m0.stop();
    expect(m0.running).toBe(false);
    await expect(connectOutcome(m0.port)).resolves.toBe('ECONNREFUSED');
    expect(c.leader).toBe(m1);
    expect(c.term).toBe(3);
    expect((await statusOf(m2)).leader).toBe(m1.memberId);
    expect((await statusOf(m2)).raftTerm).toBe(3n);
    const written = await put(clientOf(m2), 'after', 'stop');
    expect(written.header!.raftTerm).toBe(3n);

    await m0.start();
    expect(c.leader).toBe(m1);
    expect(c.term).toBe(3);
    const fresh = clientOf(m0);
    expect((await readKey(fresh, 'after')).value).toBe('stop');
    expect((await fresh.unary(Maintenance.Status, {})).leader).toBe(m1.memberId);
  });

  it('a partitioned member answers no leader with require-leader and holds what needs a leader', async () => {
    const c = await start({ members: 3 });
    const [, m1, m2] = c.members as ThreeMembers;
    const healthy = clientOf(m1);
    const cut = clientOf(m2);
    await put(healthy, 'k', 'before');
    const stale = c.store.revision;
    m2.partition();
    expect(c.leader).toBe(c.members[0]);
    expect(m2.leaderId).toBe(0n);
    await put(healthy, 'k', 'after');

    // Require-leader: refused at once, whatever the method.
    await expect(
      cut.unary(KV.Range, { key: b('k'), serializable: true }, REQUIRE_LEADER),
    ).rejects.toMatchObject(NO_LEADER);
    await expect(cut.unary(Maintenance.Status, {}, REQUIRE_LEADER)).rejects.toMatchObject(
      NO_LEADER,
    );
    // Without it: Status knows no leader (and says so in its errors, as etcd's does); a
    // serializable read sees the store as it was.
    const cutStatus = await cut.unary(Maintenance.Status, {});
    expect({ leader: cutStatus.leader, errors: cutStatus.errors }).toEqual({
      leader: 0n,
      errors: ['etcdserver: no leader'],
    });
    expect(await readKey(cut, 'k', true)).toEqual({ value: 'before', revision: stale });
    await expect(
      cut.unary(KV.Range, { key: b('k'), serializable: true, revision: BigInt(stale + 1) }),
    ).rejects.toMatchObject(
      status(GrpcCode.OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision'),
    );
    // A linearizable read and a write are never answered while it is cut off...
    await expect(cut.unary(KV.Range, { key: b('k') }, { deadlineMs: 300 })).rejects.toMatchObject({
      code: GrpcCode.DEADLINE_EXCEEDED,
    });
    await expect(
      cut.unary(Lease.LeaseGrant, { TTL: 10n }, { deadlineMs: 300 }),
    ).rejects.toMatchObject({ code: GrpcCode.DEADLINE_EXCEEDED });
    const heldRead = readKey(cut, 'k');
    const heldWrite = put(cut, 'held', 'write');
    await sleep(200);
    expect(c.store.revision).toBe(stale + 1);
    // ...and go on once it is back.
    m2.heal();
    expect(m2.leaderId).toBe(c.members[0]!.memberId);
    await expect(heldRead).resolves.toEqual({ value: 'after', revision: stale + 1 });
    expect(Number((await heldWrite).header!.revision)).toBe(stale + 2);
    expect(await readKey(cut, 'k', true)).toEqual({ value: 'after', revision: stale + 2 });
  });

  it.each([
    ['3.4', GrpcCode.UNKNOWN],
    ['3.5', GrpcCode.DEADLINE_EXCEEDED],
  ] as const)(
    'a partitioned member times held calls out after requestTimeoutMs as etcd %s does, and applies nothing',
    async (etcdVersion, proposalCode) => {
      const c = await start({ members: 3, requestTimeoutMs: 150, etcdVersion });
      const m2 = c.members[2]!;
      const before = c.store.revision;
      const lease = await clientOf(m2).unary(Lease.LeaseGrant, { TTL: 60n });
      m2.partition();
      const cut = clientOf(m2);
      // A proposal: raft takes none without a leader; etcd 3.4 hands the request timeout's context
      // error to grpc-go as it is, which sends it as Unknown; 3.5 maps it to DeadlineExceeded.
      const proposalTimedOut = status(proposalCode, 'context deadline exceeded');
      await expect(put(cut, 'k', 'v')).rejects.toMatchObject(proposalTimedOut);
      await expect(
        cut.unary(KV.Txn, { success: [{ requestPut: { key: b('k'), value: b('v') } }] }),
      ).rejects.toMatchObject(proposalTimedOut);
      await expect(cut.unary(Lease.LeaseGrant, { TTL: 60n })).rejects.toMatchObject(
        proposalTimedOut,
      );
      // A linearizable read: the read index never comes.
      const readTimedOut = status(GrpcCode.UNAVAILABLE, 'etcdserver: request timed out');
      await expect(cut.unary(KV.Range, { key: b('k') })).rejects.toMatchObject(readTimedOut);
      await expect(
        cut.unary(KV.Txn, { success: [{ requestRange: { key: b('k') } }] }),
      ).rejects.toMatchObject(readTimedOut);
      // Forwarded to the leader: there is none to forward to.
      await expect(cut.unary(Lease.LeaseTimeToLive, { ID: lease.ID })).rejects.toMatchObject(
        NO_LEADER,
      );
      const keepAlive = closeAfter(openKeepAlive(m2.endpoint));
      keepAlive.send(lease.ID);
      expect(await keepAlive.ended).toMatchObject({
        code: GrpcCode.UNAVAILABLE,
        details: 'etcdserver: no leader',
      });
      // The member's lessor lists its leases alone.
      expect((await cut.unary(Lease.LeaseLeases, {})).leases.map((l) => l.ID)).toEqual([lease.ID]);
      m2.heal();
      expect(c.store.revision).toBe(before);
      expect(c.leases.all().map((l) => l.id)).toEqual([lease.ID]);
      expect((await readKey(clientOf(c.members[0]!), 'k')).value).toBeUndefined();
    },
  );

  it("a partitioned member's watchers see nothing new, then catch up in order when it heals", async () => {
    const c = await start({ members: 3 });
    const [m0, , m2] = c.members as ThreeMembers;
    const writer = clientOf(m0);
    const plain = watchOf(m2).open();
    plain.create({ key: b('w/'), rangeEnd: b('w0') });
    expect((await plain.next()).created).toBe(true);
    const strict = watchOf(m2).open({ hasleader: 'true' });
    strict.create({ key: b('w/'), rangeEnd: b('w0') });
    expect((await strict.next()).created).toBe(true);

    await put(writer, 'w/1', 'a');
    expect(keysOf(await plain.next())).toEqual(['w/1']);
    expect(keysOf(await strict.next())).toEqual(['w/1']);
    expect(m2.watchable.size).toBe(2);
    m2.partition();
    // The require-leader stream ends with "no leader", as etcd's leader monitor ends it.
    await expect(strict.take(1)).rejects.toThrow(/etcdserver: no leader/);
    expect(strict.error?.code).toBe(GrpcCode.UNAVAILABLE);
    // Its handler heard the stream end: its watcher is gone, the plain stream's stays.
    expect(m2.watchable.size).toBe(1);
    await put(writer, 'w/2', 'b');
    await put(writer, 'w/3', 'c');
    expect(await plain.drain(200)).toEqual([]);
    // A watch created meanwhile starts from what the member knows.
    const late = watchOf(m2).open();
    late.create({ key: b('w/'), rangeEnd: b('w0') });
    expect((await late.next()).created).toBe(true);
    expect(await late.drain(100)).toEqual([]);

    m2.heal();
    const caughtUp = await plain.nextMany(1);
    expect(caughtUp.flatMap(keysOf)).toEqual(['w/2', 'w/3']);
    expect((await late.nextMany(1)).flatMap(keysOf)).toEqual(['w/2', 'w/3']);
    await put(writer, 'w/4', 'd');
    expect(keysOf(await plain.next())).toEqual(['w/4']);
  });

  it('with a virtual clock, a held call times out when the clock passes requestTimeoutMs, not before', async () => {
    const c = await start({ members: 3, clock: 'virtual', requestTimeoutMs: 200 });
    const m2 = c.members[2]!;
    m2.partition();
    let settled: unknown;
    const held = clientOf(m2)
      .unary(KV.Range, { key: b('k') })
      .then(
        () => 'answered',
        (error: unknown) => error,
      )
      .then((outcome) => {
        settled = outcome;
      });
    // Real time passes, more than the request timeout; the cluster's clock does not: still held.
    await sleep(500);
    await c.clock.advance(199);
    await sleep(50);
    expect(settled).toBeUndefined();
    await c.clock.advance(1);
    await held;
    expect(settled).toMatchObject(status(GrpcCode.UNAVAILABLE, 'etcdserver: request timed out'));
  });

  it('without a quorum nobody leads, no lease expires; with it back, leases get their full TTL', async () => {
    const c = await start({ members: 3, clock: 'virtual' });
    const [m0, m1, m2] = c.members as ThreeMembers;
    const client = clientOf(m0);
    const grant = await client.unary(Lease.LeaseGrant, { TTL: 5n });
    await client.unary(KV.Put, { key: b('owned'), value: b('x'), lease: grant.ID });
    await Promise.all([m1.stop(), m2.stop()]);
    expect(c.leader).toBeUndefined();
    expect((await client.unary(Maintenance.Status, {})).leader).toBe(0n);
    await expect(client.unary(KV.Range, { key: b('owned') }, REQUIRE_LEADER)).rejects.toMatchObject(
      NO_LEADER,
    );
    await c.clock.advance(60_000);
    await sleep(50);
    expect(c.leases.get(grant.ID)).toBeDefined();

    await m1.start();
    expect(c.leader).toBe(m0);
    expect(c.term).toBe(3);
    // 5 s left again, read an instant later (etcd rounds the seconds left down).
    const ttl = await client.unary(Lease.LeaseTimeToLive, { ID: grant.ID });
    expect(ttl.TTL).toBe(4n);
    await c.clock.advance(6_000);
    // The revoke goes through the members' log in real time: expect.poll's 1 s default is too
    // short for a loaded run.
    await expect.poll(() => c.leases.get(grant.ID), { timeout: 15_000 }).toBeUndefined();
    expect((await readKey(client, 'owned')).value).toBeUndefined();
  });

  it('MoveLeader: only the leader moves it, to a reachable member, in a new term', async () => {
    const c = await start({ members: 3 });
    const [m0, m1, m2] = c.members as ThreeMembers;
    await expect(
      clientOf(m1).unary(Maintenance.MoveLeader, { targetID: m2.memberId }),
    ).rejects.toMatchObject(status(GrpcCode.FAILED_PRECONDITION, 'etcdserver: not leader'));
    await expect(
      clientOf(m0).unary(Maintenance.MoveLeader, { targetID: 12345n }),
    ).rejects.toMatchObject(
      status(GrpcCode.FAILED_PRECONDITION, 'etcdserver: bad leader transferee'),
    );
    // To an unreachable member: never answered (etcd waits on the call's context), so the
    // client's deadline ends it; the leader stays.
    m1.partition();
    await expect(
      clientOf(m0).unary(Maintenance.MoveLeader, { targetID: m1.memberId }, { deadlineMs: 300 }),
    ).rejects.toMatchObject({ code: GrpcCode.DEADLINE_EXCEEDED });
    expect(c.leader).toBe(m0);
    expect(c.term).toBe(2);
    m1.heal();
    await clientOf(m0).unary(Maintenance.MoveLeader, { targetID: m2.memberId });
    expect(c.leader).toBe(m2);
    expect(c.term).toBe(3);
    expect((await statusOf(m0)).leader).toBe(m2.memberId);
    // faults.changeLeader() elects the member it is called on.
    expect(m1.faults.changeLeader()).toBe(4);
    expect(c.leader).toBe(m1);
  });

  it('a paused leader answers nothing and loses the leadership; resumed, it answers', async () => {
    const c = await start({ members: 3 });
    const [m0, m1] = c.members as [EmbeddedClusterMember, EmbeddedClusterMember];
    const frozen = clientOf(m0);
    m0.pause();
    expect(c.leader).toBe(m1);
    await expect(frozen.unary(Maintenance.Status, {}, { deadlineMs: 300 })).rejects.toMatchObject({
      code: GrpcCode.DEADLINE_EXCEEDED,
    });
    const held = frozen.unary(KV.Put, { key: b('p'), value: b('1') });
    await put(clientOf(m1), 'q', '2');
    m0.resume();
    expect(m0.leaderId).toBe(m1.memberId);
    expect((await held).header!.memberId).toBe(m0.memberId);
    expect((await readKey(clientOf(m1), 'p')).value).toBe('1');
  });

  it('refuses bad options with a clear error', async () => {
    await expect(EmbeddedCluster.start({ members: 0 })).rejects.toThrow(
      'members must be an integer from 1 to 9, got 0',
    );
    await expect(EmbeddedCluster.start({ members: 2, ports: [0] })).rejects.toThrow(
      'ports must list one port per member (2), got 1',
    );
    await expect(EmbeddedCluster.start({ requestTimeoutMs: 0 })).rejects.toThrow(
      'requestTimeoutMs must be positive, got 0',
    );
  });
});

function keysOf(response: ResponseSummary): string[] {
  return (response.events ?? []).map((event) => event.kv?.key ?? '');
}
