// Conformance against etcd: Status, MemberList, HashKV and the
// NOSPACE alarm.
import {
  etcdserverpb_Cluster as Cluster,
  etcdserverpb,
  etcdserverpb_Lease as Lease,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { expect, it } from 'vitest';
import { op } from '../support/kv.js';
import type { TestServer } from '../support/test-server.js';
import { atLeast } from './fresh-server.js';
import { describeConformance, Errors } from './suite.js';

const { GET, ACTIVATE, DEACTIVATE } = etcdserverpb.AlarmRequest.AlarmAction;
const { NOSPACE } = etcdserverpb.AlarmType;

/**
 * HashKV of the history in {@link writeHistory}, at revision 5 with no compaction, as etcd 3.4.23
 * computes it (CRC-32C over the backend keys and KeyValue encodings).
 */
const HISTORY_HASH = 2_891_746_590;

describeConformance('Maintenance and Cluster (52-55)', ({ fresh }) => {
  /** a=1 (2), b=2 (3), txn {c=3, delete a} (4), a=4 (5). */
  async function writeHistory(api: Awaited<ReturnType<typeof fresh>>['api']): Promise<void> {
    await api.put('a', '1');
    await api.put('b', '2');
    await api.txn({ success: [op.put('c', '3'), op.del('a')] });
    await api.put('a', '4');
  }

  /**
   * Status once the member's own start-up entries are applied: a fresh etcd proposes one (the
   * cluster version) in its first ~100 ms, so its raft index moves once without any request.
   */
  async function settledStatus(client: TestServer['client']) {
    let status = await client.unary(Maintenance.Status, {});
    for (const deadline = Date.now() + 3_000; Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const again = await client.unary(Maintenance.Status, {});
      if (again.raftIndex === status.raftIndex) return again;
      status = again;
    }
    return status;
  }

  it('52 status: version, leader = own member id, one raft index per request, no errors, not a learner', async () => {
    const { client, api, version } = await fresh();
    const before = await settledStatus(client);
    expect(before.version).toBe(version);
    expect(before.leader).toBe(before.header?.memberId);
    expect(before.raftTerm).toBe(2n);
    expect(before.header?.revision).toBe(1n);
    expect(before.errors).toEqual([]);
    expect(before.isLearner).toBe(false);
    expect(before.dbSize).toBeGreaterThan(0n);
    expect(before.dbSizeInUse).toBeGreaterThan(0n);
    expect(before.dbSizeInUse).toBeLessThanOrEqual(before.dbSize);
    await api.put('a', '1');
    const after = await client.unary(Maintenance.Status, {});
    expect(after.raftIndex).toBe(before.raftIndex + 1n);
    expect(after.header?.revision).toBe(2n);
  });

  it('53 member list: one member, itself, with its name and client URL; header revision 0', async () => {
    const server = await fresh();
    const status = await server.client.unary(Maintenance.Status, {});
    const response = await server.client.unary(Cluster.MemberList, {});
    expect(response.header?.memberId).toBe(status.header?.memberId);
    expect(response.header?.clusterId).toBe(status.header?.clusterId);
    expect(response.header?.raftTerm).toBe(2n);
    expect(response.header?.revision).toBe(0n);
    expect(response.members).toHaveLength(1);
    const [member] = response.members;
    expect(member?.ID).toBe(status.header?.memberId);
    expect(member?.name).toBe(server.backend === 'etcd' ? 'etcdkit' : 'default');
    expect(member?.clientURLs).toEqual([server.endpoint]);
    expect(member?.peerURLs).toHaveLength(1);
    expect(member?.isLearner).toBe(false);
  });

  it("54 HashKV stable: -1 before any compaction, etcd's hash for a history, the same after more writes", async () => {
    const { client, api, version } = await fresh();
    const empty = await client.unary(Maintenance.HashKV, { revision: 0n });
    expect([empty.compactRevision, empty.header?.revision]).toEqual([-1n, 1n]);
    await writeHistory(api);
    const atFive = await client.unary(Maintenance.HashKV, { revision: 0n });
    expect([atFive.hash, atFive.compactRevision, atFive.header?.revision]).toEqual([
      HISTORY_HASH,
      -1n,
      5n,
    ]);
    if (atLeast(version, 3, 6)) expect(atFive.hashRevision).toBe(5n);
    await api.put('d', '5'); // 6
    expect((await client.unary(Maintenance.HashKV, { revision: 5n })).hash).toBe(HISTORY_HASH);
    expect((await client.unary(Maintenance.HashKV, { revision: 6n })).hash).not.toBe(HISTORY_HASH);
    await expect(client.unary(Maintenance.HashKV, { revision: 7n })).rejects.toMatchObject(
      Errors.future,
    );
    await api.compact(4);
    expect((await client.unary(Maintenance.HashKV, { revision: 0n })).compactRevision).toBe(4n);
    await expect(client.unary(Maintenance.HashKV, { revision: 3n })).rejects.toMatchObject(
      Errors.compacted,
    );
  });

  it('54 HashKV of a revision compacted at: 3.5+ answers the hash its compaction kept (a compaction at 0 included), 3.4 hashes again', async () => {
    const { client, api, version } = await fresh();
    const hashKV = async (revision = 0n) => {
      const { hash, compactRevision } = await client.unary(Maintenance.HashKV, { revision });
      return [hash, Number(compactRevision)];
    };
    const EMPTY = 1_084_519_789;
    await api.compact(0);
    await api.put('a', '1'); // 2
    await api.compact(1);
    await api.put('b', '1'); // 3
    await api.compact(2);
    const kept = atLeast(version, 3, 5);
    const current = await hashKV(3n);
    expect(current[1]).toBe(2);
    // Revision 0 is the current one, unless a compaction was at 0: 3.5+ answers that one's hash.
    expect(await hashKV()).toEqual(kept ? [EMPTY, -1] : current);
    // At the compaction revision, 3.5+ answers the hash taken then, with the compaction before
    // it; 3.4 refuses it as compacted.
    if (kept) expect((await hashKV(2n))[1]).toBe(1);
    else await expect(hashKV(2n)).rejects.toMatchObject(Errors.compacted);
  });

  it('55 NOSPACE blocks put: puts, txns with a put and lease grants fail; reads and deletes go on', async () => {
    const { client, api } = await fresh();
    await api.put('a', '1'); // 2
    const memberID = (await client.unary(Maintenance.Status, {})).header?.memberId ?? 0n;
    const alarm = (action: number) =>
      client.unary(Maintenance.Alarm, { action, alarm: NOSPACE, memberID });
    await alarm(ACTIVATE);
    await expect(api.put('b', '1')).rejects.toMatchObject(Errors.noSpace);
    await expect(api.txn({ failure: [op.put('b', '1')] })).rejects.toMatchObject(Errors.noSpace);
    await expect(client.unary(Lease.LeaseGrant, { TTL: 60n })).rejects.toMatchObject(
      Errors.noSpace,
    );
    expect((await api.range('a')).count).toBe(1n);
    expect((await api.del('a')).header?.revision).toBe(3n);
    expect((await client.unary(Maintenance.Status, {})).errors).toEqual([
      `memberID:${memberID} alarm:NOSPACE `,
    ]);
    await alarm(DEACTIVATE);
    expect((await client.unary(Maintenance.Alarm, { action: GET })).alarms).toEqual([]);
    expect((await api.put('b', '1')).header?.revision).toBe(4n);
  });

  it('55 NOSPACE blocks put: a small backend quota raises it by itself (at a write that depends on the database size)', async () => {
    const { client, api } = await fresh({ quotaBackendBytes: 256 * 1024 });
    const memberId = (await client.unary(Maintenance.Status, {})).header?.memberId ?? 0n;
    const value = 'x'.repeat(10_000);
    let refused: unknown;
    for (let i = 0; i < 500 && refused === undefined; i++) {
      refused = await api.put(`big/${String(i).padStart(3, '0')}`, value).then(
        () => undefined,
        (error: unknown) => error,
      );
    }
    expect(refused).toMatchObject(Errors.noSpace);
    const alarms = (await client.unary(Maintenance.Alarm, { action: GET })).alarms;
    expect(alarms.map((a) => [a.memberID, a.alarm])).toEqual([[memberId, NOSPACE]]);
  });
});
