// The lease applier on a virtual clock: grants, keep-alives, time-to-live, revokes and expiry, with
// no gRPC in between and no sleeping.
import { describe, expect, it } from 'vitest';
import { ProposalLog } from '../../src/consensus/proposals.js';
import { EtcdServerError, LeaseTable, VirtualClock } from '../../src/index.js';
import { LeaseApplier } from '../../src/lease/lease-applier.js';
import { AlarmStore } from '../../src/maintenance/alarms.js';
import { MvccStore } from '../../src/mvcc/store.js';
import { b, text } from '../support/bytes.js';

const MEMBER_ID = 0x8e9e05c52164694dn;

function setup(options: { minTtl?: number } = {}) {
  const clock = new VirtualClock();
  const table = new LeaseTable();
  const store = new MvccStore({ lessor: table });
  const proposals = new ProposalLog({ memberId: MEMBER_ID, maxRequestBytes: 1.5 * 1024 * 1024 });
  const alarms = new AlarmStore({ proposals, store });
  const leases = new LeaseApplier({
    table,
    store,
    proposals,
    clock,
    guard: { beforeProposal: () => {}, atApply: (request) => alarms.checkApply(request) },
    ...options,
  });
  leases.startExpiryChecks();
  /** Puts keys with a lease, each in its own revision. */
  const put = (lease: bigint, ...keys: string[]) => {
    for (const key of keys) {
      const write = store.write();
      write.put(b(key), b('v'), lease);
      write.end();
    }
  };
  const keys = () => store.range({ key: b(''), end: b('') }).kvs.map((kv) => text(kv.key));
  const grant = (ttl: number, id = 0n) => leases.grant({ ID: id, TTL: BigInt(ttl) }, 4);
  return { clock, table, store, proposals, alarms, leases, put, keys, grant };
}

describe('LeaseApplier.grant', () => {
  it('chooses positive ids from the request id sequence, growing with each grant', () => {
    const { grant } = setup();
    const first = grant(10).ID ?? 0n;
    const second = grant(10).ID ?? 0n;
    expect(first).toBeGreaterThan(0n);
    expect(second).toBeGreaterThan(first);
    // etcd's request ids start with the low 16 bits of the member id (sign bit cleared).
    expect(first >> 48n).toBe(MEMBER_ID & 0x7fffn);
  });

  it('keeps explicit ids, negative ones too, and refuses a duplicate', () => {
    const { grant } = setup();
    expect(grant(10, 7n).ID).toBe(7n);
    expect(grant(10, -7n).ID).toBe(-7n);
    expect(() => grant(10, 7n)).toThrow(new EtcdServerError('LEASE_EXISTS'));
  });

  it('raises a TTL below the minimum and answers the TTL granted', () => {
    expect(setup().grant(1).TTL).toBe(2n);
    expect(setup().grant(-5).TTL).toBe(2n);
    expect(setup({ minTtl: 5 }).grant(3).TTL).toBe(5n);
    expect(setup().grant(9_000_000_000).TTL).toBe(9_000_000_000n);
    expect(() => setup().grant(9_000_000_001)).toThrow(new EtcdServerError('LEASE_TTL_TOO_LARGE'));
  });

  it('makes no revision and takes one raft entry, a refused grant too', () => {
    const { grant, store, proposals } = setup();
    const index = proposals.index;
    expect(grant(10, 1n).header?.revision).toBe(1n);
    expect(() => grant(10, 1n)).toThrow();
    expect(store.revision).toBe(1);
    expect(proposals.index).toBe(index + 2);
  });
});

describe('lease expiry on the virtual clock', () => {
  it('deletes the key of a Grant(5) exactly when the clock reaches 5 s, not before', async () => {
    const { clock, grant, put, keys, store } = setup();
    put(grant(5, 1n).ID ?? 0n, 'a');
    await clock.advance(4999);
    expect(keys()).toEqual(['a']);
    await clock.advance(1);
    expect(keys()).toEqual([]);
    expect(store.revision).toBe(3);
  });

  it('is checked every 500 ms: a lease ending between checks goes at the next check', async () => {
    const { clock, grant, put, keys } = setup();
    await clock.advance(100);
    put(grant(5, 1n).ID ?? 0n, 'a'); // expires at 5100
    await clock.advance(5000); // 5100: the check at 5000 found it alive
    expect(keys()).toEqual(['a']);
    await clock.advance(399);
    expect(keys()).toEqual(['a']);
    await clock.advance(1); // the check at 5500
    expect(keys()).toEqual([]);
  });

  it('revokes each expired lease in a revision of its own, earliest expiry first', async () => {
    const { clock, grant, put, store } = setup();
    put(grant(3, 2n).ID ?? 0n, 'b1', 'b2');
    put(grant(2, 1n).ID ?? 0n, 'a1', 'a2');
    put(grant(3, 3n).ID ?? 0n, 'c');
    const before = store.revision;
    await clock.advance(3000);
    expect(store.revision).toBe(before + 3);
    const deleted = (revision: number) =>
      store.changesAt(revision).events.map((event) => `${event.type} ${text(event.kv.key)}`);
    expect(deleted(before + 1)).toEqual(['delete a1', 'delete a2']);
    // Equal expiries go in grant order.
    expect(deleted(before + 2)).toEqual(['delete b1', 'delete b2']);
    expect(deleted(before + 3)).toEqual(['delete c']);
  });

  it('makes no revision for an expired lease without keys, but still ends it', async () => {
    const { clock, grant, leases, store } = setup();
    grant(2, 1n);
    await clock.advance(2000);
    expect(store.revision).toBe(1);
    expect(leases.timeToLive({ ID: 1n }).TTL).toBe(-1n);
  });

  it('keeps a lease that is kept alive, and lets it expire a full TTL after the last renewal', async () => {
    const { clock, grant, put, keys, leases } = setup();
    put(grant(5, 1n).ID ?? 0n, 'a');
    for (let i = 0; i < 4; i++) {
      await clock.advance(4000);
      expect(leases.renew(1n)).toBe(5n);
    }
    expect(clock.now()).toBe(16_000);
    await clock.advance(4999);
    expect(keys()).toEqual(['a']);
    await clock.advance(1); // 21 000 = 16 000 + 5 s
    expect(keys()).toEqual([]);
  });

  it('answers a keep-alive of an expired or unknown lease with TTL 0 and does not revive it', async () => {
    const { clock, grant, leases } = setup({});
    grant(2, 1n);
    expect(leases.renew(999n)).toBe(0n);
    await clock.advance(2000);
    expect(leases.renew(1n)).toBe(0n);
  });

  it('treats a lease whose time is up but not yet checked as expired for keep-alives', async () => {
    const { clock, grant, put, keys, leases } = setup({ minTtl: 1 });
    await clock.advance(100);
    put(grant(1, 1n).ID ?? 0n, 'a'); // expires at 1100, checked at 1500
    await clock.advance(1000);
    expect(leases.renew(1n)).toBe(0n);
    // Not revoked until the check; its remaining time rounds toward zero.
    expect(keys()).toEqual(['a']);
    expect(leases.timeToLive({ ID: 1n }).TTL).toBe(0n);
    await clock.advance(400);
    expect(keys()).toEqual([]);
  });

  it('expire(id) revokes at once in a revision of its own (fault injection)', () => {
    const { grant, put, keys, leases, store } = setup();
    put(grant(60, 1n).ID ?? 0n, 'a', 'b');
    const before = store.revision;
    expect(leases.expire(1n)).toBe(true);
    expect(keys()).toEqual([]);
    expect(store.revision).toBe(before + 1);
    expect(leases.expire(1n)).toBe(false);
  });

  it('retries an expired lease that an alarm kept from being revoked, 3 s later', async () => {
    const { clock, grant, put, keys, alarms } = setup();
    put(grant(2, 1n).ID ?? 0n, 'a');
    alarms.activate(MEMBER_ID, 2 /* CORRUPT */);
    await clock.advance(2000);
    expect(keys()).toEqual(['a']);
    alarms.deactivate(MEMBER_ID, 2);
    await clock.advance(2500);
    expect(keys()).toEqual(['a']);
    await clock.advance(500); // 5000 = 2000 + 3000
    expect(keys()).toEqual([]);
  });

  it('stops checking when stopped', async () => {
    const { clock, grant, put, keys, leases } = setup();
    put(grant(2, 1n).ID ?? 0n, 'a');
    leases.stopExpiryChecks();
    await clock.advance(10_000);
    expect(keys()).toEqual(['a']);
  });
});

describe('LeaseApplier.timeToLive', () => {
  it('rounds the time left down, as of a moment after now: 9 right after Grant(10)', async () => {
    const { clock, grant, leases } = setup();
    grant(10, 1n);
    const ttl = () => leases.timeToLive({ ID: 1n }).TTL;
    expect(leases.timeToLive({ ID: 1n })).toMatchObject({ ID: 1n, TTL: 9n, grantedTTL: 10n });
    await clock.advance(999);
    expect(ttl()).toBe(9n);
    await clock.advance(1); // exactly 9 s left: a moment later it is 8.999
    expect(ttl()).toBe(8n);
    await clock.advance(8999);
    expect(ttl()).toBe(0n);
  });

  it('lists the keys in key order only when asked; an unknown lease has TTL -1', () => {
    const { grant, put, leases } = setup();
    put(grant(60, 1n).ID ?? 0n, 'c', 'a', 'b');
    expect(leases.timeToLive({ ID: 1n, keys: true }).keys?.map(text)).toEqual(['a', 'b', 'c']);
    expect(leases.timeToLive({ ID: 1n }).keys).toEqual([]);
    expect(leases.timeToLive({ ID: 5n, keys: true })).toEqual({
      header: { revision: 4n },
      ID: 5n,
      TTL: -1n,
    });
  });
});

describe('LeaseApplier.revoke and leases', () => {
  it('deletes every attached key in one revision, in key order', () => {
    const { grant, put, leases, store } = setup();
    put(grant(60, 1n).ID ?? 0n, 'c', 'a', 'b');
    const response = leases.revoke({ ID: 1n }, 3);
    expect(response.header?.revision).toBe(5n);
    expect(store.changesAt(5).events.map((event) => text(event.kv.key))).toEqual(['a', 'b', 'c']);
    expect(() => leases.revoke({ ID: 1n }, 3)).toThrow(new EtcdServerError('LEASE_NOT_FOUND'));
  });

  it('follows keys that move to another lease or lose theirs', () => {
    const { grant, put, leases, store, table } = setup();
    grant(60, 1n);
    grant(60, 2n);
    put(1n, 'a', 'b', 'c');
    put(2n, 'b');
    put(0n, 'c');
    expect(table.keys(1n).map(text)).toEqual(['a']);
    leases.revoke({ ID: 1n }, 3);
    expect(store.range({ key: b('a'), end: b('d') }).kvs.map((kv) => text(kv.key))).toEqual([
      'b',
      'c',
    ]);
  });

  it('lists every lease, soonest expiry first', () => {
    const { grant, leases } = setup();
    grant(60, 1n);
    grant(10, 2n);
    grant(30, 3n);
    grant(10, 4n);
    expect(leases.leases().leases?.map((lease) => lease.ID)).toEqual([2n, 4n, 3n, 1n]);
  });
});
