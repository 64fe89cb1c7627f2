// A server started again on its data dir is the same member with the same data: every revision
// of history, compactions, leases (with a full TTL again), alarms, members, ids, and a raft term
// one higher, as a restarted etcd member has.
import { readdir } from 'node:fs/promises';
import { Etcd, op, prefixPermission } from '@etcdkit/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd, type EmbeddedEtcdOptions, type VirtualClock } from '../../src/index.js';
import { removeDir, temporaryDir } from './support.js';

describe('a server restarted on its data dir', () => {
  let dir: string;
  const running: EmbeddedEtcd[] = [];
  const clients: Etcd[] = [];

  beforeEach(async () => {
    dir = await temporaryDir();
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await Promise.all(running.splice(0).map((server) => server.stop()));
    await removeDir(dir);
  });

  async function start(options: EmbeddedEtcdOptions = {}): Promise<{
    server: EmbeddedEtcd;
    etcd: Etcd;
  }> {
    // 3.6: HashKV answers hash_revision, which these tests compare.
    const server = await EmbeddedEtcd.start({ dataDir: dir, etcdVersion: '3.6', ...options });
    running.push(server);
    const etcd = new Etcd({ endpoints: [...server.endpoints] });
    clients.push(etcd);
    return { server, etcd };
  }

  async function stop(server: EmbeddedEtcd, etcd: Etcd): Promise<void> {
    await etcd.close();
    await server.stop();
  }

  // Read back from the log alone, and from snapshots taken along the way.
  it.each([
    ['the log', undefined],
    ['snapshots', 2],
  ])(
    'has every revision, the compaction and the same HashKV (from %s)',
    async (_, snapshotCount) => {
      const first = await start({ snapshotCount });
      await first.etcd.put('a', '1'); // 2
      await first.etcd.put('b', '1'); // 3
      await first.etcd.put('a', '2'); // 4
      await first.etcd.delete('b'); // 5
      await first.etcd.put('b', '2'); // 6
      await first.etcd.txn().then(op.put('c', '1'), op.put('a', '3')).commit(); // 7
      await first.etcd.compact(5n);
      await first.etcd.put('a', '4'); // 8
      const before = await first.etcd.maintenance.hashKV();
      await stop(first.server, first.etcd);
      const snapshots = (await readdir(dir)).filter((name) => name.startsWith('snap-'));
      expect(snapshots.length > 0).toBe(snapshotCount !== undefined);

      const { etcd } = await start();
      const a = await etcd.range({ key: 'a' });
      expect(a.header.revision).toBe(8n);
      expect(a.kvs[0]).toMatchObject({ createRevision: 2n, modRevision: 8n, version: 4n });
      const atFive = await etcd.range({ prefix: '', revision: 5n });
      expect(atFive.kvs.map((kv) => `${kv.keyText()}=${kv.text()}`)).toEqual(['a=2']);
      const atSeven = await etcd.range({ prefix: '', revision: 7n });
      expect(atSeven.kvs.map((kv) => `${kv.keyText()}@${kv.modRevision}`)).toEqual([
        'a@7',
        'b@6',
        'c@7',
      ]);
      await expect(etcd.range({ key: 'a', revision: 4n })).rejects.toMatchObject({
        code: 'COMPACTED',
      });
      const after = await etcd.maintenance.hashKV();
      expect(after).toMatchObject({ hash: before.hash, compactRevision: 5n, hashRevision: 8n });
      expect((await etcd.put('d', '1')).header.revision).toBe(9n);
    },
  );

  it('keeps its ids whatever the options say, and its raft term goes up by one each start', async () => {
    const first = await start({ clusterId: 111n, memberId: 222n });
    expect((await first.etcd.maintenance.status()).raftTerm).toBe(2n);
    await stop(first.server, first.etcd);
    const second = await start({ clusterId: 333n, memberId: 444n });
    const status = await second.etcd.maintenance.status();
    expect(status.header).toMatchObject({ clusterId: 111n, memberId: 222n, raftTerm: 3n });
    await stop(second.server, second.etcd);
    const third = await start();
    expect((await third.etcd.maintenance.status()).raftTerm).toBe(4n);
  });

  it.each([
    ['the log', undefined],
    ['snapshots', 2],
  ])(
    'gives every lease its full TTL again, with its keys; revoked leases stay gone (from %s)',
    async (_, snapshotCount) => {
      const first = await start({ clock: 'virtual', snapshotCount });
      const kept = await first.etcd.lease.grant(10);
      const revoked = await first.etcd.lease.grant(10);
      await first.etcd.put('session', 'x', { lease: kept.id });
      await first.etcd.put('other', 'y', { lease: revoked.id });
      await revoked.revoke();
      await (first.server.clock as VirtualClock).advance(8_000);
      await stop(first.server, first.etcd);

      const { server, etcd } = await start({ clock: 'virtual' });
      expect(await etcd.lease.leases()).toEqual([kept.id]);
      expect(await etcd.lease.timeToLive(kept.id, { keys: true })).toMatchObject({
        ttl: 9n,
        grantedTtl: 10n,
      });
      expect(server.leases.keys(kept.id).map((key) => Buffer.from(key).toString())).toEqual([
        'session',
      ]);
      const clock = server.clock as VirtualClock;
      await clock.advance(9_999);
      expect((await etcd.get('session'))?.text()).toBe('x');
      await clock.advance(1);
      expect(await etcd.get('session')).toBeUndefined();
      expect(await etcd.get('other')).toBeUndefined();
    },
  );

  it('keeps NOSPACE raised; a compaction, defragment and disarm bring writes back', async () => {
    const quota = { quotaBackendBytes: 64 * 1024 };
    const first = await start(quota);
    const value = 'v'.repeat(1000);
    let filled = 0;
    await expect(
      (async () => {
        for (;;) {
          await first.etcd.put(`k${filled % 8}`, value);
          filled++;
        }
      })(),
    ).rejects.toMatchObject({ code: 'NO_SPACE' });
    await stop(first.server, first.etcd);

    const { server, etcd } = await start(quota);
    expect((await etcd.maintenance.alarms()).map((alarm) => alarm.type)).toEqual(['NOSPACE']);
    await expect(etcd.put('k0', 'again')).rejects.toMatchObject({ code: 'NO_SPACE' });
    // The restored size is what the kept history takes, as after etcd's defragment.
    await etcd.compact(BigInt(server.store.revision));
    await etcd.maintenance.defragment();
    await etcd.maintenance.deactivateAlarm(server.member.memberId, 'NOSPACE');
    expect((await etcd.put('k0', 'again')).header.revision).toBe(BigInt(filled + 2));
  });

  it('keeps the members added, and reports its own new client URLs', async () => {
    const first = await start();
    const added = await first.etcd.cluster.memberAdd(['http://10.0.0.9:2380'], {
      isLearner: true,
    });
    await stop(first.server, first.etcd);

    const { server, etcd } = await start();
    const { members } = await etcd.cluster.memberList();
    expect(members).toHaveLength(2);
    expect(members.find((m) => m.id === added.member.id)).toMatchObject({
      isLearner: true,
      peerUrls: ['http://10.0.0.9:2380'],
    });
    expect(members.find((m) => m.id === server.member.memberId)?.clientUrls).toEqual([
      server.endpoint,
    ]);
  });

  it('keeps users, roles, permissions and auth on; tokens are forgotten', async () => {
    const first = await start();
    const { auth } = first.etcd;
    await auth.userAdd('root', 'rootpw');
    await auth.userGrantRole('root', 'root');
    await auth.roleAdd('reader');
    await auth.roleGrantPermission('reader', prefixPermission('app/', 'read'));
    await auth.userAdd('alice', 'alicepw');
    await auth.userGrantRole('alice', 'reader');
    await auth.enable();
    const status = first.server.auth.status();
    const token = await auth.authenticate('alice', 'alicepw');
    await stop(first.server, first.etcd);

    const { server } = await start();
    expect(server.auth.tokenCount).toBe(0);
    const alice = new Etcd({
      endpoints: [...server.endpoints],
      auth: { username: 'alice', password: 'alicepw' },
    });
    clients.push(alice);
    expect(await alice.get('app/x')).toBeUndefined();
    await expect(alice.put('app/x', '1')).rejects.toMatchObject({ code: 'PERMISSION_DENIED' });
    expect(server.auth.status()).toEqual(status);
    expect(token).not.toBe('');
    expect(server.auth.tokenCount).toBe(1);
    const wrong = new Etcd({
      endpoints: [...server.endpoints],
      auth: { username: 'alice', password: 'wrong' },
    });
    clients.push(wrong);
    await expect(wrong.get('app/x')).rejects.toMatchObject({ code: 'AUTH_FAILED' });
  });

  it('writes a snapshot every snapshotCount records and drops the log it covers', async () => {
    const first = await start({ snapshotCount: 20 });
    for (let i = 0; i < 95; i++) await first.etcd.put(`k${i % 7}`, `v${i}`);
    await stop(first.server, first.etcd);
    const files = (await readdir(dir)).sort();
    expect(files.filter((f) => f.startsWith('snap-'))).toHaveLength(1);
    expect(files.filter((f) => f.startsWith('wal-')).length).toBeLessThanOrEqual(2);

    const { etcd } = await start({ snapshotCount: 20 });
    const all = await etcd.range({ prefix: 'k' });
    expect(all.header.revision).toBe(96n);
    expect(all.kvs.map((kv) => kv.text())).toEqual([
      'v91',
      'v92',
      'v93',
      'v94',
      'v88',
      'v89',
      'v90',
    ]);
  });

  it('persists a compaction made by auto-compaction', async () => {
    const first = await start({
      clock: 'virtual',
      autoCompaction: { mode: 'revision', retention: 2 },
    });
    for (let i = 0; i < 10; i++) await first.etcd.put('k', `${i}`);
    await (first.server.clock as VirtualClock).advance(5 * 60_000);
    expect(first.server.store.compactRevision).toBe(9);
    await stop(first.server, first.etcd);
    const { server } = await start();
    expect(server.store.compactRevision).toBe(9);
  });

  it('refuses a second server on the same data dir', async () => {
    await start();
    await expect(EmbeddedEtcd.start({ dataDir: dir })).rejects.toThrow(/is in use/);
  });
});
