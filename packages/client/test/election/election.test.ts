// The server-side Election service (etcd.election) against every backend: campaign, leader,
// proclaim, resign, observe, waiting candidates, lease revoke, cancellation and errors.
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { toText } from '../../src/bytes.js';
import type { CampaignResult } from '../../src/election/election.js';
import {
  AbortedError,
  ElectionNoLeaderError,
  ElectionNotLeaderError,
  InvalidArgumentError,
  OutcomeUnknownError,
} from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import type { KeyValue } from '../../src/key-value.js';
import type { Lease } from '../../src/lease/lease.js';
import { expectServerError, rejection } from '../kv/kv-support.js';
import { eventually, keysInLine, settlement, sleep } from './lock-election-support.js';

describeEachBackend('ElectionClient (server-side Election service)', ({ backend, prefix }) => {
  let etcd: Etcd;
  const leases: Lease[] = [];
  const election = () => `${prefix()}election`;

  async function lease(ttl = 30): Promise<Lease> {
    const granted = await etcd.lease.grant(ttl);
    leases.push(granted);
    return granted;
  }

  /** The candidates' keys in create-revision order, relative to the election's name. */
  const candidates = (): Promise<string[]> => keysInLine(etcd, election());

  async function revision(): Promise<bigint> {
    return (await etcd.range({ key: election(), countOnly: true })).header.revision;
  }

  /** Observes `election()` in the background; `values` fills as observations arrive. */
  function observing(): { values: string[]; kvs: KeyValue[]; stop: () => Promise<void> } {
    const controller = new AbortController();
    const values: string[] = [];
    const kvs: KeyValue[] = [];
    const done = (async () => {
      try {
        for await (const kv of etcd.election.observe(election(), { signal: controller.signal })) {
          values.push(kv.text());
          kvs.push(kv);
        }
      } catch (error) {
        if (!(error instanceof AbortedError)) throw error;
      }
    })();
    return {
      values,
      kvs,
      stop: async () => {
        controller.abort();
        await done;
      },
    };
  }

  const hex = (held: Lease) => held.id.toString(16);

  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterEach(async () => {
    for (const held of leases.splice(0)) await held.revoke().catch(() => {});
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('a campaign without rivals is elected at once: key name/<lease hex>, rev = its create revision', async () => {
    const candidate = await lease();
    const leader = await etcd.election.campaign(election(), 'node-1', { lease: candidate });
    expect(toText(leader.name)).toBe(election());
    expect(toText(leader.key)).toBe(`${election()}/${hex(candidate)}`);
    expect(leader.lease).toBe(candidate.id);
    expect(leader.rev).toBe(leader.header.revision);
    const current = await etcd.election.leader(election());
    expect(current.text()).toBe('node-1');
    expect(current.key).toEqual(leader.key);
    expect(current.createRevision).toBe(leader.rev);
    expect(current.lease).toBe(candidate.id);
  });

  it('Leader with no candidate fails with ElectionNoLeaderError', async () => {
    expectServerError(await rejection(etcd.election.leader(election())), ElectionNoLeaderError);
  });

  it('proclaim changes the value and keeps the leadership; a stale leader key writes nothing', async () => {
    const candidate = await lease();
    const leader = await etcd.election.campaign(election(), 'v1', { lease: candidate });
    const proclaimed = await etcd.election.proclaim(leader, 'v2');
    const current = await etcd.election.leader(election());
    expect(current.text()).toBe('v2');
    expect(current.modRevision).toBe(proclaimed.header.revision);
    expect(current.createRevision).toBe(leader.rev);

    const before = await revision();
    const stale = { ...leader, rev: leader.rev - 1n };
    expectServerError(await rejection(etcd.election.proclaim(stale, 'v3')), ElectionNotLeaderError);
    expect(await revision()).toBe(before);
    expect((await etcd.election.leader(election())).text()).toBe('v2');
  });

  it('a second candidate waits, queued, and is elected once the leader resigns', async () => {
    const [first, second] = [await lease(), await lease()];
    const leader = await etcd.election.campaign(election(), 'one', { lease: first });
    const waiting = etcd.election.campaign(election(), 'two', { lease: second });
    await eventually(async () => (await candidates()).length === 2);
    await sleep(200);
    expect(await settlement(waiting)).toBe('pending');
    expect((await etcd.election.leader(election())).text()).toBe('one');

    await etcd.election.resign(leader);
    const next = await waiting;
    expect(toText(next.key)).toBe(`${election()}/${hex(second)}`);
    // The header is the campaign's first write, when it queued, not the moment it won.
    expect(next.header.revision).toBe(next.rev);
    expect(next.rev).toBeGreaterThan(leader.rev);
    expect((await etcd.election.leader(election())).text()).toBe('two');
  });

  it('a second candidate is elected when the leader lease is revoked', async () => {
    const [first, second] = [await lease(), await lease()];
    await etcd.election.campaign(election(), 'one', { lease: first });
    const waiting = etcd.election.campaign(election(), 'two', { lease: second });
    await eventually(async () => (await candidates()).length === 2);
    await first.revoke();
    expect(toText((await waiting).key)).toBe(`${election()}/${hex(second)}`);
    expect(await candidates()).toEqual([hex(second)]);
  });

  it('resign is guarded by the create revision and idempotent; a stale one deletes nothing', async () => {
    const candidate = await lease();
    const leader = await etcd.election.campaign(election(), 'one', { lease: candidate });
    const stale = { ...leader, rev: leader.rev - 1n };
    const before = await revision();
    expect((await etcd.election.resign(stale)).header.revision).toBe(before);
    expect(await candidates()).toEqual([hex(candidate)]);

    const resigned = await etcd.election.resign(leader);
    expect(resigned.header.revision).toBe(before + 1n);
    expect(await candidates()).toEqual([]);
    expect((await etcd.election.resign(leader)).header.revision).toBe(before + 1n);
  });

  it('campaigning again with the same lease keeps key and rev and proclaims a changed value', async () => {
    const candidate = await lease();
    const first = await etcd.election.campaign(election(), 'one', { lease: candidate });
    const again = await etcd.election.campaign(election(), 'uno', { lease: candidate });
    expect(again.key).toEqual(first.key);
    expect(again.rev).toBe(first.rev);
    const current = await etcd.election.leader(election());
    expect(current.text()).toBe('uno');
    expect(current.version).toBe(2n);
  });

  it('aborting a waiting campaign fails it with OutcomeUnknownError (the abort as cause) and withdraws its key', async () => {
    const [first, second] = [await lease(), await lease()];
    await etcd.election.campaign(election(), 'one', { lease: first });
    const controller = new AbortController();
    const waiting = etcd.election.campaign(election(), 'two', {
      lease: second,
      signal: controller.signal,
    });
    await eventually(async () => (await candidates()).length === 2);
    controller.abort();
    const error = await rejection(waiting);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((error as OutcomeUnknownError).cause).toBeInstanceOf(AbortedError);
    await eventually(async () => (await candidates()).length === 1);
    expect(await candidates()).toEqual([hex(first)]);
  });

  it('observe reports the leader, its proclaimed values, then the next leader', async () => {
    const [first, second] = [await lease(), await lease()];
    const leader = await etcd.election.campaign(election(), 'one', { lease: first });
    const observer = observing();
    try {
      await eventually(() => observer.values.length === 1);
      await etcd.election.proclaim(leader, 'one-b');
      await eventually(() => observer.values.length === 2);
      const waiting = etcd.election.campaign(election(), 'two', { lease: second });
      await eventually(async () => (await candidates()).length === 2);
      // A waiting candidate is not reported: only the leader's key is followed.
      await sleep(200);
      expect(observer.values).toEqual(['one', 'one-b']);
      await etcd.election.resign(leader);
      const next = await waiting;
      await eventually(() => observer.values.length === 3);
      expect(observer.values).toEqual(['one', 'one-b', 'two']);
      expect(observer.kvs.map((kv) => kv.createRevision)).toEqual([
        leader.rev,
        leader.rev,
        next.rev,
      ]);
    } finally {
      await observer.stop();
    }
  });

  it('observe of an election without candidates waits for the first one', async () => {
    const observer = observing();
    try {
      await sleep(200);
      expect(observer.values).toEqual([]);
      const leader = await etcd.election.campaign(election(), 'first', { lease: await lease() });
      await eventually(() => observer.values.length === 1);
      expect(observer.kvs[0]?.createRevision).toBe(leader.rev);
    } finally {
      await observer.stop();
    }
  });

  it('without a lease, the server grants a 60 s lease that the candidate key is attached to', async () => {
    const leader: CampaignResult = await etcd.election.campaign(election(), 'x');
    expect(leader.lease).not.toBe(0n);
    expect((await etcd.lease.timeToLive(leader.lease)).grantedTtl).toBe(60n);
    await etcd.lease.revoke(leader.lease);
    expect(await candidates()).toEqual([]);
  });

  it('rejects a leader key without its fields before sending', async () => {
    const bad = { name: election(), key: 'k', rev: 1, lease: 1n } as unknown as CampaignResult;
    expect(await rejection(etcd.election.proclaim(bad, 'v'))).toBeInstanceOf(InvalidArgumentError);
  });

  it('a waiting candidate whose key vanishes is elected on its turn with a key that no longer exists, as etcd 3.4 to 3.6 answer', async () => {
    const [first, second] = [await lease(), await lease()];
    const leader = await etcd.election.campaign(election(), 'one', { lease: first });
    const waiting = etcd.election.campaign(election(), 'two', { lease: second });
    waiting.catch(() => {});
    await eventually(async () => (await candidates()).length === 2);
    await second.revoke();
    // Go's Campaign waits on, then reports leadership without reading its key again.
    await sleep(300);
    expect(await settlement(waiting)).toBe('pending');
    await etcd.election.resign(leader);
    const elected = await waiting;
    expect(toText(elected.key)).toBe(`${election()}/${hex(second)}`);
    expect(await etcd.get(elected.key)).toBeUndefined();
  });
});
