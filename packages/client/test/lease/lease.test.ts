// LeaseClient against a real etcd.
import { describeRealEtcd, type EtcdProcess, startEtcd } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prefixEnd, toBytes } from '../../src/bytes.js';
import { Connection } from '../../src/connection/connection.js';
import {
  InvalidArgumentError,
  LeaseExistsError,
  LeaseNotFoundError,
  LeaseTtlTooLargeError,
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

describeRealEtcd('LeaseClient', () => {
  let etcd: EtcdProcess;
  let connection: Connection;
  let leases: LeaseClient;

  beforeAll(async () => {
    // etcd's default timing, which sets the minimum lease TTL: ceil(1.5 x election timeout) = 2 s.
    // (The testkit's faster default timing would lower it to 1 s.)
    etcd = await startEtcd({ args: ['--heartbeat-interval', '100', '--election-timeout', '1000'] });
    connection = new Connection({ endpoints: etcd.endpoints });
    leases = new LeaseClient(connection);
  });

  afterAll(async () => {
    await connection?.close();
    await etcd?.stop();
  });

  /** Current store revision, read with a plain Range. */
  async function currentRevision(): Promise<bigint> {
    const response = await connection.unary(kv.Range, { key: toBytes('\0') }, 'read');
    return response.header?.revision ?? 0n;
  }

  async function put(key: string, lease: bigint): Promise<bigint> {
    const response = await connection.unary(kv.Put, { key: toBytes(key), lease }, 'write');
    return response.header?.revision ?? 0n;
  }

  async function count(prefix: string, revision = 0n): Promise<bigint> {
    const key = toBytes(prefix);
    const request = { key, rangeEnd: prefixEnd(key), countOnly: true, revision };
    const response = await connection.unary(kv.Range, request, 'read');
    return response.count;
  }

  describe('LeaseClient.grant', () => {
    it('grants the requested TTL under a server-chosen positive id, without a new revision', async () => {
      const before = await currentRevision();
      const lease = await leases.grant(10);
      expect(lease.id).toBeGreaterThan(0n);
      expect(lease.ttl).toBe(10n);
      expect(lease.header.revision).toBe(before);
      expect(await currentRevision()).toBe(before);
    });

    it('raises a TTL below the minimum to 2 seconds and reports the effective TTL', async () => {
      const lease = await leases.grant(1);
      expect(lease.ttl).toBe(2n);
      expect((await lease.timeToLive()).grantedTtl).toBe(2n);
    });

    it('accepts a TTL of exactly 9e9 seconds and rejects one above with LeaseTtlTooLargeError', async () => {
      const longest = await leases.grant(9_000_000_000n);
      expect(longest.ttl).toBe(9_000_000_000n);
      await expect(leases.grant(9_000_000_001n)).rejects.toEqual(etcdError(LeaseTtlTooLargeError));
    });

    it('keeps an explicit id, negative ones too, and refuses a duplicate with LeaseExistsError', async () => {
      expect((await leases.grant(30, { id: 4242n })).id).toBe(4242n);
      expect((await leases.grant(30, { id: -77n })).id).toBe(-77n);
      await expect(leases.grant(30, { id: 4242n })).rejects.toEqual(etcdError(LeaseExistsError));
    });

    it('rejects TTLs that are not whole positive seconds before sending anything', async () => {
      for (const ttl of [0, -1, 1.5, Number.NaN, -3n]) {
        await expect(leases.grant(ttl)).rejects.toBeInstanceOf(InvalidArgumentError);
      }
    });
  });

  describe('LeaseClient.revoke', () => {
    it('deletes every attached key in one revision', async () => {
      const lease = await leases.grant(60);
      await put('revoke/a', lease.id);
      await put('revoke/b', lease.id);
      const lastPut = await put('revoke/c', lease.id);

      const revoked = await lease.revoke();

      expect(revoked.header.revision).toBe(lastPut + 1n);
      expect(await count('revoke/')).toBe(0n);
      expect(await count('revoke/', lastPut)).toBe(3n);
      expect((await leases.timeToLive(lease.id)).ttl).toBe(-1n);
    });

    it('creates no revision for a lease without keys', async () => {
      const lease = await leases.grant(60);
      const before = await currentRevision();
      expect((await lease.revoke()).header.revision).toBe(before);
    });

    it('fails with LeaseNotFoundError for an unknown or already revoked lease', async () => {
      await expect(leases.revoke(987_654_321n)).rejects.toEqual(etcdError(LeaseNotFoundError));
      const lease = await leases.grant(60);
      await lease.revoke();
      await expect(lease.revoke()).rejects.toEqual(etcdError(LeaseNotFoundError));
    });
  });

  describe('LeaseClient.timeToLive', () => {
    it('reports the remaining seconds rounded down and the granted TTL', async () => {
      const lease = await leases.grant(10);
      expect(await leases.timeToLive(lease.id)).toEqual({
        id: lease.id,
        ttl: 9n,
        grantedTtl: 10n,
        keys: [],
        header: expect.objectContaining({ memberId: lease.header.memberId }),
      });
    });

    it('lists the attached keys in key order when asked', async () => {
      const lease = await leases.grant(60);
      for (const key of ['ttl/c', 'ttl/a', 'ttl/b']) await put(key, lease.id);
      const { keys } = await lease.timeToLive({ keys: true });
      expect(keys).toEqual([toBytes('ttl/a'), toBytes('ttl/b'), toBytes('ttl/c')]);
      expect((await lease.timeToLive()).keys).toEqual([]);
    });

    it('reports ttl -1 for an unknown lease instead of failing', async () => {
      const unknown = await leases.timeToLive(123_456_789n, { keys: true });
      expect(unknown).toMatchObject({ id: 123_456_789n, ttl: -1n, grantedTtl: 0n, keys: [] });
    });
  });

  describe('LeaseClient.leases', () => {
    it('lists the ids of live leases in ascending order, without revoked ones', async () => {
      const granted = [await leases.grant(60), await leases.grant(60), await leases.grant(60)];
      await granted[1]!.revoke();
      const ids = await leases.leases();
      expect(ids).toContain(granted[0]!.id);
      expect(ids).toContain(granted[2]!.id);
      expect(ids).not.toContain(granted[1]!.id);
      expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    });
  });
});
