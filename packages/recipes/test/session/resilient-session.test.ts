// ResilientSession: a lost lease is replaced by a new one, the registrations run again on it, and
// nothing held on the old lease is carried over.
import { Etcd, type LeaseLostError, PermissionDeniedError } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { LockLostError, SessionExpiredError } from '../../src/errors.js';
import { Mutex } from '../../src/lock/mutex.js';
import { ResilientSession } from '../../src/session/resilient-session.js';
import type { Session } from '../../src/session/session.js';
import { eventually, Fixture, rejection } from '../recipes-support.js';

/** Every event of `resilient`, in order, as `lost:<reason>`, `renewed`, `failed:<code>`, `end`. */
function recordEvents(resilient: ResilientSession): string[] {
  const events: string[] = [];
  resilient.on('lost', (error) => events.push(`lost:${error.reason}`));
  resilient.on('renewed', () => events.push('renewed'));
  resilient.on('failed', (error) => events.push(`failed:${error.code}`));
  resilient.on('end', () => events.push('end'));
  return events;
}

describeEachBackend('ResilientSession', ({ backend, prefix }) => {
  const fixture = new Fixture(() => backend().endpoints);
  const resilients: ResilientSession[] = [];
  let admin: Etcd;
  beforeAll(() => {
    admin = new Etcd({ endpoints: backend().endpoints });
  });
  afterEach(async () => {
    for (const resilient of resilients.splice(0)) await resilient.close().catch(() => {});
    await fixture.close();
  });
  afterAll(() => admin?.close());

  async function create(ttl = 3, etcd = fixture.client()): Promise<ResilientSession> {
    const resilient = await ResilientSession.create(etcd, {
      ttl,
      retry: { minDelayMs: 50, maxDelayMs: 200 },
    });
    resilients.push(resilient);
    return resilient;
  }

  it('replaces a lease revoked elsewhere with a new one and runs the registrations on it', async () => {
    const key = `${prefix()}worker`;
    const resilient = await create();
    const events = recordEvents(resilient);
    const seen: Session[] = [];
    await resilient.register(async (session) => {
      seen.push(session);
      await session.etcd.put(key, `lease ${session.leaseId}`, { lease: session.leaseId });
    });
    const first = resilient.current;
    expect(seen).toEqual([first]);
    expect((await admin.get(key))?.lease).toBe(first?.leaseId);

    await admin.lease.revoke(first!.leaseId);
    await eventually(() => seen.length === 2);
    const second = resilient.current;
    // The setup's put follows its push: wait for it to land.
    await eventually(async () => (await admin.get(key))?.lease === second?.leaseId);
    expect(second).toBe(seen[1]);
    expect(second?.leaseId).not.toBe(first?.leaseId);
    expect(first?.isDone).toBe(true);
    expect((await first!.done).reason).toBe('expired');
    expect(events).toEqual(['lost:expired', 'renewed']);
    expect(resilient.renewals).toBe(1);
    const stored = await admin.get(key);
    expect([stored?.text(), stored?.lease]).toEqual([`lease ${second?.leaseId}`, second?.leaseId]);
    expect((await admin.lease.timeToLive(second!.leaseId)).ttl).toBeGreaterThan(0n);
  });

  it('a lock held on the lost lease is told it is lost and is not carried over', async () => {
    const name = `${prefix()}lock`;
    const resilient = await create();
    const old = resilient.current!;
    const lock = await new Mutex(old, name).lock();
    await admin.lease.revoke(old.leaseId);
    await eventually(() => resilient.renewals === 1);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    // Nobody holds the lock now: the new session's lease owns no key under it.
    expect(await admin.count({ prefix: `${name}/` })).toBe(0n);
    const relocked = await new Mutex(resilient.current!, name).lock();
    expect(relocked.key).toBe(`${name}/${resilient.current!.leaseId.toString(16)}`);
    expect(relocked.fencingToken).toBeGreaterThan(lock.fencingToken);
    await relocked.unlock();
  });

  it('a failing first run rejects register and is not kept; later runs are retried', async () => {
    const resilient = await create();
    const events = recordEvents(resilient);
    const error = await rejection(
      resilient.register(() => {
        throw new PermissionDeniedError();
      }),
    );
    expect(error).toBeInstanceOf(PermissionDeniedError);

    let runs = 0;
    let failNext = 0;
    await resilient.register(() => {
      runs++;
      if (failNext > 0) {
        failNext--;
        throw new PermissionDeniedError();
      }
    });
    failNext = 2;
    await admin.lease.revoke(resilient.current!.leaseId);
    await eventually(() => runs === 4);
    // Only the kept registration ran again: twice failing, then succeeding, on the new session.
    expect(events).toEqual([
      'lost:expired',
      'renewed',
      'failed:PERMISSION_DENIED',
      'failed:PERMISSION_DENIED',
    ]);
  });

  it('a removed registration does not run again', async () => {
    const resilient = await create();
    let runs = 0;
    const registration = await resilient.register(() => {
      runs++;
    });
    expect(registration.session).toBe(resilient.current);
    registration.remove();
    await admin.lease.revoke(resilient.current!.leaseId);
    await eventually(() => resilient.renewals === 1);
    expect(runs).toBe(1);
  });

  it('close revokes the current lease, ends, and renews nothing', async () => {
    const key = `${prefix()}worker`;
    const resilient = await create();
    const events = recordEvents(resilient);
    await resilient.register((session) =>
      session.etcd.put(key, 'x', { lease: session.leaseId }).then(() => {}),
    );
    const session = resilient.current!;
    await resilient.close();
    expect((await session.done).reason).toBe('revoked');
    expect(await admin.get(key)).toBeUndefined();
    expect(resilient.current).toBeUndefined();
    expect(resilient.closed).toBe(true);
    expect(events).toEqual(['end']);
    expect(await rejection(resilient.register(() => {}))).toBeInstanceOf(SessionExpiredError);
    expect(await rejection(resilient.session())).toBeInstanceOf(SessionExpiredError);
  });

  it('ends when its client closes, revoking its lease first, without granting again', async () => {
    const etcd = fixture.client();
    const resilient = await create(3, etcd);
    const events = recordEvents(resilient);
    const lease = resilient.current!.leaseId;
    await etcd.close();
    expect(events).toEqual(['end']);
    expect(resilient.closed).toBe(true);
    expect((await admin.lease.timeToLive(lease)).ttl).toBe(-1n);
    expect((await admin.lease.leases()).includes(lease)).toBe(false);
    // Closing it afterwards does nothing.
    await resilient.close();
    expect(events).toEqual(['end']);
  });

  it('session() waits for the renewal while there is no current session', async () => {
    const resilient = await create();
    const old = resilient.current!;
    const lost = new Promise<LeaseLostError>((resolve) => resilient.once('lost', resolve));
    await admin.lease.revoke(old.leaseId);
    expect((await lost).leaseId).toBe(old.leaseId);
    // The renewal has not been granted yet when 'lost' is emitted.
    expect(resilient.current).toBeUndefined();
    const next = await resilient.session();
    expect(next).toBe(resilient.current);
    expect(next.leaseId).not.toBe(old.leaseId);
  });
});
