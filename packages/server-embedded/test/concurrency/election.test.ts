// The election behind the Election service, run on the server's LocalClient with a virtual clock:
// Campaign, Proclaim, Resign, Leader, and Observe with a slow consumer, compaction and abort.
import { describe, expect, it } from 'vitest';
import {
  campaign,
  type LeaderKey,
  leader,
  proclaim,
  resign,
  resumed,
} from '../../src/concurrency/election.js';
import { type Observation, observe } from '../../src/concurrency/observe.js';
import { EtcdServerError } from '../../src/errors.js';
import { b, text } from '../support/bytes.js';
import { isPending, keyOf, settle, setup } from './concurrency-setup.js';

const never = new AbortController().signal;

describe('server election (v3election)', () => {
  it('elects a lone candidate at once; Leader reports its key and value', async () => {
    const { client, grant } = setup();
    const lease = grant();
    const elected = await campaign(client, { name: b('e'), lease, value: b('one'), signal: never });
    expect(text(elected.leader.key)).toBe(keyOf('e', lease));
    expect(elected.leader).toMatchObject({ rev: elected.header.revision, lease });
    expect(text(elected.leader.name)).toBe('e');
    const current = leader(client, b('e'));
    expect(text(current.kv.value)).toBe('one');
    expect(current.kv.createRevision).toBe(elected.leader.rev);
  });

  it('Leader without candidates fails with "election: no leader"', () => {
    const { client } = setup();
    expect(() => leader(client, b('e'))).toThrow(new EtcdServerError('ELECTION_NO_LEADER'));
  });

  it('a waiting candidate is elected when the leader resigns; its header is its first txn', async () => {
    const { client, grant } = setup();
    const first = await campaign(client, {
      name: b('e'),
      lease: grant(),
      value: b('1'),
      signal: never,
    });
    const waiting = campaign(client, {
      name: b('e'),
      lease: grant(),
      value: b('2'),
      signal: never,
    });
    await settle();
    expect(await isPending(waiting)).toBe(true);
    const resigned = resign(client, first.leader);
    const second = await waiting;
    expect(second.header.revision).toBe(second.leader.rev);
    expect(second.header.revision).toBeLessThan(resigned.revision ?? 0n);
    expect(text(leader(client, b('e')).kv.value)).toBe('2');
  });

  it('campaigning again with the same lease keeps the key and proclaims a new value', async () => {
    const { client, grant } = setup();
    const lease = grant();
    const first = await campaign(client, { name: b('e'), lease, value: b('a'), signal: never });
    const again = await campaign(client, { name: b('e'), lease, value: b('b'), signal: never });
    expect(again.leader).toEqual(first.leader);
    expect(leader(client, b('e')).kv).toMatchObject({ value: b('b'), version: 2n });
  });

  it('Proclaim by a stale leader key fails with "election: not leader" and writes nothing', async () => {
    const { client, grant, store } = setup();
    const elected = await campaign(client, {
      name: b('e'),
      lease: grant(),
      value: b('a'),
      signal: never,
    });
    const stale: LeaderKey = { ...elected.leader, rev: elected.leader.rev + 1n };
    const revision = store.revision;
    expect(() => proclaim(client, stale, b('x'))).toThrow(
      new EtcdServerError('ELECTION_NOT_LEADER'),
    );
    expect(store.revision).toBe(revision);
    expect(proclaim(client, elected.leader, b('y')).revision).toBe(BigInt(revision + 1));
  });

  it('Resign is guarded by the create revision: a stale one deletes nothing, a second one is a no-op', async () => {
    const { client, grant, queue, store } = setup();
    const elected = await campaign(client, {
      name: b('e'),
      lease: grant(),
      value: b('a'),
      signal: never,
    });
    resign(client, { ...elected.leader, rev: 1n });
    expect(queue('e/')).toHaveLength(1);
    resign(client, elected.leader);
    const revision = store.revision;
    resign(client, elected.leader);
    expect(store.revision).toBe(revision);
    expect(queue('e/')).toEqual([]);
  });

  it('Proclaim and Resign with lease 0 act under a fresh 60 s lease, as etcd does', async () => {
    const { client, grant, get } = setup();
    const elected = await campaign(client, {
      name: b('e'),
      lease: grant(),
      value: b('a'),
      signal: never,
    });
    const moved = resumed(client, { ...elected.leader, lease: 0n });
    expect(moved.lease).not.toBe(elected.leader.lease);
    proclaim(client, moved, b('b'));
    expect(get(text(elected.leader.key))?.lease).toBe(moved.lease);
  });

  it("a candidate whose key vanished while waiting is elected on its turn with that key, as Go's Campaign answers", async () => {
    const { client, grant, clock, queue, get, watchable } = setup();
    const holder = grant(60);
    const first = await campaign(client, {
      name: b('e'),
      lease: holder,
      value: b('1'),
      signal: never,
    });
    const lease = grant(5);
    const waiting = campaign(client, { name: b('e'), lease, value: b('2'), signal: never });
    waiting.catch(() => {});
    await settle();
    const rev = get(keyOf('e', lease))?.createRevision;
    await clock.advance(5_500);
    await settle();
    expect(get(keyOf('e', lease))).toBeUndefined();
    expect(await isPending(waiting)).toBe(true);
    resign(client, first.leader);
    const elected = await waiting;
    expect(text(elected.leader.key)).toBe(keyOf('e', lease));
    expect(elected.leader).toMatchObject({ rev, lease });
    expect(elected.header.revision).toBe(rev);
    expect(queue('e/')).toEqual([]);
    expect(watchable.size).toBe(0);
  });

  it('an aborted campaign withdraws its key; a dropped one (server stop) leaves it', async () => {
    const { client, grant, queue } = setup();
    const [holder, aborted, dropped] = [grant(), grant(), grant()];
    await campaign(client, { name: b('e'), lease: holder, value: b('1'), signal: never });
    const controller = new AbortController();
    const first = campaign(client, {
      name: b('e'),
      lease: aborted,
      value: b('2'),
      signal: controller.signal,
    });
    first.catch(() => {});
    await settle();
    controller.abort(new Error('gone'));
    await expect(first).rejects.toThrow('gone');
    expect(queue('e/')).toEqual([keyOf('e', holder)]);

    const second = campaign(client, { name: b('e'), lease: dropped, value: b('3'), signal: never });
    second.catch(() => {});
    await settle();
    client.dropWaits();
    await expect(second).rejects.toThrow('server stopped');
    expect(queue('e/')).toEqual([keyOf('e', holder), keyOf('e', dropped)]);
  });
});

/** Collects what `observe` yields, in the background, until stopped. */
function observing(client: ReturnType<typeof setup>['client'], name: string) {
  const controller = new AbortController();
  const seen: Observation[] = [];
  const iterator = observe(client, b(name), controller.signal);
  const done = (async () => {
    try {
      for await (const observation of iterator) seen.push(observation);
    } catch (error) {
      if (error !== controller.signal.reason) throw error;
    }
  })();
  const values = () => seen.map((observation) => text(observation.kv.value));
  return { seen, values, done, stop: () => controller.abort(new Error('stop')) };
}

describe('server election Observe', () => {
  it('reports the leader, its proclaims, then the next leader in create-revision order', async () => {
    const { client, grant, store, watchable } = setup();
    const first = await campaign(client, {
      name: b('e'),
      lease: grant(),
      value: b('1'),
      signal: never,
    });
    const observer = observing(client, 'e');
    await settle();
    expect(observer.seen).toEqual([
      { kv: expect.objectContaining({ value: b('1') }), revision: BigInt(store.revision) },
    ]);
    const proclaimed = proclaim(client, first.leader, b('1b'));
    // A waiting candidate, and another name's keys, are not reported.
    const waiting = campaign(client, {
      name: b('e'),
      lease: grant(),
      value: b('2'),
      signal: never,
    });
    await campaign(client, { name: b('other'), lease: grant(), value: b('x'), signal: never });
    await settle();
    expect(observer.values()).toEqual(['1', '1b']);
    expect(observer.seen[1]?.revision).toBe(proclaimed.revision);
    resign(client, first.leader);
    await waiting;
    await settle();
    expect(observer.values()).toEqual(['1', '1b', '2']);
    observer.stop();
    await observer.done;
    expect(watchable.size).toBe(0);
  });

  it('with no candidate, waits for the first put under the name; its header is the put', async () => {
    const { client, grant } = setup();
    const observer = observing(client, 'e');
    await settle();
    expect(observer.seen).toEqual([]);
    const elected = await campaign(client, {
      name: b('e'),
      lease: grant(),
      value: b('1'),
      signal: never,
    });
    await settle();
    expect(observer.seen).toEqual([
      { kv: expect.objectContaining({ value: b('1') }), revision: elected.leader.rev },
    ]);
    observer.stop();
    await observer.done;
  });

  it('a consumer that does not read loses nothing: the parked watch catches up from history', async () => {
    const { client, grant } = setup();
    const first = await campaign(client, {
      name: b('e'),
      lease: grant(),
      value: b('0'),
      signal: never,
    });
    const controller = new AbortController();
    const iterator = observe(client, b('e'), controller.signal);
    expect(text((await iterator.next()).value?.kv.value)).toBe('0');
    const values = Array.from({ length: 200 }, (_, i) => `${i + 1}`);
    for (const value of values) proclaim(client, first.leader, b(value));
    const read: string[] = [];
    while (read.length < values.length) {
      read.push(text((await iterator.next()).value?.kv.value));
    }
    expect(read).toEqual(values);
    controller.abort(new Error('stop'));
    await expect(iterator.next()).rejects.toThrow('stop');
  });

  it('ends quietly when history it still needs is compacted while it is parked', async () => {
    const { client, grant, compact } = setup();
    const first = await campaign(client, {
      name: b('e'),
      lease: grant(),
      value: b('0'),
      signal: never,
    });
    const iterator = observe(client, b('e'), never);
    await iterator.next();
    for (let i = 0; i < 100; i++) proclaim(client, first.leader, b(`${i}`));
    compact();
    let ended = false;
    for (let i = 0; i < 101 && !ended; i++) ended = (await iterator.next()).done === true;
    expect(ended).toBe(true);
  });
});
