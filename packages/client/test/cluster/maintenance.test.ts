// MaintenanceClient against a real single-member etcd and a real 3-member cluster.
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  describeRealEtcd,
  type EtcdCluster,
  type EtcdProcess,
  startEtcd,
  startEtcdCluster,
} from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { prefixEnd, toBytes } from '../../src/bytes.js';
import { MaintenanceClient } from '../../src/cluster/maintenance.js';
import { Connection } from '../../src/connection/connection.js';
import {
  FutureRevisionError,
  NoSpaceError,
  NotLeaderError,
  type ServerErrorClass,
} from '../../src/errors.js';
import { etcdserverpb_KV as kv } from '../../src/generated/methods.js';
import { LeaseClient } from '../../src/lease/lease.js';

/**
 * Matches an etcd error by its stable code and exact message. (`toBeInstanceOf` would be the natural
 * check, but errors.ts registers the anonymous base class of each error, not the exported one.)
 */
const etcdError = (kind: ServerErrorClass) =>
  expect.objectContaining({ code: kind.errorCode, message: kind.etcdMessage });

const run = promisify(execFile);

/** etcdctl checks our snapshot files; it ships apart from the server (Debian: etcd-client). */
const etcdctl = process.env.ETCDKIT_ETCDCTL_BIN ?? 'etcdctl';
const etcdctlFound = spawnSync(etcdctl, ['version']).status === 0;

describeRealEtcd('MaintenanceClient on a single member', () => {
  let etcd: EtcdProcess;
  let connection: Connection;
  let maintenance: MaintenanceClient;
  let scratch: string;

  beforeAll(async () => {
    etcd = await startEtcd();
    connection = new Connection({ endpoints: etcd.endpoints });
    maintenance = new MaintenanceClient(connection);
    scratch = await mkdtemp(join(tmpdir(), 'etcdkit-maintenance-'));
  });

  afterAll(async () => {
    await connection?.close();
    await etcd?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  async function put(key: string, value = 'v'): Promise<bigint> {
    const request = { key: toBytes(key), value: toBytes(value) };
    const response = await connection.unary(kv.Put, request, 'write');
    return response.header?.revision ?? 0n;
  }

  it('reports the status of the member, which leads itself', async () => {
    const status = await maintenance.status();
    expect(status).toMatchObject({
      version: etcd.version,
      leader: status.header.memberId,
      memberId: status.header.memberId,
      isLeader: true,
      isLearner: false,
      errors: [],
    });
    expect(status.memberId).not.toBe(0n);
    expect(status.dbSize).toBeGreaterThan(0n);
    expect(status.dbSizeInUse).toBeGreaterThan(0n);
    expect(status.dbSizeInUse).toBeLessThanOrEqual(status.dbSize);
    expect(status.raftTerm).toBeGreaterThanOrEqual(2n);
    expect(status.raftAppliedIndex).toBeGreaterThan(0n);
    expect(status.raftIndex).toBeGreaterThanOrEqual(status.raftAppliedIndex);
    if (etcd.version.startsWith('3.4.') || etcd.version.startsWith('3.5.')) {
      expect(status.storageVersion).toBeUndefined();
      expect(status.dbSizeQuota).toBeUndefined();
    }
  });

  it('lists no alarm, blocks writes and grants under NOSPACE, and lifts them on deactivate', async () => {
    const { memberId } = await maintenance.status();
    expect(await maintenance.alarms()).toEqual([]);

    expect(await maintenance.activateAlarm(memberId, 'NOSPACE')).toEqual([
      { memberId, type: 'NOSPACE' },
    ]);
    try {
      expect(await maintenance.alarms()).toEqual([{ memberId, type: 'NOSPACE' }]);
      expect((await maintenance.status()).errors).toEqual([`memberID:${memberId} alarm:NOSPACE `]);
      await expect(put('alarm/blocked')).rejects.toEqual(etcdError(NoSpaceError));
      await expect(new LeaseClient(connection).grant(10)).rejects.toEqual(etcdError(NoSpaceError));
    } finally {
      expect(await maintenance.deactivateAlarm(memberId, 'NOSPACE')).toEqual([
        { memberId, type: 'NOSPACE' },
      ]);
    }
    expect(await maintenance.alarms()).toEqual([]);
    expect(await maintenance.deactivateAlarm(memberId, 'NOSPACE')).toEqual([]);
    expect(await put('alarm/allowed')).toBeGreaterThan(1n);
  });

  it('hashes the key-value history the same for the same revision, before and after more writes', async () => {
    const revision = await put('hash/a');
    const first = await maintenance.hashKV(revision);
    expect(first.compactRevision).toBe(-1n);
    expect(first.header.revision).toBe(revision);

    await put('hash/b');
    const again = await maintenance.hashKV(revision);
    expect(again.hash).toBe(first.hash);
    const current = await maintenance.hashKV();
    expect(current.hash).not.toBe(first.hash);
    expect(current.header.revision).toBe(revision + 1n);

    await expect(maintenance.hashKV(revision + 100n)).rejects.toEqual(
      etcdError(FutureRevisionError),
    );
  });

  it('hashes the whole backend as a 32-bit number', async () => {
    const { hash } = await maintenance.hash();
    expect(Number.isInteger(hash) && hash >= 0 && hash < 2 ** 32).toBe(true);
  });

  it('defragments, giving the pages of deleted and compacted history back', async () => {
    for (let i = 0; i < 200; i++) await put(`defrag/${i}`, 'x'.repeat(2000));
    const prefix = toBytes('defrag/');
    const deleted = await connection.unary(
      kv.DeleteRange,
      { key: prefix, rangeEnd: prefixEnd(prefix) },
      'write',
    );
    const revision = deleted.header?.revision ?? 0n;
    await connection.unary(kv.Compact, { revision, physical: true }, 'write');
    const before = await maintenance.status();

    await maintenance.defragment({ timeoutMs: 20_000 });

    const after = await maintenance.status();
    expect(after.dbSize).toBeLessThan(before.dbSize);
  });

  it('streams a snapshot whose last 32 bytes are the SHA-256 of the database before them', async () => {
    await put('snapshot/key', 'value');
    const chunks: Uint8Array[] = [];
    for await (const chunk of maintenance.snapshot()) chunks.push(chunk);
    const bytes = Buffer.concat(chunks);
    const database = bytes.subarray(0, bytes.length - 32);
    expect(database.length % 4096).toBe(0);
    expect(bytes.subarray(bytes.length - 32)).toEqual(
      createHash('sha256').update(database).digest(),
    );
  });

  it.skipIf(!etcdctlFound)(
    `writes a snapshot file that etcdctl reads and restores${etcdctlFound ? '' : ` (skipped: ${etcdctl} not found)`}`,
    async () => {
      const revision = await put('snapshot/file', 'value');
      const path = join(scratch, 'backup.db');

      const file = await maintenance.snapshotToFile(path);

      expect(file).toEqual({ path, size: (await readFile(path)).length });
      expect(file.size % 4096).toBe(32);
      expect(await readdir(scratch)).toEqual(['backup.db']);

      const { stdout } = await run(etcdctl, ['snapshot', 'status', path, '-w', 'json']);
      const status = JSON.parse(stdout) as { revision: number; totalSize: number };
      expect(BigInt(status.revision)).toBe(revision);
      expect(status.totalSize).toBe(file.size - 32);

      // restore checks the trailing SHA-256 (no --skip-hash-check), so this proves it is etcd's.
      const restored = join(scratch, 'restored');
      await run(etcdctl, ['snapshot', 'restore', path, '--data-dir', restored], {
        env: { ...process.env, ETCDCTL_API: '3' },
      });
      expect(await readdir(restored)).toEqual(['member']);
    },
  );

  it('gives the snapshot as a Node.js Readable', async () => {
    let size = 0;
    for await (const chunk of maintenance.snapshotReadable()) size += (chunk as Buffer).length;
    expect(size % 4096).toBe(32);
  });
});

describeRealEtcd('MaintenanceClient.moveLeader on a 3-member cluster', () => {
  let etcd: EtcdCluster;
  const connections: Connection[] = [];

  beforeAll(async () => {
    etcd = await startEtcdCluster({ members: 3 });
  });

  afterAll(async () => {
    await Promise.all(connections.map((c) => c.close()));
    await etcd?.stop();
  });

  /** A client of exactly one member: maintenance calls are about the member they reach. */
  function memberClient(endpoint: string): MaintenanceClient {
    const connection = new Connection({ endpoints: [endpoint] });
    connections.push(connection);
    return new MaintenanceClient(connection);
  }

  it('moves leadership to a follower when sent to the leader', async () => {
    const leader = await etcd.waitForLeader();
    const follower = etcd.members.find((m) => m !== leader)!;
    const atLeader = memberClient(leader.endpoint);
    const atFollower = memberClient(follower.endpoint);
    const followerId = (await atFollower.status()).memberId;

    await atLeader.moveLeader(followerId);

    const status = await atFollower.status();
    expect(status.leader).toBe(followerId);
    expect(status.isLeader).toBe(true);
    expect((await atLeader.status()).leader).toBe(followerId);
  });

  it('fails with NotLeaderError when sent to a follower', async () => {
    const leader = await etcd.waitForLeader();
    const [first, second] = etcd.members.filter((m) => m !== leader);
    const atFollower = memberClient(first!.endpoint);
    const otherId = (await memberClient(second!.endpoint).status()).memberId;
    await expect(atFollower.moveLeader(otherId)).rejects.toEqual(etcdError(NotLeaderError));
  });
});
