// Lease expiry on the embedded server's virtual clock: the server expires a lease while the client
// still keeps it alive (the server counts the TTL on its own clock), which is exactly the case a
// lock must survive safely. Deterministic and fast: no waiting for real TTLs.
import { Etcd, op } from '@etcdkit/client';
import { EmbeddedEtcd, type VirtualClock } from '@etcdkit/server-embedded';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Election } from '../src/election/election.js';
import { LockLostError, SessionExpiredError } from '../src/errors.js';
import { Mutex } from '../src/lock/mutex.js';
import { eventually, Fixture, rejection } from './recipes-support.js';

describe('recipes on virtual time [backend: embedded]', () => {
  let server: EmbeddedEtcd & { readonly clock: VirtualClock };
  let admin: Etcd;
  let serial = 0;
  const fixture = new Fixture(() => server.endpoints);
  const name = (what: string) => `vt/${++serial}/${what}`;

  beforeAll(async () => {
    server = await EmbeddedEtcd.start({ clock: 'virtual' });
    admin = new Etcd({ endpoints: [...server.endpoints] });
  });
  afterEach(() => fixture.close());
  afterAll(async () => {
    await admin?.close();
    await server?.stop();
  });

  /** Lets the server's clock run past every lease of TTL `ttl` granted or refreshed until now. */
  const expireLeases = (ttl: bigint) => server.clock.advance(Number(ttl) * 1_000 + 1_000);

  it('a held lock whose lease the server expires: fenced writes fail, the next waiter gets it', async () => {
    const lockName = name('lock');
    const holder = await fixture.session({ ttl: 5 });
    const lock = await new Mutex(holder, lockName).lock();
    const waiter = await fixture.session({ ttl: 30 });
    const next = new Mutex(waiter, lockName).lock();
    await eventually(async () => (await admin.count({ prefix: `${lockName}/` })) === 2n);

    // The waiter's lease (30 s) outlives the holder's (5 s).
    await server.clock.advance(6_000);
    const error = await rejection(
      lock
        .txn()
        .then(op.put(`${lockName}-data`, 'stale'))
        .commit(),
    );
    expect(error).toBeInstanceOf(LockLostError);
    expect(await admin.get(`${lockName}-data`)).toBeUndefined();
    await eventually(() => lock.signal.aborted);
    const taken = await next;
    expect(taken.fencingToken).toBeGreaterThan(lock.fencingToken);
    // The holder's keepalive hears TTL 0 on its next refresh.
    expect((await holder.done).reason).toBe('expired');
    await taken.unlock();
  });

  it('a waiter whose lease the server expires fails with SessionExpiredError, even before its keepalive notices', async () => {
    const lockName = name('lock');
    const holder = await fixture.session({ ttl: 60 });
    const lock = await new Mutex(holder, lockName).lock();
    const waiter = await fixture.session({ ttl: 5 });
    const waiting = new Mutex(waiter, lockName).lock();
    waiting.catch(() => {});
    await eventually(async () => (await admin.count({ prefix: `${lockName}/` })) === 2n);
    await server.clock.advance(6_000);
    expect(await rejection(waiting)).toBeInstanceOf(SessionExpiredError);
    expect(lock.signal.aborted).toBe(false);
    expect((await admin.range({ prefix: `${lockName}/` })).kvs.map((kv) => kv.keyText())).toEqual([
      lock.key,
    ]);
    await lock.unlock();
  });

  it('the next candidate wins as soon as the leader lease expires on the server', async () => {
    const electionName = name('election');
    const leaderSession = await fixture.session({ ttl: 5 });
    const leader = await new Election(leaderSession, electionName).campaign('old');
    const candidate = new Election(await fixture.session({ ttl: 60 }), electionName);
    const winning = candidate.campaign('new');
    await eventually(async () => (await admin.count({ prefix: `${electionName}/` })) === 2n);
    await expireLeases(leaderSession.ttl);
    // The server's clock stands still from here and the candidate's own lease has 60 s left on it:
    // only the deletion of the expired leader's key can wake it. A missed wakeup hangs until the
    // test's timeout, whatever the machine's load.
    const won = await winning;
    expect(won.epoch).toBeGreaterThan(leader.epoch);
    await eventually(() => leader.signal.aborted);
    expect((await candidate.leader()).text()).toBe('new');
  });
});
