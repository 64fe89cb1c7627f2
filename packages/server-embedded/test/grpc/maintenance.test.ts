// The Maintenance service over gRPC, on the embedded server or a real etcd.
import { createHash } from 'node:crypto';
import { Etcd } from '@etcdkit/client';
import {
  etcdserverpb,
  etcdserverpb_Lease as Lease,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeSnapshot } from '../../src/index.js';
import { b, text } from '../support/bytes.js';
import { status } from '../support/grpc-client.js';
import { kv, op } from '../support/kv.js';
import {
  specBackend,
  startTestServer,
  type TestServer,
  type TestServerOptions,
  versionAtLeast,
} from '../support/test-server.js';

const RESOURCE_EXHAUSTED = 8;
const FAILED_PRECONDITION = 9;
const OUT_OF_RANGE = 11;
const UNIMPLEMENTED = 12;
const DATA_LOSS = 15;
const noSpace = status(RESOURCE_EXHAUSTED, 'etcdserver: mvcc: database space exceeded');
const corrupt = status(DATA_LOSS, 'etcdserver: corrupt cluster');
const { GET, ACTIVATE, DEACTIVATE } = etcdserverpb.AlarmRequest.AlarmAction;
const { NONE, NOSPACE, CORRUPT } = etcdserverpb.AlarmType;

describe(`Maintenance [${specBackend}]`, () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  async function start(options: TestServerOptions = {}) {
    server = await startTestServer(options);
    const { client } = server;
    const memberId = (await client.unary(Maintenance.Status, {})).header?.memberId ?? 0n;
    const alarm = async (action: number, alarm: number = NONE, memberID = memberId) =>
      (await client.unary(Maintenance.Alarm, { action, alarm, memberID })).alarms.map((a) => ({
        memberID: a.memberID,
        alarm: a.alarm,
      }));
    return { server, client, api: kv(server), memberId, alarm };
  }

  describe('Alarm', () => {
    it('lists nothing on a fresh server, and what was raised once it is', async () => {
      const { alarm, memberId } = await start();
      expect(await alarm(GET)).toEqual([]);
      expect(await alarm(ACTIVATE, NOSPACE)).toEqual([{ memberID: memberId, alarm: NOSPACE }]);
      // Raising it again answers the active alarm.
      expect(await alarm(ACTIVATE, NOSPACE)).toEqual([{ memberID: memberId, alarm: NOSPACE }]);
      expect(await alarm(ACTIVATE, NOSPACE, 42n)).toEqual([{ memberID: 42n, alarm: NOSPACE }]);
      const all = await alarm(GET);
      expect(all).toHaveLength(2);
      expect(all).toEqual(
        expect.arrayContaining([
          { memberID: memberId, alarm: NOSPACE },
          { memberID: 42n, alarm: NOSPACE },
        ]),
      );
      expect(await alarm(GET, CORRUPT)).toEqual([]);
      expect(await alarm(DEACTIVATE, NOSPACE, 42n)).toEqual([{ memberID: 42n, alarm: NOSPACE }]);
      expect(await alarm(DEACTIVATE, NOSPACE, 42n)).toEqual([]);
      expect(await alarm(GET, NOSPACE)).toEqual([{ memberID: memberId, alarm: NOSPACE }]);
    });

    it('ignores activating NONE (etcd 3.5+)', async () => {
      const { server, alarm } = await start();
      if (!versionAtLeast(server.version, 3, 5)) return; // 3.4 stores it as an alarm
      expect(await alarm(ACTIVATE, NONE)).toEqual([]);
      expect(await alarm(GET)).toEqual([]);
    });

    it('reports active alarms in Status errors, as etcd prints them', async () => {
      const { client, alarm, memberId } = await start();
      await alarm(ACTIVATE, NOSPACE);
      expect((await client.unary(Maintenance.Status, {})).errors).toEqual([
        `memberID:${memberId} alarm:NOSPACE `,
      ]);
      await alarm(DEACTIVATE, NOSPACE);
      expect((await client.unary(Maintenance.Status, {})).errors).toEqual([]);
    });

    it('under NOSPACE refuses puts, txns with a put and lease grants; reads and deletes go on', async () => {
      const { client, api, alarm } = await start();
      await api.put('a', '1');
      const { ID } = await client.unary(Lease.LeaseGrant, { TTL: 60n });
      await alarm(ACTIVATE, NOSPACE);
      await expect(api.put('b', '1')).rejects.toMatchObject(noSpace);
      // A put in either branch counts, even one that would not run.
      await expect(api.txn({ failure: [op.put('b', '1')] })).rejects.toMatchObject(noSpace);
      await expect(client.unary(Lease.LeaseGrant, { TTL: 60n })).rejects.toMatchObject(noSpace);
      expect((await api.range('a')).count).toBe(1n);
      expect((await api.txn({ success: [op.range('a')] })).succeeded).toBe(true);
      expect((await api.txn({ success: [op.del('x')] })).succeeded).toBe(true);
      expect((await api.del('a')).deleted).toBe(1n);
      await client.unary(Lease.LeaseRevoke, { ID });
      await api.compact(await api.revision());
      await alarm(DEACTIVATE, NOSPACE);
      expect((await api.put('b', '1')).header?.revision).toBe(4n);
    });

    it('under CORRUPT refuses every write, read-only txns excepted', async () => {
      const { client, api, alarm } = await start();
      await api.put('a', '1');
      await alarm(ACTIVATE, CORRUPT);
      try {
        await expect(api.put('b', '1')).rejects.toMatchObject(corrupt);
        await expect(api.del('a')).rejects.toMatchObject(corrupt);
        await expect(api.txn({ success: [op.del('a')] })).rejects.toMatchObject(corrupt);
        await expect(api.compact(1)).rejects.toMatchObject(corrupt);
        await expect(client.unary(Lease.LeaseGrant, { TTL: 60n })).rejects.toMatchObject(corrupt);
        expect((await api.txn({ success: [op.range('a')] })).succeeded).toBe(true);
        expect((await api.range('a')).count).toBe(1n);
      } finally {
        await alarm(DEACTIVATE, CORRUPT);
      }
      expect((await api.put('b', '1')).header?.revision).toBe(3n);
    });

    it('raises NOSPACE by itself when a write would take the database past the quota', async () => {
      const { client, api, memberId, alarm } = await start({ quotaBackendBytes: 256 * 1024 });
      const value = 'x'.repeat(10_000);
      let refused: unknown;
      for (let i = 0; i < 500 && refused === undefined; i++) {
        refused = await api.put(`big/${String(i).padStart(3, '0')}`, value).then(
          () => undefined,
          (error: unknown) => error,
        );
      }
      expect(refused).toMatchObject(noSpace);
      expect(await alarm(GET)).toEqual([{ memberID: memberId, alarm: NOSPACE }]);
      expect((await client.unary(Maintenance.Status, {})).errors).toEqual([
        `memberID:${memberId} alarm:NOSPACE `,
      ]);
      // Clearing the alarm makes no room: the same put raises it again.
      await alarm(DEACTIVATE, NOSPACE);
      expect(await alarm(GET)).toEqual([]);
      await expect(api.put('big/again', value)).rejects.toMatchObject(noSpace);
      expect(await alarm(GET)).toEqual([{ memberID: memberId, alarm: NOSPACE }]);
      expect(
        (await api.range('big/', { rangeEnd: b('big0'), countOnly: true })).count,
      ).toBeGreaterThan(10n);
    });
  });

  describe('HashKV', () => {
    it('hashes the current revision by default, and a given one the same before and after more writes', async () => {
      const { client, api } = await start();
      await api.put('a', '1');
      const two = await client.unary(Maintenance.HashKV, { revision: 2n });
      expect(two.compactRevision).toBe(-1n);
      expect(two.header?.revision).toBe(2n);
      const current = await client.unary(Maintenance.HashKV, {});
      expect(current.hash).toBe(two.hash);
      await api.put('b', '1');
      expect((await client.unary(Maintenance.HashKV, { revision: 2n })).hash).toBe(two.hash);
      const three = await client.unary(Maintenance.HashKV, {});
      expect(three.hash).not.toBe(two.hash);
      expect(three.header?.revision).toBe(3n);
      if (versionAtLeast(server?.version ?? '', 3, 6)) {
        expect(two.hashRevision).toBe(2n);
        expect(three.hashRevision).toBe(3n);
      }
    });

    it('reports the compaction and refuses compacted and future revisions', async () => {
      const { client, api } = await start();
      await api.put('a', '1');
      await api.put('a', '2');
      await api.put('a', '3');
      await api.compact(3);
      expect((await client.unary(Maintenance.HashKV, {})).compactRevision).toBe(3n);
      // Exactly at the compaction revision: fine since etcd 3.6 (3.4 and 3.5 say compacted).
      if (versionAtLeast(server?.version ?? '', 3, 6)) {
        expect((await client.unary(Maintenance.HashKV, { revision: 3n })).hashRevision).toBe(3n);
      }
      await expect(client.unary(Maintenance.HashKV, { revision: 2n })).rejects.toMatchObject(
        status(OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted'),
      );
      await expect(client.unary(Maintenance.HashKV, { revision: 5n })).rejects.toMatchObject(
        status(OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision'),
      );
    });

    it('is equal on two servers with the same history', async () => {
      const first = await start();
      const other = await startTestServer();
      try {
        for (const { api } of [first, { api: kv(other) }]) {
          await api.put('a', '1');
          await api.txn({ success: [op.put('b', '2'), op.del('a')] });
          await api.compact(2);
        }
        const hashes = await Promise.all(
          [first.client, other.client].map((c) => c.unary(Maintenance.HashKV, {})),
        );
        expect(hashes[0]?.hash).toBe(hashes[1]?.hash);
      } finally {
        await other.stop();
      }
    });
  });

  it('Hash answers a 32-bit hash of the backend, which changes with a write', async () => {
    const { client, api } = await start();
    const before = await client.unary(Maintenance.Hash, {});
    expect(before.hash).toBeGreaterThanOrEqual(0);
    expect(before.hash).toBeLessThan(2 ** 32);
    expect(before.header?.revision).toBe(1n);
    await api.put('a', '1');
    expect((await client.unary(Maintenance.Hash, {})).hash).not.toBe(before.hash);
  });

  it('Defragment answers without a header', async () => {
    const { client } = await start();
    const response = await client.unary(Maintenance.Defragment, {});
    expect(response.header ?? null).toBeNull();
  });

  it('Snapshot streams chunks of at most 32 KiB counting down, then the SHA-256 of them all', async () => {
    const { client, api } = await start();
    for (let i = 0; i < 30; i++) await api.put(`key/${i}`, 'v'.repeat(3000));
    const messages = await client.serverStream(Maintenance.Snapshot, {});
    const data = messages.slice(0, -1);
    const digest = messages.at(-1);
    let remaining = data.reduce((n, m) => n + m.blob.length, 0);
    for (const message of data) {
      expect(message.blob.length).toBeLessThanOrEqual(32 * 1024);
      remaining -= message.blob.length;
      expect(message.remainingBytes).toBe(BigInt(remaining));
    }
    expect(digest?.remainingBytes).toBe(0n);
    const bytes = Buffer.concat(data.map((m) => m.blob));
    expect(bytes.length % 4096).toBe(0);
    expect(Buffer.from(digest?.blob ?? [])).toEqual(createHash('sha256').update(bytes).digest());
    // The etcdkit client's integrity check accepts it.
    const etcd = new Etcd({ endpoints: [server?.endpoint ?? ''] });
    try {
      let size = 0;
      for await (const chunk of etcd.maintenance.snapshot()) size += chunk.length;
      expect(size).toBe(bytes.length + 32);
    } finally {
      await etcd.close();
    }
  });

  it('MoveLeader to itself succeeds without a header; to anyone else fails', async () => {
    const { client, memberId } = await start();
    const moved = await client.unary(Maintenance.MoveLeader, { targetID: memberId });
    expect(moved.header ?? null).toBeNull();
    const bad = status(FAILED_PRECONDITION, 'etcdserver: bad leader transferee');
    await expect(client.unary(Maintenance.MoveLeader, { targetID: 42n })).rejects.toMatchObject(
      bad,
    );
    await expect(client.unary(Maintenance.MoveLeader, {})).rejects.toMatchObject(bad);
  });

  it('Downgrade: Unimplemented on etcd 3.4; from 3.5 a VALIDATE of the minor below is answered', async () => {
    const { client } = await start();
    const version = server?.version ?? '';
    const [major, minor] = version.split('.').map(Number) as [number, number];
    const validate = client.unary(Maintenance.Downgrade, {
      action: 0,
      version: `${major}.${minor - 1}`,
    });
    if (!versionAtLeast(version, 3, 5)) {
      await expect(validate).rejects.toMatchObject({ code: UNIMPLEMENTED });
      return;
    }
    expect((await validate).version).toMatch(new RegExp(`^${major}\\.${minor}(\\.0)?$`));
  });
});

describe.skipIf(specBackend !== 'embedded')('Maintenance [embedded]', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it('Status reports the quota, and a database size that only a defragment shrinks', async () => {
    // The quota is in Status from etcd 3.6 on.
    server = await startTestServer({ quotaBackendBytes: 64 * 1024 * 1024, etcdVersion: '3.6' });
    const { client } = server;
    const api = kv(server);
    const statusNow = () => client.unary(Maintenance.Status, {});
    const fresh = await statusNow();
    expect(fresh.dbSizeQuota).toBe(BigInt(server.embedded ? 64 * 1024 * 1024 : 0));
    expect([fresh.dbSize, fresh.dbSizeInUse]).toEqual([20_480n, 16_384n]);
    for (let i = 0; i < 50; i++) await api.put(`k/${i}`, 'x'.repeat(2000));
    const full = await statusNow();
    expect(full.dbSize).toBeGreaterThan(100_000n);
    expect(full.dbSize % 4096n).toBe(0n);
    await api.del('k/', { rangeEnd: b('k0') });
    await api.compact(await api.revision());
    const compacted = await statusNow();
    // The deletes added tombstones; compaction frees pages but the file keeps its size.
    expect(compacted.dbSize).toBeGreaterThanOrEqual(full.dbSize);
    expect(compacted.dbSizeInUse).toBeLessThan(full.dbSizeInUse);
    await client.unary(Maintenance.Defragment, {});
    const defragmented = await statusNow();
    expect(defragmented.dbSize).toBeLessThan(full.dbSize);
    expect(defragmented.dbSize - defragmented.dbSizeInUse).toBe(4096n);
  });

  it('a small quota lifts after deleting, compacting and defragmenting', async () => {
    server = await startTestServer({ quotaBackendBytes: 128 * 1024 });
    const { client } = server;
    const api = kv(server);
    const alarm = (action: number) =>
      client.unary(Maintenance.Alarm, {
        action,
        alarm: NOSPACE,
        memberID: server?.embedded?.member.memberId ?? 0n,
      });
    let i = 0;
    for (; ; i++) {
      const failed = await api.put(`k/${i}`, 'x'.repeat(5000)).then(
        () => false,
        () => true,
      );
      if (failed) break;
    }
    expect(i).toBeGreaterThan(5);
    // Each refusal raised the alarm through raft.
    expect((await alarm(GET)).alarms).toHaveLength(1);
    await api.del('k/', { rangeEnd: b('k0') });
    await api.compact(await api.revision());
    await client.unary(Maintenance.Defragment, {});
    await alarm(DEACTIVATE);
    expect((await api.put('after', '1')).header?.revision).toBeGreaterThan(0n);
  });

  it('snapshots the store in its own format: history, compaction, leases, members and alarms', async () => {
    server = await startTestServer({ etcdVersion: '3.7' });
    const { client } = server;
    const api = kv(server);
    const { ID } = await client.unary(Lease.LeaseGrant, { TTL: 60n, ID: 7n });
    await api.put('a', '1', { lease: ID });
    await api.put('b', '1');
    await api.del('b');
    await api.put('a', '2', { lease: ID });
    await api.compact(3);
    const memberId = server.embedded?.member.memberId ?? 0n;
    await client.unary(Maintenance.Alarm, { action: ACTIVATE, alarm: NOSPACE, memberID: memberId });
    const messages = await client.serverStream(Maintenance.Snapshot, {});
    expect(messages[0]?.version).toBe('3.7.0');
    const data = Buffer.concat(messages.slice(0, -1).map((m) => m.blob));
    const snapshot = decodeSnapshot(data);
    expect(snapshot.metadata).toMatchObject({
      version: '3.7.0',
      memberId,
      revision: 5,
      compactRevision: 3,
      leases: [{ id: 7n, ttl: 60 }],
      alarms: [{ memberId, type: NOSPACE }],
    });
    expect(snapshot.metadata.members.map((m) => m.id)).toEqual([memberId]);
    expect(
      snapshot.changes.map(
        (c) => `${c.main}.${c.sub} ${c.tombstone ? 'del' : 'put'} ${text(c.kv.key)}`,
      ),
    ).toEqual(['2.0 put a', '3.0 put b', '4.0 del b', '5.0 put a']);
    expect(snapshot.changes.at(-1)?.kv).toMatchObject({ version: 2, lease: 7n, createRevision: 2 });
  });

  it('answers the same Hash for the same state', async () => {
    server = await startTestServer({});
    const other = await startTestServer();
    try {
      const hashOf = async (s: TestServer) => (await s.client.unary(Maintenance.Hash, {})).hash;
      expect(await hashOf(server)).toBe(await hashOf(server));
      await kv(server).put('a', '1');
      await kv(other).put('a', '1');
      // Different members: different ids in the hashed state, as etcd's backends differ too.
      expect(await hashOf(server)).not.toBe(await hashOf(other));
    } finally {
      await other.stop();
    }
  });
});
