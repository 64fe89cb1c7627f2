// Failover tests on virtual time: `clock.advance(ms)` past a leader's lease TTL (its process
// stalled that long) or `expireLease()` hands the election to the next candidate. The first test is
// the recipe of docs/testing-with-the-embedded-server.md, as it is there.
import { Etcd } from '@etcdkit/client';
import { Election, LeadershipLostError, Session } from '@etcdkit/recipes';
import { expect, test } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';

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
