// The mutex behind the Lock service, run on the server's LocalClient with a virtual clock: the key
// layout, FIFO by create revision, one watched predecessor per waiter, no lost wakeup, a lost own
// key failing the wait, and what a failed or dropped wait leaves behind.
import { describe, expect, it } from 'vitest';
import { lock, unlock } from '../../src/concurrency/mutex.js';
import { deleteIfCreatedAt } from '../../src/concurrency/queue.js';
import { EtcdServerError } from '../../src/errors.js';
import { b, text } from '../support/bytes.js';
import { isPending, keyOf, settle, setup } from './concurrency-setup.js';

const never = new AbortController().signal;

describe('server mutex (v3lock)', () => {
  it('takes a free lock in one txn: key name/<lease hex>, empty, on the lease, header at its creation', async () => {
    const { client, grant, get, store } = setup();
    const lease = grant();
    const before = store.revision;
    const held = await lock(client, { name: b('locks/a'), lease, signal: never });
    expect(text(held.key)).toBe(keyOf('locks/a', lease));
    expect(held.header.revision).toBe(BigInt(before + 1));
    expect(store.revision).toBe(before + 1);
    expect(get(keyOf('locks/a', lease))).toMatchObject({
      value: new Uint8Array(0),
      lease,
      createRevision: BigInt(before + 1),
    });
  });

  it('writes a negative lease id as Go prints an int64 in hex, with a minus sign', async () => {
    const { client, leases } = setup();
    leases.grant({ ID: -255n, TTL: 30n }, 4);
    const held = await lock(client, { name: b('locks/a'), lease: -255n, signal: never });
    expect(text(held.key)).toBe('locks/a/-ff');
  });

  it('serves waiters in create-revision order, each woken by its own predecessor only', async () => {
    const { client, grant, queue, watchable } = setup();
    const leases = [grant(), grant(), grant(), grant()];
    const first = await lock(client, { name: b('l'), lease: leases[0]!, signal: never });
    const granted: number[] = [];
    const waiting = leases.slice(1).map((lease, index) =>
      lock(client, { name: b('l'), lease, signal: never }).then((held) => {
        granted.push(index + 1);
        return held;
      }),
    );
    await settle();
    expect(queue('l/')).toEqual(leases.map((lease) => keyOf('l', lease)));
    // Each waiter watches exactly one predecessor (no thundering herd), not its own key: as in
    // etcd, a vanished key is noticed on its turn.
    expect(watchable.size).toBe(waiting.length);

    let holder = first.key;
    for (let index = 0; index < waiting.length; index++) {
      unlock(client, holder);
      const held = await waiting[index]!;
      await settle();
      expect(granted).toEqual(Array.from({ length: index + 1 }, (_, i) => i + 1));
      expect(queue('l/')[0]).toBe(text(held.key));
      holder = held.key;
    }
    expect(watchable.size).toBe(0);
  });

  it('answers a waiter with the header of the read that found no predecessor left', async () => {
    const { client, grant } = setup();
    const first = await lock(client, { name: b('l'), lease: grant(), signal: never });
    const waiting = lock(client, { name: b('l'), lease: grant(), signal: never });
    await settle();
    const unlocked = unlock(client, first.key);
    expect((await waiting).header.revision).toBe(unlocked.revision);
  });

  it('waits on the newest predecessor: an older one going first wakes nobody', async () => {
    const { client, grant, del } = setup();
    const [a, b1, c] = [grant(), grant(), grant()];
    await lock(client, { name: b('l'), lease: a, signal: never });
    void lock(client, { name: b('l'), lease: b1, signal: never });
    await settle();
    const waiting = lock(client, { name: b('l'), lease: c, signal: never });
    await settle();
    // c waits on b1. The holder a goes first: b1 gets the lock, c still waits.
    del(keyOf('l', a));
    await settle();
    expect(await isPending(waiting)).toBe(true);
    del(keyOf('l', b1));
    expect(text((await waiting).key)).toBe(keyOf('l', c));
  });

  it('wakes when the predecessor lease expires (virtual time)', async () => {
    const { client, grant, clock, queue } = setup();
    const short = grant(5);
    await lock(client, { name: b('l'), lease: short, signal: never });
    const waiting = lock(client, { name: b('l'), lease: grant(60), signal: never });
    await settle();
    await clock.advance(4_000);
    expect(await isPending(waiting)).toBe(true);
    await clock.advance(1_500);
    await waiting;
    expect(queue('l/')).toHaveLength(1);
  });

  it('as etcd 3.5 on (checksOwnKeyOnTurn), a waiter whose key vanished waits for its turn, then fails', async () => {
    const { client, grant, queue, clock, watchable } = setup();
    const holder = grant(60);
    const held = await lock(client, { name: b('l'), lease: holder, signal: never });
    const waiting = lock(client, {
      name: b('l'),
      lease: grant(5),
      signal: never,
      checksOwnKeyOnTurn: true,
    });
    waiting.catch(() => {});
    await settle();
    await clock.advance(5_500);
    await settle();
    expect(await isPending(waiting)).toBe(true);
    unlock(client, held.key);
    await expect(waiting).rejects.toEqual(new EtcdServerError('LOCK_SESSION_EXPIRED'));
    expect(queue('l/')).toEqual([]);
    expect(watchable.size).toBe(0);
  });

  it('as etcd 3.4 (checksOwnKeyOnTurn false), a waiter whose key vanished is answered with that key on its turn', async () => {
    const { client, grant, queue, clock, get } = setup();
    const holder = grant(60);
    const held = await lock(client, { name: b('l'), lease: holder, signal: never });
    const lease = grant(5);
    const waiting = lock(client, { name: b('l'), lease, signal: never, checksOwnKeyOnTurn: false });
    waiting.catch(() => {});
    await settle();
    await clock.advance(5_500);
    await settle();
    expect(await isPending(waiting)).toBe(true);
    unlock(client, held.key);
    const granted = await waiting;
    expect(text(granted.key)).toBe(keyOf('l', lease));
    expect(get(keyOf('l', lease))).toBeUndefined();
    expect(queue('l/')).toEqual([]);
  });

  it('an aborted wait rejects with the reason and deletes the key it queued', async () => {
    const { client, grant, queue, watchable } = setup();
    const holder = grant();
    await lock(client, { name: b('l'), lease: holder, signal: never });
    const controller = new AbortController();
    const waiting = lock(client, { name: b('l'), lease: grant(), signal: controller.signal });
    waiting.catch(() => {});
    await settle();
    const reason = new Error('client went away');
    controller.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(queue('l/')).toEqual([keyOf('l', holder)]);
    expect(watchable.size).toBe(0);
  });

  it('a dropped wait (server stop or restart) rejects and leaves its key to its lease', async () => {
    const { client, grant, queue } = setup();
    const [holder, waiter] = [grant(), grant()];
    await lock(client, { name: b('l'), lease: holder, signal: never });
    const waiting = lock(client, { name: b('l'), lease: waiter, signal: never });
    waiting.catch(() => {});
    await settle();
    client.dropWaits();
    await expect(waiting).rejects.toThrow('etcdserver: server stopped');
    expect(queue('l/')).toEqual([keyOf('l', holder), keyOf('l', waiter)]);
    // Later waits are not affected by the earlier drop.
    const later = lock(client, { name: b('m'), lease: waiter, signal: never });
    expect(text((await later).key)).toBe(keyOf('m', waiter));
  });

  it('the cleanup delete spares a newer incarnation of the key', () => {
    const { client, grant, get, del } = setup();
    const lease = grant();
    const key = b(keyOf('l', lease));
    const first = client.txn({ success: [{ requestPut: { key, lease } }] }).header?.revision ?? 0n;
    del(keyOf('l', lease));
    client.txn({ success: [{ requestPut: { key, lease } }] });
    deleteIfCreatedAt(client, key, first);
    expect(get(keyOf('l', lease))).toBeDefined();
  });

  it('locking again with the same lease reuses the key and returns at once when it holds', async () => {
    const { client, grant, store } = setup();
    const lease = grant();
    const first = await lock(client, { name: b('l'), lease, signal: never });
    const revision = store.revision;
    const again = await lock(client, { name: b('l'), lease, signal: never });
    expect(again.key).toEqual(first.key);
    expect(store.revision).toBe(revision);
  });

  it('lease 0 gets a fresh 60 s lease, whose expiry releases the lock', async () => {
    const { client, clock, queue, leases } = setup();
    const held = await lock(client, { name: b('l'), lease: 0n, signal: never });
    const leaseId = BigInt(`0x${text(held.key).slice(2)}`);
    expect(leases.timeToLive({ ID: leaseId }).grantedTTL).toBe(60n);
    await clock.advance(60_500);
    expect(queue('l/')).toEqual([]);
  });

  it('an unknown lease fails the txn with LEASE_NOT_FOUND and queues nothing', async () => {
    const { client, queue } = setup();
    await expect(lock(client, { name: b('l'), lease: 42n, signal: never })).rejects.toEqual(
      new EtcdServerError('LEASE_NOT_FOUND'),
    );
    expect(queue('l/')).toEqual([]);
  });

  it('keeps waiting across a compaction (its watches start at the next revision)', async () => {
    const { client, grant, compact } = setup();
    const first = await lock(client, { name: b('l'), lease: grant(), signal: never });
    const waiting = lock(client, { name: b('l'), lease: grant(), signal: never });
    await settle();
    compact();
    unlock(client, first.key);
    await waiting;
  });
});
