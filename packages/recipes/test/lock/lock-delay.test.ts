// Lock-delay: a waiter that takes over from a holder whose lease ended waits the delay before it
// holds; after an unlock, or on a free lock, it does not.
import { AbortedError } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import { Mutex } from '../../src/lock/mutex.js';
import { eventually, rejection, stillPending, suiteClients } from '../recipes-support.js';

const DELAY = 1_500;
// Far longer than a takeover takes: a delay applied by mistake would show.
const LONG_DELAY = 60_000;

describeEachBackend('Mutex lock-delay', ({ backend, prefix }) => {
  const { fixture, admin } = suiteClients(() => backend().endpoints);

  const keysUnder = async (name: string) =>
    (await admin().range({ prefix: `${name}/`, keysOnly: true })).kvs.map((kv) => kv.keyText());

  it('delays a takeover from a holder whose lease was revoked, and holds meanwhile', async () => {
    const name = `${prefix()}lock`;
    const holderSession = await fixture.session();
    const holder = await new Mutex(holderSession, name).lock();
    const waiterSession = await fixture.session();
    const waiter = new Mutex(waiterSession, name);
    const taking = waiter.lock({ lockDelayMs: DELAY });
    await eventually(async () => (await keysUnder(name)).length === 2);
    await admin().lease.revoke(holderSession.leaseId);
    const lostAt = Date.now();
    // The waiter's key is the only one, so the lock is its own, but it is not handed out yet.
    await eventually(async () => (await keysUnder(name)).length === 1);
    expect(await keysUnder(name)).toEqual([waiter.key]);
    expect(await stillPending(taking, 200)).toBe(true);
    const lock = await taking;
    expect(Date.now() - lostAt).toBeGreaterThanOrEqual(DELAY);
    expect(lock.fencingToken).toBeGreaterThan(holder.fencingToken);
    await lock.unlock();
  });

  it('does not delay a takeover after an unlock, nor a free lock', async () => {
    const name = `${prefix()}lock`;
    const free = await new Mutex(await fixture.session(), name).lock({ lockDelayMs: LONG_DELAY });
    const waiter = new Mutex(await fixture.session(), name);
    const taking = waiter.lock({ lockDelayMs: LONG_DELAY });
    await eventually(async () => (await keysUnder(name)).length === 2);
    await free.unlock();
    await eventually(() => stillPending(taking, 0).then((pending) => !pending), 10_000);
    const lock = await taking;
    expect(lock.key).toBe(waiter.key);
    await lock.unlock();
  });

  it('an abort during the delay releases the lock it was holding', async () => {
    const name = `${prefix()}lock`;
    const holderSession = await fixture.session();
    await new Mutex(holderSession, name).lock();
    const waiter = new Mutex(await fixture.session(), name);
    const stop = new AbortController();
    const taking = waiter.lock({ lockDelayMs: LONG_DELAY, signal: stop.signal });
    await eventually(async () => (await keysUnder(name)).length === 2);
    await admin().lease.revoke(holderSession.leaseId);
    await eventually(async () => (await keysUnder(name)).length === 1);
    expect(await stillPending(taking, 200)).toBe(true);
    stop.abort();
    expect(await rejection(taking)).toBeInstanceOf(AbortedError);
    expect(await keysUnder(name)).toEqual([]);
  });
});
