// Virtual time and leases the client keeps alive. The client's keepalives run on real time, so
// `clock.advance(ms)` models the clients being stalled for `ms` (a GC pause, a partition): a lease
// not refreshed within the jump expires; one whose remaining TTL outlasts each jump, with keepalives
// landing between jumps, lives on. The last test is the failover recipe of the testing guide.
import { Etcd, type LeaseKeepAliveEvent } from '@etcdkit/client';
import { Election, LeadershipLostError, Session } from '@etcdkit/recipes';
import { afterEach, beforeEach, describe, expect, it, test } from 'vitest';
import { EmbeddedEtcd, type VirtualClock } from '../../src/index.js';

describe('kept-alive leases on virtual time', () => {
  let server: EmbeddedEtcd & { readonly clock: VirtualClock };
  let etcd: Etcd;

  beforeEach(async () => {
    server = await EmbeddedEtcd.start({ clock: 'virtual' });
    etcd = new Etcd({ endpoints: [...server.endpoints] });
  });
  afterEach(async () => {
    await etcd.close();
    await server.stop();
  });

  it('a jump past the TTL expires a lease the client keeps alive, and the client learns it', async () => {
    const lease = await etcd.lease.grant(5, { keepAlive: true });
    await etcd.put('jobs/1', 'running', { lease });
    await server.clock.advance(5_500);
    expect(await etcd.get('jobs/1')).toBeUndefined();
    // The next keepalive is answered with TTL 0.
    const lost = await lease.lost;
    expect(lost.reason).toBe('expired');
  });

  it('jumps shorter than the TTL, with a keepalive landing between them, keep it alive', async () => {
    const lease = await etcd.lease.grant(5, { keepAlive: true });
    await etcd.put('jobs/2', 'running', { lease });
    for (let step = 0; step < 3; step++) {
      await server.clock.advance(4_000);
      // A refresh on real time: the lease lives 5 s from the virtual now again.
      await new Promise<LeaseKeepAliveEvent>((resolve) => lease.once('keepalive', resolve));
    }
    // 12 s of virtual time in all, more than twice the TTL.
    expect((await etcd.get('jobs/2'))?.text()).toBe('running');
    expect(lease.keepingAlive).toBe(true);
    await lease.revoke();
  });

  it('expireLease() ends one kept-alive lease now, whatever the clock', async () => {
    // TTL 6: the client's next keepalive, which learns the loss, goes out within 2 s.
    const [doomed, kept] = [
      await etcd.lease.grant(6, { keepAlive: true }),
      await etcd.lease.grant(6, { keepAlive: true }),
    ];
    await etcd.put('jobs/doomed', 'x', { lease: doomed });
    await etcd.put('jobs/kept', 'x', { lease: kept });
    expect(server.expireLease(doomed.id)).toBe(true);
    expect(await etcd.get('jobs/doomed')).toBeUndefined();
    expect((await doomed.lost).reason).toBe('expired');
    expect((await etcd.get('jobs/kept'))?.text()).toBe('x');
    await kept.revoke();
  });
});

// The failover-test recipe of docs/testing-with-the-embedded-server.md, as it is there.
test('a second candidate takes over when the leader stops refreshing its lease', async () => {
  await using server = await EmbeddedEtcd.start({ clock: 'virtual' });
  const nodeA = new Etcd({ endpoints: server.endpoints });
  const nodeB = new Etcd({ endpoints: server.endpoints });
  try {
    // Node A's lease lasts 5 s without a refresh, node B's 60 s.
    const sessionA = await Session.create(nodeA, { ttl: 5 });
    const sessionB = await Session.create(nodeB, { ttl: 60 });
    const leaderA = await new Election(sessionA, 'elections/scheduler').campaign('node-a');
    const electionB = new Election(sessionB, 'elections/scheduler');
    const campaignB = electionB.campaign('node-b');
    // Wait until B is queued behind A (two candidate keys).
    while ((await nodeB.count({ prefix: 'elections/scheduler/' })) < 2n) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }

    // Both nodes stall for 6 s (say a network partition): A's lease expires, B's does not.
    await server.clock.advance(6_000);

    const leaderB = await campaignB;
    expect(leaderB.value).toBe('node-b');
    expect((await electionB.leader()).text()).toBe('node-b');
    expect(leaderB.epoch).toBeGreaterThan(leaderA.epoch);
    // A is told: its leadership's signal aborts with LeadershipLostError.
    if (!leaderA.signal.aborted) {
      await new Promise((resolve) => leaderA.signal.addEventListener('abort', resolve));
    }
    expect(leaderA.signal.reason).toBeInstanceOf(LeadershipLostError);
    await leaderB.resign();
  } finally {
    await nodeA.close();
    await nodeB.close();
  }
});

test('the same failover with expireLease(): one chosen node fails over, equal TTLs', async () => {
  await using server = await EmbeddedEtcd.start({ clock: 'virtual' });
  const nodeA = new Etcd({ endpoints: server.endpoints });
  const nodeB = new Etcd({ endpoints: server.endpoints });
  try {
    const sessionA = await Session.create(nodeA, { ttl: 10 });
    const sessionB = await Session.create(nodeB, { ttl: 10 });
    const leaderA = await new Election(sessionA, 'elections/scheduler').campaign('node-a');
    const campaignB = new Election(sessionB, 'elections/scheduler').campaign('node-b');
    while ((await nodeB.count({ prefix: 'elections/scheduler/' })) < 2n) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(server.expireLease(sessionA.leaseId)).toBe(true);
    const leaderB = await campaignB;
    expect(leaderB.value).toBe('node-b');
    expect(leaderB.epoch).toBeGreaterThan(leaderA.epoch);
    expect((await sessionA.done).reason).toBe('expired');
    expect(sessionB.isDone).toBe(false);
    await leaderB.resign();
  } finally {
    await nodeA.close();
    await nodeB.close();
  }
});
