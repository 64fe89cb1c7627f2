// MemberAppliedState: the copy of a simulated cluster's state a member keeps when it is cut off
// from the quorum. It must not move with the shared state, survive the shared store's compaction,
// and refuse every write.
import { describe, expect, it } from 'vitest';
import { MemberAppliedState } from '../../src/cluster/applied-state.js';
import { createServerCore, type ServerCore } from '../../src/member/server-core.js';
import { b } from '../support/bytes.js';

function freshCore(): ServerCore {
  return createServerCore({
    member: {
      clusterId: 1n,
      memberId: 2n,
      name: 'member0',
      peerUrls: ['http://127.0.0.1:12380'],
      clientUrls: ['http://127.0.0.1:2379'],
    },
    maxRequestBytes: 1.5 * 1024 * 1024,
    clientCertAuth: false,
  });
}

const put = (core: ServerCore, key: string, value: string) =>
  core.kv.put({ key: b(key), value: b(value) }, 16);

describe('MemberAppliedState', () => {
  it('keeps the revision, history, raft term and index it was captured at', () => {
    const core = freshCore();
    put(core, 'k', 'one');
    put(core, 'k', 'two');
    const applied = MemberAppliedState.capture(core);
    const hashAtCapture = core.store.hashKV(0);
    put(core, 'k', 'three');
    core.proposals.electLeader();
    core.kv.compact({ revision: 4n }, 2);

    expect({
      revision: applied.revision,
      raftTerm: applied.raftTerm,
      raftIndex: applied.raftIndex,
      storeRevision: applied.store.revision,
      compactRevision: applied.store.compactRevision,
    }).toEqual({ revision: 3, raftTerm: 2, raftIndex: 6, storeRevision: 3, compactRevision: -1 });
    const values = [2, 3].map((revision) =>
      Buffer.from(applied.store.range({ key: b('k') }, { revision }).kvs[0]!.value).toString(),
    );
    expect(values).toEqual(['one', 'two']);
    expect(applied.store.hashKV(0)).toEqual(hashAtCapture);
    expect(() => applied.store.range({ key: b('k') }, { revision: 4 })).toThrow(
      'etcdserver: mvcc: required revision is a future revision',
    );
  });

  it('serves read-only txns and refuses every write, leaving the cluster log alone', () => {
    const core = freshCore();
    put(core, 'k', 'v');
    const applied = MemberAppliedState.capture(core);
    const index = core.proposals.index;
    const read = applied.kv.txn(
      {
        compare: [{ key: b('k'), target: 3, result: 0, value: b('v') }],
        success: [{ requestRange: { key: b('k'), serializable: true } }],
      },
      32,
    );
    expect({ succeeded: read.succeeded, revision: read.header!.revision }).toEqual({
      succeeded: true,
      revision: 2n,
    });
    const refused = 'a member cut off from the quorum applies no write';
    expect(() => applied.kv.put({ key: b('k'), value: b('x') }, 8)).toThrow(refused);
    expect(() => applied.kv.deleteRange({ key: b('k') }, 4)).toThrow(refused);
    expect(() =>
      applied.kv.txn({ success: [{ requestPut: { key: b('k'), value: b('x') } }] }, 12),
    ).toThrow(refused);
    expect(() => applied.kv.compact({ revision: 2n }, 2)).toThrow(refused);
    expect({
      revision: applied.store.revision,
      compactRevision: applied.store.compactRevision,
      sharedIndex: core.proposals.index,
    }).toEqual({ revision: 2, compactRevision: -1, sharedIndex: index });
  });

  it('copies leases, members, alarms and sizes; a defragment shrinks only its own file', () => {
    const core = freshCore();
    const lease = core.services.leases.grant({ ID: 7n, TTL: 60n }, 4);
    for (let i = 0; i < 50; i++) put(core, `k${i}`, 'x'.repeat(200));
    core.kv.deleteRange({ key: b('k'), rangeEnd: b('l') }, 4);
    core.kv.compact({ revision: BigInt(core.store.revision) }, 2);
    const applied = MemberAppliedState.capture(core);
    const sharedSize = core.services.backend.size;
    core.services.leases.grant({ ID: 8n, TTL: 60n }, 4);

    expect({
      leases: applied.leases,
      leaseIds: applied.leaseIds,
      members: applied.members.map((m) => m.id),
      alarms: applied.alarms,
      alarmErrors: applied.alarmErrors,
      dbSize: applied.dbSize,
    }).toEqual({
      leases: [{ id: lease.ID, ttl: 60 }],
      leaseIds: [7n],
      members: [2n],
      alarms: [],
      alarmErrors: [],
      dbSize: sharedSize,
    });
    expect(applied.dbSize).toBeGreaterThan(applied.dbSizeInUse);
    applied.defragment();
    expect(applied.dbSize).toBe(applied.dbSizeInUse);
    expect(core.services.backend.size).toBe(sharedSize);
  });
});
