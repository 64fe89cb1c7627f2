// Session: lease + keepalive, done as signal and promise, close (revoke) and orphan, no leaks.
import {
  AbortedError,
  Etcd,
  LeaseLostError,
  LeaseNotFoundError,
  type WatchEvent,
} from '@etcdkit/client';
import {
  describeEachBackend,
  describeRealEtcd,
  type EtcdProcess,
  startEtcd,
} from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { Election } from '../../src/election/election.js';
import { Mutex } from '../../src/lock/mutex.js';
import { Session } from '../../src/session/session.js';
import { waitForDelete } from '../../src/wait.js';
import { Fixture, rejection, sleep } from '../recipes-support.js';

describeEachBackend('Session', ({ backend, prefix }) => {
  const fixture = new Fixture(() => backend().endpoints);
  let admin: Etcd;
  beforeAll(() => {
    admin = new Etcd({ endpoints: backend().endpoints });
  });
  afterEach(() => fixture.close());
  afterAll(() => admin?.close());

  it('grants a lease with the TTL asked for (default 60 s) and keeps it alive', async () => {
    const session = await fixture.session();
    expect(session.ttl).toBe(60n);
    const short = await fixture.session({ ttl: 2 });
    expect(short.ttl).toBe(2n);
    expect(short.lease.keepingAlive).toBe(true);
    await sleep(3_000);
    const alive = await admin.lease.timeToLive(short.leaseId);
    expect(alive.grantedTtl).toBe(2n);
    expect(alive.ttl).toBeGreaterThan(0n);
    expect(short.isDone).toBe(false);
  });

  it('is done at once on close, with reason revoked', async () => {
    const session = await fixture.session({ ttl: 5 });
    await session.close();
    expect(session.signal.aborted).toBe(true);
    const reason: unknown = session.signal.reason;
    expect(reason).toBeInstanceOf(LeaseLostError);
    expect((reason as LeaseLostError).reason).toBe('revoked');
    expect((await session.done).reason).toBe('revoked');
    expect((await admin.lease.timeToLive(session.leaseId)).ttl).toBe(-1n);
    // A second close is the same close.
    await session.close();
  });

  it('close deletes every attached key in one revision', async () => {
    const p = prefix();
    const session = await fixture.session({ ttl: 5 });
    const lock = await new Mutex(session, `${p}lock`).lock();
    const leadership = await new Election(session, `${p}election`).campaign('a');
    await session.etcd.put(`${p}plain`, 'x', { lease: session.leaseId });
    const before = (await admin.get(`${p}plain`))?.modRevision ?? 0n;
    const watcher = admin.watch({ prefix: p, startRevision: before + 1n });
    await session.close();
    const iterator = watcher[Symbol.asyncIterator]();
    const batch = await iterator.next();
    await watcher.close();
    expect(batch.done).toBe(false);
    const events: readonly WatchEvent[] = batch.value?.events ?? [];
    expect(events.map((e) => e.type)).toEqual(['delete', 'delete', 'delete']);
    expect(events.map((e) => e.kv.keyText()).sort()).toEqual(
      [lock.key, leadership.key, `${p}plain`].sort(),
    );
    expect(await admin.count({ prefix: p })).toBe(0n);
  });

  it('after orphan the keys live until the TTL runs out, then go', async () => {
    const p = prefix();
    const session = await fixture.session({ ttl: 1 });
    const lock = await new Mutex(session, `${p}lock`).lock();
    const seen = await admin.get(lock.key);
    session.orphan();
    expect(session.signal.aborted).toBe(true);
    expect((session.signal.reason as LeaseLostError).reason).toBe('released');
    expect(await admin.get(lock.key)).toBeDefined();
    // Deleted at all means the refreshes stopped: a session still keeping the lease alive would
    // keep the key until the test's timeout. Not revoked by the orphan: the key outlived it above.
    await waitForDelete(admin, lock.key, seen?.modRevision ?? 0n);
    expect(await admin.get(lock.key)).toBeUndefined();
    expect((await admin.lease.timeToLive(session.leaseId)).ttl).toBe(-1n);
  });

  it('a lease revoked elsewhere ends the session fast, with reason expired', async () => {
    const session = await fixture.session({ ttl: 3 });
    await admin.lease.revoke(session.leaseId);
    const lost = await session.done;
    // 'expired': a keepalive heard TTL 0, before the local deadline (which would say 'timeout').
    expect(lost.reason).toBe('expired');
  });

  it('adopts a live lease and keeps it alive; a dead lease fails at once', async () => {
    const granted = await admin.lease.grant(2);
    const session = await fixture.session({ lease: granted.id });
    expect(session.leaseId).toBe(granted.id);
    expect(session.ttl).toBe(2n);
    await sleep(2_500);
    expect((await admin.lease.timeToLive(granted.id)).ttl).toBeGreaterThan(0n);

    const dead = await admin.lease.grant(5);
    await dead.revoke();
    // The server's answer, typed: a session that waited for its deadline would end as lost instead.
    const error = await rejection(Session.create(admin, { lease: dead.id }));
    expect(error).toBeInstanceOf(LeaseNotFoundError);
  });

  it('revokes the lease it granted when the creation is aborted', async () => {
    const etcd = fixture.client();
    const before = new Set(await admin.lease.leases());
    const controller = new AbortController();
    const creating = Session.create(etcd, { ttl: 30, signal: controller.signal });
    controller.abort(new Error('changed my mind'));
    const error = await rejection(creating);
    expect(error).toBeInstanceOf(AbortedError);
    const leftover = (await admin.lease.leases()).filter((id) => !before.has(id));
    expect(leftover).toEqual([]);
  });

  it('its signal option ends the session like orphan', async () => {
    const controller = new AbortController();
    const session = await fixture.session({ ttl: 5, signal: controller.signal });
    controller.abort();
    expect(session.isDone).toBe(true);
    expect((await session.done).reason).toBe('released');
    expect((await admin.lease.timeToLive(session.leaseId)).ttl).toBeGreaterThan(0n);
    await admin.lease.revoke(session.leaseId);
  });

  it('is closed by its client closing: its lease revoked first, reason revoked', async () => {
    const etcd = fixture.client();
    const session = await fixture.session({ ttl: 5 }, etcd);
    await etcd.close();
    expect((await session.done).reason).toBe('revoked');
    expect((await admin.lease.timeToLive(session.leaseId)).ttl).toBe(-1n);
  });

  it('await using closes the session', async () => {
    let id: bigint;
    {
      await using session = await Session.create(fixture.client(), { ttl: 5 });
      id = session.leaseId;
    }
    expect((await admin.lease.timeToLive(id)).ttl).toBe(-1n);
  });
});

describeRealEtcd('Session timing', () => {
  let etcd: EtcdProcess;
  const fixture = new Fixture(() => etcd.endpoints);
  beforeAll(async () => {
    // etcd's default timing: the minimum lease TTL is ceil(1.5 x 1 s election timeout) = 2 s.
    etcd = await startEtcd({ args: ['--heartbeat-interval', '100', '--election-timeout', '1000'] });
  });
  afterEach(() => fixture.close());
  afterAll(() => etcd?.stop());

  it('the TTL is raised to the server minimum (2 s with etcd default timing)', async () => {
    const session = await fixture.session({ ttl: 1 });
    expect(session.ttl).toBe(2n);
    const alive = await session.lease.timeToLive();
    expect(alive.grantedTtl).toBe(2n);
  });

  it('is done within its TTL of losing the server', async () => {
    const session = await fixture.session({ ttl: 2 });
    await sleep(100);
    await etcd.pause();
    const pausedAt = performance.now();
    try {
      const lost = await session.done;
      expect(lost.reason).toBe('timeout');
      // The local deadline (TTL 2 s) fired; without it the session would wait for the paused
      // server until the test's timeout. 10 s is far from both.
      expect(performance.now() - pausedAt).toBeLessThan(10_000);
    } finally {
      etcd.resume();
    }
  });
});
