// Teardown in any order: closing the client closes its sessions first (their leases revoked, so
// their locks and leaderships end), and disposing any of them afterwards does nothing.
import { Etcd, LeaseLostError } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import { Election } from '../../src/election/election.js';
import { LeaderLatch } from '../../src/election/leader-latch.js';
import { LockNotHeldError } from '../../src/errors.js';
import { Mutex } from '../../src/lock/mutex.js';
import { Session } from '../../src/session/session.js';
import { rejection, suiteClients } from '../recipes-support.js';

describeEachBackend('teardown in any order', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  const alive = async (lease: bigint) => (await admin().lease.timeToLive(lease)).ttl > 0n;

  it('client closed first: the session revokes its lease, the holds end released, their disposal does nothing', async () => {
    const p = prefix();
    let lease = 0n;
    let lockKey = '';
    let leaderKey = '';
    let latch: LeaderLatch | undefined;
    {
      const etcd = new Etcd({ endpoints: backend().endpoints });
      await using session = await Session.create(etcd, { ttl: 30 });
      await using lock = await new Mutex(session, `${p}lock`).lock();
      await using leadership = await new Election(session, `${p}election`).campaign('a');
      await using started = new LeaderLatch(session, `${p}latch`).start();
      latch = started;
      await latch.leadership();
      lease = session.leaseId;
      lockKey = lock.key;
      leaderKey = leadership.key;

      await etcd.close();

      expect((await session.done).reason).toBe('revoked');
      expect(await alive(lease)).toBe(false);
      expect(await admin().get(lockKey)).toBeUndefined();
      expect(await admin().get(leaderKey)).toBeUndefined();
      // Ended by this process: released, not lost.
      for (const hold of [lock, leadership]) {
        expect(hold.signal.aborted).toBe(true);
        expect(hold.signal.reason).toBeInstanceOf(LockNotHeldError);
        expect((hold.signal.reason as LockNotHeldError).cause).toBeInstanceOf(LeaseLostError);
      }
      // An explicit unlock says so; a resign does nothing.
      expect(await rejection(lock.unlock())).toBeInstanceOf(LockNotHeldError);
      await leadership.resign();
      // The block's end disposes the latch, the leadership, the lock and the session: none throws.
    }
    expect(latch?.state).toBe('closed');
  });

  it('session closed first: the holds end released, their disposal does nothing', async () => {
    const p = prefix();
    const session = await fixture.session({ ttl: 30 });
    const lock = await new Mutex(session, `${p}lock`).lock();
    const leadership = await new Election(session, `${p}election`).campaign('a');
    await session.close();
    expect(lock.signal.reason).toBeInstanceOf(LockNotHeldError);
    expect(leadership.signal.reason).toBeInstanceOf(LockNotHeldError);
    await lock[Symbol.asyncDispose]();
    await leadership[Symbol.asyncDispose]();
    await session[Symbol.asyncDispose]();
    expect(await admin().get(lock.key)).toBeUndefined();
  });

  it('orphaned session: the holds end released and their disposal leaves the keys to the lease', async () => {
    const p = prefix();
    const session = await fixture.session({ ttl: 30 });
    const lock = await new Mutex(session, `${p}lock`).lock();
    session.orphan();
    expect(lock.signal.reason).toBeInstanceOf(LockNotHeldError);
    await lock[Symbol.asyncDispose]();
    // Handed over, not deleted: the key lives with the lease (the fixture's close revokes it).
    expect((await admin().get(lock.key))?.createRevision).toBe(lock.fencingToken);
  });

  it('an orphaned session closed after its client: nothing to do, no error', async () => {
    const etcd = fixture.client();
    const session = await Session.create(etcd, { ttl: 30 });
    session.orphan();
    await etcd.close();
    // Orphaned, the client's close left its lease alone; closing it now cannot revoke it.
    expect(await alive(session.leaseId)).toBe(true);
    await session.close();
    await session[Symbol.asyncDispose]();
    await admin().lease.revoke(session.leaseId);
  });

  it('the usual order: lock, leadership and session disposed, then the client closed', async () => {
    const p = prefix();
    const etcd = new Etcd({ endpoints: backend().endpoints });
    let lease = 0n;
    let lockKey = '';
    {
      await using session = await Session.create(etcd, { ttl: 30 });
      await using lock = await new Mutex(session, `${p}lock`).lock();
      await using leadership = await new Election(session, `${p}election`).campaign('a');
      lease = session.leaseId;
      lockKey = lock.key;
      expect(leadership.signal.aborted).toBe(false);
    }
    expect(await alive(lease)).toBe(false);
    expect(await admin().get(lockKey)).toBeUndefined();
    await etcd.close();
  });

  it('a session already closing when its client closes: the client waits for that revoke', async () => {
    const etcd = new Etcd({ endpoints: backend().endpoints });
    const session = await Session.create(etcd, { ttl: 30 });
    const closing = session.close();
    await etcd.close();
    await closing;
    expect(await alive(session.leaseId)).toBe(false);
    await session.close();
  });
});
