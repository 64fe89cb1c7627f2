// Lease expiry on the embedded server with a virtual clock, over gRPC: no sleeping.
import {
  etcdserverpb_Lease as Lease,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd, type VirtualClock } from '../../src/index.js';
import { b } from '../support/bytes.js';
import { RawClient } from '../support/grpc-client.js';
import { openKeepAlive } from '../support/keepalive-client.js';
import { keysOf, kv } from '../support/kv.js';
import type { TestServer } from '../support/test-server.js';

describe('lease expiry on a virtual clock [embedded]', () => {
  let server: EmbeddedEtcd & { readonly clock: VirtualClock };
  let client: RawClient;
  let api: ReturnType<typeof kv>;
  const grant = (TTL: number, ID = 0n) => client.unary(Lease.LeaseGrant, { TTL: BigInt(TTL), ID });
  const exists = async (key: string) => (await api.range(key)).count === 1n;

  beforeEach(async () => {
    server = await EmbeddedEtcd.start({ clock: 'virtual' });
    client = new RawClient(server.endpoint);
    api = kv({ client } as TestServer);
  });
  afterEach(async () => {
    client.close();
    await server.stop();
  });

  it('deletes the key of a Grant(5) when the clock reaches 5 s, not a millisecond before', async () => {
    const { ID } = await grant(5);
    await api.put('a', '1', { lease: ID });
    await server.clock.advance(4999);
    expect(await exists('a')).toBe(true);
    await server.clock.advance(1);
    expect(await exists('a')).toBe(false);
    expect((await client.unary(Lease.LeaseTimeToLive, { ID })).TTL).toBe(-1n);
  });

  it('keeps a key alive through keep-alives, and expires it a full TTL after the last one', async () => {
    const { ID } = await grant(5);
    await api.put('a', '1', { lease: ID });
    const stream = openKeepAlive(server.endpoint);
    try {
      for (let i = 0; i < 3; i++) {
        await server.clock.advance(4000);
        stream.send(ID);
        expect((await stream.next()).TTL).toBe(5n);
      }
      await server.clock.advance(4999); // 16 999
      expect(await exists('a')).toBe(true);
      await server.clock.advance(1); // 17 000 = 12 000 + 5 s
      expect(await exists('a')).toBe(false);
      stream.send(ID);
      expect((await stream.next()).TTL).toBe(0n);
    } finally {
      stream.close();
    }
  });

  it('revokes each expired lease in a revision of its own, and none for a lease without keys', async () => {
    const first = (await grant(3)).ID;
    const second = (await grant(3)).ID;
    await grant(3); // no keys
    await api.put('a1', '1', { lease: first });
    await api.put('a2', '1', { lease: first });
    const before = (await api.put('b', '1', { lease: second })).header?.revision ?? 0n;
    const index = (await client.unary(Maintenance.Status, {})).raftIndex;
    await server.clock.advance(3000);
    expect(await api.revision()).toBe(Number(before) + 2);
    const keysAt = async (revision: bigint) =>
      keysOf((await api.range('a', { rangeEnd: b('c'), revision })).kvs);
    expect(await keysAt(before)).toEqual(['a1', 'a2', 'b']);
    expect(await keysAt(before + 1n)).toEqual(['b']); // a1 and a2 went together
    expect(await keysAt(before + 2n)).toEqual([]);
    // Three revokes, three raft entries.
    expect((await client.unary(Maintenance.Status, {})).raftIndex).toBe(index + 3n);
  });

  it('answers TimeToLive with the seconds left, rounded down', async () => {
    const { ID } = await grant(10);
    const ttl = async () => (await client.unary(Lease.LeaseTimeToLive, { ID })).TTL;
    expect(await ttl()).toBe(9n);
    await server.clock.advance(2500);
    expect(await ttl()).toBe(7n);
    await server.clock.advance(7000);
    expect(await ttl()).toBe(0n);
  });

  it('expireLease() revokes a lease at once, in a revision of its own', async () => {
    const { ID } = await grant(60);
    await api.put('a', '1', { lease: ID });
    await api.put('b', '1', { lease: ID });
    expect(server.expireLease(ID)).toBe(true);
    expect(await exists('a')).toBe(false);
    expect(await api.revision()).toBe(4);
    expect(server.expireLease(ID)).toBe(false);
  });

  it('honours minLeaseTtl and leaseCheckIntervalMs', async () => {
    const custom = await EmbeddedEtcd.start({
      clock: 'virtual',
      minLeaseTtl: 1,
      leaseCheckIntervalMs: 2000,
    });
    const other = new RawClient(custom.endpoint);
    try {
      const { ID, TTL } = await other.unary(Lease.LeaseGrant, { TTL: 1n });
      expect(TTL).toBe(1n);
      await other.unary(Lease.LeaseGrant, { TTL: 1n, ID: 77n });
      await custom.clock.advance(1999);
      expect((await other.unary(Lease.LeaseLeases, {})).leases).toHaveLength(2);
      await custom.clock.advance(1);
      expect((await other.unary(Lease.LeaseLeases, {})).leases).toHaveLength(0);
      expect(ID).toBeGreaterThan(0n);
    } finally {
      other.close();
      await custom.stop();
    }
  });
});
