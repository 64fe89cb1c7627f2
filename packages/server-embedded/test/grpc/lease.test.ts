// The Lease service over gRPC, on the embedded server or (ETCDKIT_SERVER_SPEC_BACKEND=etcd) a real
// etcd started with etcd's default timing, so that the minimum TTL is 2 s on both.
import {
  etcdserverpb_Lease as Lease,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b, text } from '../support/bytes.js';
import { status } from '../support/grpc-client.js';
import { openKeepAlive } from '../support/keepalive-client.js';
import { kv, op, summary } from '../support/kv.js';
import { specBackend, startTestServer, type TestServer } from '../support/test-server.js';

const NOT_FOUND = 5;
const FAILED_PRECONDITION = 9;
const OUT_OF_RANGE = 11;
const leaseNotFound = status(NOT_FOUND, 'etcdserver: requested lease not found');

describe(`Lease [${specBackend}]`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;
  const grant = (TTL: number, ID = 0n) =>
    server.client.unary(Lease.LeaseGrant, { TTL: BigInt(TTL), ID });
  const timeToLive = (ID: bigint, keys = false) =>
    server.client.unary(Lease.LeaseTimeToLive, { ID, keys });
  const raftIndex = async () => (await server.client.unary(Maintenance.Status, {})).raftIndex;

  beforeEach(async () => {
    server = await startTestServer({ minLeaseTtl: 2 });
    api = kv(server);
  });
  afterEach(() => server.stop());

  describe('LeaseGrant', () => {
    it('picks a positive id, grants the TTL asked for and makes no revision', async () => {
      await api.put('a', '1');
      const index = await raftIndex();
      const response = await grant(10);
      expect(response.ID).toBeGreaterThan(0n);
      expect(response.TTL).toBe(10n);
      expect(response.header?.revision).toBe(2n);
      expect(response.header?.raftTerm).toBe(2n);
      expect(await api.revision()).toBe(2);
      expect(await raftIndex()).toBe(index + 1n);
    });

    it('picks growing ids', async () => {
      const first = (await grant(10)).ID;
      const second = (await grant(10)).ID;
      expect(second).toBeGreaterThan(first);
    });

    it('keeps explicit ids, negative ones too, and refuses one in use', async () => {
      expect((await grant(10, 4242n)).ID).toBe(4242n);
      expect((await grant(10, -77n)).ID).toBe(-77n);
      await expect(grant(10, 4242n)).rejects.toMatchObject(
        status(FAILED_PRECONDITION, 'etcdserver: lease already exists'),
      );
    });

    it('raises a TTL below 2 s to 2 s, zero and negative ones too', async () => {
      expect((await grant(1)).TTL).toBe(2n);
      expect((await grant(0)).TTL).toBe(2n);
      expect((await grant(-5)).TTL).toBe(2n);
    });

    it('grants 9e9 s and refuses more with OutOfRange', async () => {
      expect((await grant(9_000_000_000)).TTL).toBe(9_000_000_000n);
      await expect(grant(9_000_000_001)).rejects.toMatchObject(
        status(OUT_OF_RANGE, 'etcdserver: too large lease TTL'),
      );
    });
  });

  describe('LeaseRevoke', () => {
    it('deletes every attached key in one revision', async () => {
      const { ID } = await grant(60);
      await api.put('c', '1', { lease: ID });
      await api.put('a', '1', { lease: ID });
      const last = (await api.put('b', '1', { lease: ID })).header?.revision ?? 0n;
      await api.put('other', '1');
      const revoked = await server.client.unary(Lease.LeaseRevoke, { ID });
      expect(revoked.header?.revision).toBe(last + 2n);
      expect((await api.range('a', { rangeEnd: b('d') })).count).toBe(0n);
      expect((await api.range('a', { rangeEnd: b('d'), revision: last + 1n })).count).toBe(3n);
      expect((await api.range('other')).count).toBe(1n);
      expect((await timeToLive(ID)).TTL).toBe(-1n);
    });

    it('deletes the keys in key order', async () => {
      if (server.embedded === undefined) return; // the event order is checked on the store
      const { ID } = await grant(60);
      for (const key of ['c', 'a', 'b']) await api.put(key, '1', { lease: ID });
      const { header } = await server.client.unary(Lease.LeaseRevoke, { ID });
      const events = server.embedded.store.changesAt(Number(header?.revision)).events;
      expect(events.map((event) => `${event.type} ${text(event.kv.key)}`)).toEqual([
        'delete a',
        'delete b',
        'delete c',
      ]);
    });

    it('makes no revision for a lease without keys', async () => {
      const { ID } = await grant(60);
      await api.put('a', '1');
      expect((await server.client.unary(Lease.LeaseRevoke, { ID })).header?.revision).toBe(2n);
    });

    it('refuses an unknown or revoked lease with NotFound', async () => {
      await expect(server.client.unary(Lease.LeaseRevoke, { ID: 987n })).rejects.toMatchObject(
        leaseNotFound,
      );
      const { ID } = await grant(60);
      await server.client.unary(Lease.LeaseRevoke, { ID });
      await expect(server.client.unary(Lease.LeaseRevoke, { ID })).rejects.toMatchObject(
        leaseNotFound,
      );
    });
  });

  describe('keys and leases', () => {
    it('refuses a put with an unknown lease, leaving the key absent', async () => {
      await expect(api.put('a', '1', { lease: 123n })).rejects.toMatchObject(leaseNotFound);
      expect((await api.range('a')).count).toBe(0n);
    });

    it('detaches a key put without a lease, moves it with another, keeps it with ignore_lease', async () => {
      const first = (await grant(60)).ID;
      const second = (await grant(60)).ID;
      await api.put('detached', '1', { lease: first });
      await api.put('detached', '2');
      await api.put('moved', '1', { lease: first });
      await api.put('moved', '2', { lease: second });
      await api.put('kept', '1', { lease: first });
      await api.put('kept', '2', { ignoreLease: true });
      expect(summary((await api.range('kept')).kvs[0])?.lease).toBe(first);
      expect((await timeToLive(first, true)).keys.map(text)).toEqual(['kept']);
      await server.client.unary(Lease.LeaseRevoke, { ID: first });
      expect((await api.range('detached')).count).toBe(1n);
      expect(summary((await api.range('moved')).kvs[0])?.lease).toBe(second);
      expect((await api.range('kept')).count).toBe(0n);
    });

    it('attaches the keys a txn puts', async () => {
      const { ID } = await grant(60);
      await api.txn({
        success: [op.put('t1', 'v', { lease: ID }), op.put('t2', 'v', { lease: ID })],
      });
      const keys = (await timeToLive(ID, true)).keys.map(text).sort();
      expect(keys).toEqual(['t1', 't2']);
    });
  });

  describe('LeaseTimeToLive', () => {
    it('answers 9 right after Grant(10), the granted TTL, and the keys only when asked', async () => {
      const { ID } = await grant(10);
      for (const key of ['c', 'a', 'b']) await api.put(key, '1', { lease: ID });
      const withKeys = await timeToLive(ID, true);
      expect(withKeys).toMatchObject({ ID, TTL: 9n, grantedTTL: 10n });
      // etcd lists them in Go map order; the embedded server in key order.
      const keys = withKeys.keys.map(text);
      expect(server.embedded ? keys : [...keys].sort()).toEqual(['a', 'b', 'c']);
      expect((await timeToLive(ID)).keys).toEqual([]);
      expect(withKeys.header?.revision).toBe(4n);
    });

    it('answers TTL -1 for an unknown lease, without an error', async () => {
      const response = await timeToLive(555n, true);
      expect(response).toMatchObject({ ID: 555n, TTL: -1n, grantedTTL: 0n, keys: [] });
      expect(response.header?.revision).toBe(1n);
      expect(response.header?.memberId).not.toBe(0n);
    });
  });

  describe('LeaseLeases', () => {
    it('lists every lease, soonest expiry first', async () => {
      const long = (await grant(600)).ID;
      const short = (await grant(5)).ID;
      const middle = (await grant(60, -3n)).ID;
      const revoked = (await grant(60)).ID;
      await server.client.unary(Lease.LeaseRevoke, { ID: revoked });
      const response = await server.client.unary(Lease.LeaseLeases, {});
      expect(response.leases.map((lease) => lease.ID)).toEqual([short, middle, long]);
      expect(response.header?.revision).toBe(1n);
    });
  });

  describe('LeaseKeepAlive', () => {
    it('answers each renewal with the granted TTL, unknown leases with TTL 0, and stays open', async () => {
      const { ID } = await grant(30);
      await api.put('a', '1');
      const stream = openKeepAlive(server.endpoint);
      try {
        stream.send(ID);
        const renewed = await stream.next();
        expect(renewed).toMatchObject({ ID, TTL: 30n });
        expect(renewed.header?.revision).toBe(2n);
        expect(renewed.header?.memberId).not.toBe(0n);
        stream.send(999n);
        expect(await stream.next()).toMatchObject({ ID: 999n, TTL: 0n });
        stream.send(ID);
        expect(await stream.next()).toMatchObject({ ID, TTL: 30n });
        expect((await timeToLive(ID)).TTL).toBe(29n);
      } finally {
        stream.close();
      }
    });

    it('ends cleanly when the client closes its side', async () => {
      const stream = openKeepAlive(server.endpoint);
      try {
        stream.send(1n);
        expect((await stream.next()).TTL).toBe(0n);
        stream.end();
        expect((await stream.ended).code).toBe(0);
      } finally {
        stream.close();
      }
    });
  });
});
