// ElectionClient.observe when the member it streams from dies, on a 3-member cluster (the embedded
// server's simulated one and a real etcd): the observation reopens on another member and yields what
// the other members' clients do to the election, each value once and in order.
import { describeEachCluster, type TestCluster, type TestClusterMember } from '@etcdkit/testkit';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { ElectionClient } from '../../src/election/election.js';
import type {
  ElectionHooks,
  ObserveDisconnected,
  ObserveResumed,
} from '../../src/election/election-observe-events.js';
import { AbortedError, UnavailableError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import type { Lease } from '../../src/lease/lease.js';
import { follow, ObserveProbe } from './election-observe-support.js';
import { eventually } from './lock-election-support.js';

describeEachCluster('ElectionClient.observe when its member dies', (suite) => {
  let cluster: TestCluster;
  let victim: TestClusterMember;
  let writer: Etcd;
  let observing: Etcd | undefined;
  let name = '';
  const leases: Lease[] = [];
  let count = 0;

  async function lease(): Promise<Lease> {
    const granted = await writer.lease.grant(60);
    leases.push(granted);
    return granted;
  }

  /** An observing client whose streams go to the victim first, seen through a probe. */
  function observer(hooks?: ElectionHooks): {
    etcd: Etcd;
    probe: ObserveProbe;
    election: ElectionClient;
  } {
    const others = cluster.endpoints.filter((e) => e !== victim.endpoint);
    const etcd = new Etcd({ endpoints: [victim.endpoint, ...others], dialTimeoutMs: 1_000 });
    observing = etcd;
    const probe = new ObserveProbe(etcd.connection);
    return { etcd, probe, election: new ElectionClient(probe, { hooks }) };
  }

  beforeAll(() => {
    cluster = suite.cluster();
  });
  beforeEach(async () => {
    name = `observe-cluster/${++count}`;
    // The raft leader: its death also takes the leadership, so the writes below wait for a new
    // one while the observer looks for another member. The writer never uses it.
    victim = await cluster.waitForLeader();
    writer = new Etcd({ endpoints: cluster.endpoints.filter((e) => e !== victim.endpoint) });
  }, 60_000);
  afterEach(async () => {
    await observing?.close();
    observing = undefined;
    if (!victim.running) await victim.start();
    await cluster.waitForLeader();
    for (const held of leases.splice(0)) await held.revoke().catch(() => {});
    await writer.close();
  }, 60_000);

  it('the observer moves to another member and yields each new value once, in order', async () => {
    const { etcd, probe, election } = observer();
    const one = await writer.election.campaign(name, 'one', { lease: await lease() });
    const waiting = writer.election.campaign(name, 'two', { lease: await lease() });
    const following = follow(election, name);
    try {
      await eventually(() => following.values.length === 1);
      expect(etcd.connection.currentEndpoint).toBe(new URL(victim.endpoint).host);

      await victim.kill();
      await cluster.waitForLeader();
      await writer.election.proclaim(one, 'one-b');
      await eventually(() => following.values.length === 2, 30_000);
      await writer.election.resign(one);
      const two = await waiting;
      await eventually(() => following.values.length === 3, 30_000);
      await writer.election.proclaim(two, 'two-b');
      await eventually(() => following.values.length === 4, 30_000);

      expect(following.values).toEqual(['one', 'one-b', 'two', 'two-b']);
      expect(following.kvs.map((kv) => kv.createRevision)).toEqual([
        one.rev,
        one.rev,
        two.rev,
        two.rev,
      ]);
      expect(probe.opened).toBeGreaterThanOrEqual(2);
      expect(etcd.connection.currentEndpoint).not.toBe(new URL(victim.endpoint).host);
    } finally {
      expect(await following.stop()).toBeInstanceOf(AbortedError);
    }
  }, 90_000);

  it('changes made while it reconnects come as the latest leader and value, once', async () => {
    const { probe, election } = observer();
    const one = await writer.election.campaign(name, 'one', { lease: await lease() });
    const following = follow(election, name);
    try {
      await eventually(() => following.values.length === 1);
      probe.hold();
      await victim.kill();
      // The stream broke and its reopen waits: the election moves on meanwhile.
      await eventually(() => probe.held === 1, 30_000);
      await cluster.waitForLeader();
      await writer.election.proclaim(one, 'one-b');
      const waiting = writer.election.campaign(name, 'two', { lease: await lease() });
      await writer.election.resign(one);
      const two = await waiting;
      const latest = await writer.election.proclaim(two, 'two-b');
      probe.release();
      await eventually(() => following.values.length === 2, 30_000);
      expect(following.values).toEqual(['one', 'two-b']);
      expect(following.kvs.map((kv) => [kv.createRevision, kv.modRevision])).toEqual([
        [one.rev, one.rev],
        [two.rev, latest.header.revision],
      ]);
      await writer.election.proclaim(two, 'two-c');
      await eventually(() => following.values.length === 3, 30_000);
      expect(following.values).toEqual(['one', 'two-b', 'two-c']);
    } finally {
      await following.stop();
    }
  }, 90_000);

  it('the stream of the dead member is reported once, with its endpoint, and the return on another member', async () => {
    const disconnects: ObserveDisconnected[] = [];
    const resumes: ObserveResumed[] = [];
    const { probe, election } = observer({
      onObserveDisconnect: (event) => disconnects.push(event),
      onObserveResume: (event) => resumes.push(event),
    });
    const one = await writer.election.campaign(name, 'one', { lease: await lease() });
    const following = follow(election, name);
    try {
      await eventually(() => following.values.length === 1);
      await victim.kill();
      await cluster.waitForLeader();
      await writer.election.proclaim(one, 'one-b');
      await eventually(() => following.values.length === 2, 30_000);

      expect(following.values).toEqual(['one', 'one-b']);
      const victimHost = new URL(victim.endpoint).host;
      expect(disconnects.map((d) => [new TextDecoder().decode(d.name), d.endpoint])).toEqual([
        [name, victimHost],
      ]);
      expect(disconnects[0]!.error).toBeInstanceOf(UnavailableError);
      expect(resumes).toHaveLength(1);
      expect(resumes[0]!.endpoint).not.toBe(victimHost);
      expect(cluster.endpoints.map((e) => new URL(e).host)).toContain(resumes[0]!.endpoint);
      // Every stream opened since the loss, the one that answered included.
      expect(resumes[0]!.attempts).toBe(probe.opened - 1);
    } finally {
      expect(await following.stop()).toBeInstanceOf(AbortedError);
    }
  }, 90_000);
});
