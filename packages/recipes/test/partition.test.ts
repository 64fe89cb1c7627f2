// Recipes across a network partition, on the embedded server's simulated cluster: the holder of a
// lock (or a leadership) talks to a member that gets cut off from the others. The majority expires
// its lease on the cluster's clock and hands the lock on; the old holder's fenced writes never land,
// and once the partition heals it learns that it lost. Virtual time makes the expiry exact.
import {
  AbortedError,
  DeadlineExceededError,
  Etcd,
  OutcomeUnknownError,
  op,
  RequestTimeoutError,
} from '@etcdkit/client';
import {
  EmbeddedCluster,
  type EmbeddedClusterMember,
  type VirtualClock,
} from '@etcdkit/server-embedded';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Election } from '../src/election/election.js';
import { LockLostError } from '../src/errors.js';
import { Mutex } from '../src/lock/mutex.js';
import { Session } from '../src/session/session.js';
import { eventually, rejection, stillPending } from './recipes-support.js';

describe('recipes across a partition [cluster: embedded]', () => {
  let cluster: EmbeddedCluster & { readonly clock: VirtualClock };
  let cut: EmbeddedClusterMember;
  /** Talks only to the member that gets partitioned. */
  let minority: Etcd;
  /** Talks to the two members that keep the quorum. */
  let majority: Etcd;

  beforeAll(async () => {
    // Calls held on the cut-off member fail once the cluster's clock passes the request timeout.
    cluster = await EmbeddedCluster.start({ members: 3, clock: 'virtual', requestTimeoutMs: 300 });
    const [m0, m1, m2] = cluster.members as [
      EmbeddedClusterMember,
      EmbeddedClusterMember,
      EmbeddedClusterMember,
    ];
    cut = m2;
    minority = new Etcd({ endpoints: [m2.endpoint] });
    majority = new Etcd({ endpoints: [m0.endpoint, m1.endpoint] });
  });
  afterAll(async () => {
    cut?.heal();
    await minority?.close();
    await majority?.close();
    await cluster?.stop();
  });

  it('a lock holder behind a partition loses the lock: the next holder gets a higher token, stale writes fail', async () => {
    const holderSession = await Session.create(minority, { ttl: 5 });
    const held = await new Mutex(holderSession, 'p/lock').lock();
    const waiterSession = await Session.create(majority, { ttl: 60 });
    const next = new Mutex(waiterSession, 'p/lock').lock();
    await eventually(async () => (await majority.count({ prefix: 'p/lock/' })) === 2n);

    cut.partition();
    // Nothing can keep the holder's lease alive now: the majority expires it after its TTL.
    await cluster.clock.advance(6_000);
    const taken = await next;
    expect(taken.fencingToken).toBeGreaterThan(held.fencingToken);
    await majority.put('p/data', 'fresh');

    // The old holder's fenced write cannot even reach the leader...
    const blocked = held.txn().then(op.put('p/data', 'stale')).commit();
    expect(await stillPending(blocked, 100)).toBe(true);
    // At the request timeout the member answers as its etcd version does: "request timed out"
    // (3.4), a deadline exceeded (3.5 on): the client cannot know whether it was applied.
    const { version } = await majority.maintenance.status();
    await cluster.clock.advance(300);
    const failure = await rejection(blocked);
    expect(failure).toBeInstanceOf(OutcomeUnknownError);
    expect((failure as OutcomeUnknownError).cause).toBeInstanceOf(
      version.startsWith('3.4.') ? RequestTimeoutError : DeadlineExceededError,
    );
    cut.heal();
    // ...and once the partition heals, its lock is known lost and the write is refused.
    expect(await rejection(held.txn().then(op.put('p/data', 'stale')).commit())).toBeInstanceOf(
      LockLostError,
    );
    expect((await majority.get('p/data'))?.text()).toBe('fresh');
    expect((await holderSession.done).reason).toBe('expired');
    await taken.unlock();
    await waiterSession.close();
  });

  it('an observer on the member that gets partitioned moves to another and misses no proclaim', async () => {
    // Every endpoint, the partitioned member first, and require-leader: its watch moves on.
    const observing = new Etcd({
      endpoints: [cut.endpoint, ...majority.connection.endpoints],
      requireLeader: true,
    });
    const candidate = await Session.create(majority, { ttl: 60 });
    const watcher = await Session.create(observing, { ttl: 60 });
    const controller = new AbortController();
    try {
      const leadership = await new Election(candidate, 'p/observed').campaign('v1');
      const seen: string[] = [];
      const observer = (async () => {
        const election = new Election(watcher, 'p/observed');
        for await (const leader of election.observe({ signal: controller.signal })) {
          seen.push(leader.text());
        }
      })();
      // Its signal ends it with AbortedError (checked below), also when the test fails first.
      observer.catch(() => {});
      await eventually(() => seen.length === 1);
      expect(observing.connection.currentEndpoint).toBe(new URL(cut.endpoint).host);
      cut.partition();
      await leadership.proclaim('v2');
      await leadership.proclaim('v3');
      await eventually(() => seen.length === 3);
      expect(seen).toEqual(['v1', 'v2', 'v3']);
      expect(observing.connection.currentEndpoint).not.toBe(new URL(cut.endpoint).host);
      controller.abort();
      expect(await rejection(observer)).toBeInstanceOf(AbortedError);
      await leadership.resign();
    } finally {
      controller.abort();
      cut.heal();
      await watcher.close();
      await candidate.close();
      await observing.close();
    }
  });

  it('a leader behind a partition is replaced; after healing it sees the new leader', async () => {
    const oldSession = await Session.create(minority, { ttl: 5 });
    const oldLeader = await new Election(oldSession, 'p/election').campaign('old');
    const newSession = await Session.create(majority, { ttl: 60 });
    const campaign = new Election(newSession, 'p/election').campaign('new');
    expect(await stillPending(campaign, 100)).toBe(true);

    cut.partition();
    await cluster.clock.advance(6_000);
    const newLeader = await campaign;
    expect(newLeader.fencingToken).toBeGreaterThan(oldLeader.fencingToken);
    cut.heal();
    const seen = await new Election(oldSession, 'p/election').leader();
    expect(seen.text()).toBe('new');
    expect((await oldSession.done).reason).toBe('expired');
    await newLeader.resign();
    await newSession.close();
  });
});
