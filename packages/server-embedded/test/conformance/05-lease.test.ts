// Conformance against etcd: the Lease service. Expiry runs on
// real time on both servers (a 1 s lease, the minimum with the testkit's raft timing).
import { etcdserverpb_Lease as Lease } from '@etcdkit/client/protocol';
import { afterEach, expect, it } from 'vitest';
import { b, text } from '../support/bytes.js';
import { type KeepAliveStream, openKeepAlive } from '../support/keepalive-client.js';
import { keysOf } from '../support/kv.js';
import type { TestServer } from '../support/test-server.js';
import { del, WatchConnection } from '../watch/watch-client.js';
import { describeConformance, Errors } from './suite.js';

const grant = (server: TestServer, TTL: number | bigint, ID = 0n) =>
  server.client.unary(Lease.LeaseGrant, { TTL: BigInt(TTL), ID });
const revoke = (server: TestServer, ID: bigint) => server.client.unary(Lease.LeaseRevoke, { ID });
const timeToLive = (server: TestServer, ID: bigint, keys = false) =>
  server.client.unary(Lease.LeaseTimeToLive, { ID, keys });

describeConformance('Lease (45-51)', ({ fresh }) => {
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });
  const keepAlive = (server: TestServer): KeepAliveStream => {
    const stream = openKeepAlive(server.endpoint);
    closers.push(() => stream.close());
    return stream;
  };

  it('45 lease min TTL and too-large TTL: below 2 s is raised to 2 s (etcd default timing); over 9e9 s is OutOfRange', async () => {
    const server = await fresh({ minLeaseTtl: 2 });
    expect((await grant(server, 1)).TTL).toBe(2n);
    expect((await grant(server, 0)).TTL).toBe(2n);
    expect((await grant(server, -5)).TTL).toBe(2n);
    expect((await grant(server, 3)).TTL).toBe(3n);
    expect((await grant(server, 9_000_000_000)).TTL).toBe(9_000_000_000n);
    await expect(grant(server, 9_000_000_001)).rejects.toMatchObject(Errors.tooLargeTtl);
    // Grants make no revision.
    expect((await grant(server, 60)).header?.revision).toBe(1n);
  });

  it('46 explicit lease id and duplicate: ids are kept, negative ones too; one in use is FailedPrecondition', async () => {
    const server = await fresh();
    expect((await grant(server, 60, 4242n)).ID).toBe(4242n);
    expect((await grant(server, 60, -77n)).ID).toBe(-77n);
    await expect(grant(server, 60, 4242n)).rejects.toMatchObject(Errors.leaseExists);
    const picked = (await grant(server, 60)).ID;
    expect(picked).toBeGreaterThan(0n);
    await expect(grant(server, 60, picked)).rejects.toMatchObject(Errors.leaseExists);
  });

  it('47 keepalive on unknown lease: TTL 0, no error, the stream stays open', async () => {
    const server = await fresh();
    const { ID } = await grant(server, 30, 0x47n);
    const stream = keepAlive(server);
    stream.send(999n);
    expect(await stream.next()).toMatchObject({ ID: 999n, TTL: 0n, header: { revision: 1n } });
    stream.send(ID);
    expect(await stream.next()).toMatchObject({ ID, TTL: 30n });
    await revoke(server, ID);
    stream.send(ID);
    expect(await stream.next()).toMatchObject({ ID, TTL: 0n });
  });

  it('48 TimeToLive on unknown: TTL -1, no error; a known lease shows seconds left rounded down', async () => {
    const server = await fresh();
    const unknown = await timeToLive(server, 555n, true);
    expect(unknown).toMatchObject({ ID: 555n, TTL: -1n, grantedTTL: 0n, keys: [] });
    expect(unknown.header?.revision).toBe(1n);
    const { ID } = await grant(server, 10, 0x48n);
    await server.api.put('b', '1', { lease: ID });
    await server.api.put('a', '1', { lease: ID });
    const known = await timeToLive(server, ID, true);
    expect(known).toMatchObject({ ID, TTL: 9n, grantedTTL: 10n });
    // etcd lists the keys in Go map order, the embedded server in key order.
    expect(known.keys.map(text).sort()).toEqual(['a', 'b']);
    expect((await timeToLive(server, ID)).keys).toEqual([]);
  });

  it('49 revoke deletes in one revision: every attached key, in key order; unknown lease is NotFound', async () => {
    const server = await fresh();
    const { ID } = await grant(server, 60, 0x49n);
    for (const key of ['c', 'a', 'b']) await server.api.put(key, '1', { lease: ID }); // 2..4
    await server.api.put('other', '1'); // 5
    const connection = new WatchConnection(server.endpoint);
    closers.push(() => connection.close());
    const stream = connection.open();
    stream.create({ key: b('\0'), rangeEnd: b('\0') });
    await stream.take(1);
    expect((await revoke(server, ID)).header?.revision).toBe(6n);
    expect(await stream.next()).toEqual({
      revision: 6,
      watchId: 0,
      events: [del('a', 6), del('b', 6), del('c', 6)],
    });
    expect(keysOf((await server.api.range('\0', { rangeEnd: b('\0') })).kvs)).toEqual(['other']);
    expect((await timeToLive(server, ID)).TTL).toBe(-1n);
    await expect(revoke(server, ID)).rejects.toMatchObject(Errors.leaseNotFound);
    // A lease without keys is revoked without a revision.
    const empty = await grant(server, 60, 0x50n);
    expect((await revoke(server, empty.ID)).header?.revision).toBe(6n);
  });

  it('50 expiry: an expired lease is revoked with its keys, in a revision of its own; none without keys', async () => {
    const server = await fresh();
    // 3 s, not the 1 s minimum: on a loaded machine the five calls below must all land before
    // the first lease runs out (a CI run once lost one at 1 s).
    const first = await grant(server, 3, 0x51n);
    const second = await grant(server, 3, 0x52n);
    await grant(server, 3, 0x53n); // no keys
    await server.api.put('a1', '1', { lease: first.ID }); // 2
    await server.api.put('a2', '1', { lease: first.ID }); // 3
    await server.api.put('b', '1', { lease: second.ID }); // 4
    await server.api.put('kept', '1'); // 5
    const ids = [0x51n, 0x52n, 0x53n];
    const deadline = Date.now() + 15_000;
    const live = async () => {
      const ttls = await Promise.all(ids.map(async (id) => (await timeToLive(server, id)).TTL));
      return ttls.some((ttl) => ttl !== -1n);
    };
    while (await live()) {
      if (Date.now() > deadline) throw new Error('the leases were not revoked within 15 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await server.api.range('a', { rangeEnd: b('c') })).count).toBe(0n);
    // Two revisions for the two leases with keys, none for the lease without.
    const revision = Number((await server.api.range('kept')).header?.revision);
    expect(revision).toBe(7);
    // The two leases with keys went in two revisions, in some order.
    const at6 = keysOf((await server.api.range('a', { rangeEnd: b('c'), revision: 6n })).kvs);
    expect([['a1', 'a2'], ['b']]).toContainEqual(at6);
  });

  it('51 leases list: every lease, soonest expiry first; revoked ones gone', async () => {
    const server = await fresh();
    await grant(server, 600, 1n);
    await grant(server, 5, 2n);
    await grant(server, 60, -3n);
    await grant(server, 60, 4n);
    await revoke(server, 4n);
    const response = await server.client.unary(Lease.LeaseLeases, {});
    expect(response.leases.map((lease) => lease.ID)).toEqual([2n, -3n, 1n]);
    expect(response.header?.revision).toBe(1n);
  });
});
