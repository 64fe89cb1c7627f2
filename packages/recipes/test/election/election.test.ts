// Election: Go's key layout, one leader at a time in create-revision order, guarded proclaim and
// resign, own-key check after the wait, cleanup of an abandoned campaign, failover time, observe.
import { AbortedError, Etcd, type KeyValue, type WatchRequest } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Election, type Leadership } from '../../src/election/election.js';
import {
  ElectionNoLeaderError,
  ElectionNotLeaderError,
  LeadershipLostError,
  LockLostError,
  SessionExpiredError,
} from '../../src/errors.js';
import { Session } from '../../src/session/session.js';
import {
  eventually,
  Fixture,
  rejection,
  stillPending,
  withHookAfterCommit,
} from '../recipes-support.js';

describeEachBackend('Election', ({ backend, prefix }) => {
  const fixture = new Fixture(() => backend().endpoints);
  let admin: Etcd;
  beforeAll(() => {
    admin = new Etcd({ endpoints: backend().endpoints });
  });
  afterEach(() => fixture.close());
  afterAll(() => admin?.close());

  const candidates = async (name: string) =>
    (await admin.range({ prefix: `${name}/`, sort: { target: 'create', order: 'ascend' } })).kvs;

  /** Starts a campaign and resolves once its key is in the queue. */
  async function enter(election: Election, value: string, signal?: AbortSignal) {
    const won = election.campaign(value, { signal });
    won.catch(() => {});
    await eventually(async () => (await admin.get(election.key)) !== undefined);
    return { won };
  }

  describe('campaign', () => {
    it("uses Go's key name/<lease hex> holding the value; epoch = its create revision", async () => {
      const name = `${prefix()}election`;
      const session = await fixture.session();
      const election = new Election(session, name);
      const leadership = await election.campaign('node-a');
      expect(leadership.key).toBe(`${name}/${session.leaseId.toString(16)}`);
      const kv = await admin.get(leadership.key);
      expect(kv?.text()).toBe('node-a');
      expect(kv?.lease).toBe(session.leaseId);
      expect(leadership.epoch).toBe(kv?.createRevision);
      expect(leadership.fencingToken).toBe(leadership.epoch);
      expect(election.leadership).toBe(leadership);
      expect((await election.leader()).text()).toBe('node-a');
    });

    it('one leader at a time, in create-revision order, with increasing epochs', async () => {
      const name = `${prefix()}election`;
      const elections = await Promise.all(
        ['a', 'b', 'c'].map(async () => new Election(await fixture.session(), name)),
      );
      const first = await elections[0]!.campaign('a');
      const second = (await enter(elections[1]!, 'b')).won;
      const third = (await enter(elections[2]!, 'c')).won;
      expect(await stillPending(second, 100)).toBe(true);
      expect(await stillPending(third, 10)).toBe(true);
      expect((await elections[2]!.leader()).text()).toBe('a');
      await first.resign();
      const b = await second;
      expect((await elections[0]!.leader()).text()).toBe('b');
      expect(await stillPending(third, 100)).toBe(true);
      await b.resign();
      const c = await third;
      expect([first.epoch < b.epoch, b.epoch < c.epoch]).toEqual([true, true]);
      expect((await candidates(name)).map((kv) => kv.text())).toEqual(['c']);
      await c.resign();
      expect(await rejection(elections[0]!.leader())).toBeInstanceOf(ElectionNoLeaderError);
    });

    it('campaigning again with another value proclaims it (same key, same epoch)', async () => {
      const name = `${prefix()}election`;
      const session = await fixture.session();
      const first = await new Election(session, name).campaign('v1');
      const second = await new Election(session, name).campaign('v2');
      expect(second.key).toBe(first.key);
      expect(second.epoch).toBe(first.epoch);
      const kv = await admin.get(first.key);
      expect(kv?.text()).toBe('v2');
      expect(kv?.version).toBe(2n);
    });

    it('a cancelled campaign removes its key', async () => {
      const name = `${prefix()}election`;
      const leader = await new Election(await fixture.session(), name).campaign('leader');
      const controller = new AbortController();
      const waiting = (
        await enter(new Election(await fixture.session(), name), 'w', controller.signal)
      ).won;
      controller.abort();
      expect(await rejection(waiting)).toBeInstanceOf(AbortedError);
      expect((await candidates(name)).map((kv) => kv.keyText())).toEqual([leader.key]);
    });

    it('a candidate whose key vanished while waiting never reports leadership (etcd issue 11051)', async () => {
      const name = `${prefix()}election`;
      const leader = await new Election(await fixture.session(), name).campaign('leader');
      const session = await fixture.session();
      const candidate = new Election(session, name);
      const waiting = (await enter(candidate, 'w')).won;
      await admin.lease.revoke(session.leaseId);
      await leader.resign();
      expect(await rejection(waiting)).toBeInstanceOf(SessionExpiredError);
      expect(candidate.leadership).toBeUndefined();
      expect(await candidates(name)).toEqual([]);
    });

    it("the next candidate wins once the leader's abandoned lease expires", async () => {
      const name = `${prefix()}election`;
      const leaderSession = await fixture.session({ ttl: 1 });
      const old = await new Election(leaderSession, name).campaign('old');
      const next = (await enter(new Election(await fixture.session(), name), 'new')).won;
      leaderSession.orphan();
      const won = await next;
      // Won because the expiry deleted the old leader's key: nothing else ends a lease nobody
      // revokes. A missed wakeup would hang until the test's timeout (the candidate's lease has
      // 60 s), so no clock is needed to tell the two apart.
      expect(await admin.get(old.key)).toBeUndefined();
      expect((await admin.lease.timeToLive(leaderSession.leaseId)).ttl).toBe(-1n);
      expect((await admin.get(won.key))?.text()).toBe('new');
    });
  });

  describe('the wait behind the leader', () => {
    it("a watch reported created below its start while the store moved meanwhile does not wait for etcd's catch-up loop", async () => {
      // (A Mutex's session watches such a line from now, through its kept watch: mutex.test.ts.)
      const name = `${prefix()}election`;
      const leader = await new Election(await fixture.session(), name).campaign('a');
      // etcd 3.4 reads the revision a created answer reports before it registers the watch: a
      // commit in between leaves the watch in its 100 ms catch-up loop while the answer says it
      // was created below its start. Played here: the holder's key is deleted right after the
      // campaign's txn, and the answer is made to report the txn's revision.
      let txnRevision = 0n;
      let commits = 0;
      const racy = withHookAfterCommit(fixture.client(), async (commit) => {
        commits = commit;
        if (commit === 1) await admin.delete(leader.key);
      });
      const lying = new Proxy(racy, {
        get(target, property) {
          if (property !== 'watch') {
            const value: unknown = Reflect.get(target, property, target);
            return typeof value === 'function' ? value.bind(target) : value;
          }
          return (request: WatchRequest) => {
            const watcher = target.watch(request);
            const from = request.startRevision ?? 0n;
            if (from === 0n) return watcher;
            txnRevision = from - 1n;
            return new Proxy(watcher, {
              get(w, p) {
                if (p === 'ready') return () => w.ready().then(() => txnRevision);
                // etcd's catch-up loop, made late for sure: this watch's events wait for the
                // queue's read (the second txn), or 2 s without one.
                if (p === 'on') {
                  return (event: string, listener: (batch: unknown) => void) => {
                    if (event !== 'batch') return Reflect.apply(w.on, w, [event, listener]);
                    const held: unknown[] = [];
                    let poll: NodeJS.Timeout | undefined;
                    const since = Date.now();
                    const late = (batch: unknown) => {
                      held.push(batch);
                      poll ??= setInterval(() => {
                        if (commits < 2 && Date.now() - since < 2_000) return;
                        clearInterval(poll);
                        for (const each of held.splice(0)) listener(each);
                        poll = undefined;
                      }, 5);
                    };
                    return Reflect.apply(w.on, w, [event, late]);
                  };
                }
                const value: unknown = Reflect.get(w, p, w);
                return typeof value === 'function' ? value.bind(w) : value;
              },
            });
          };
        },
      });
      const waiter = await Session.create(lying, {});
      try {
        const next = await new Election(waiter, name).campaign('b', {
          signal: AbortSignal.timeout(5_000),
        });
        expect(next.header.revision).toBeGreaterThan(txnRevision);
        // The watch from now, created right after it, shows the store past the reported revision:
        // a read of the queue (the second txn) tells, not the late catch-up.
        expect(commits).toBe(2);
        await next.resign();
      } finally {
        await waiter.close();
      }
    });
  });

  describe('proclaim and resign', () => {
    it('the leader proclaims new values on its key', async () => {
      const name = `${prefix()}election`;
      const election = new Election(await fixture.session(), name);
      const leadership = await election.campaign('v1');
      const header = await election.proclaim('v2');
      expect((await admin.get(leadership.key))?.modRevision).toBe(header.revision);
      await leadership.proclaim('v3');
      expect(leadership.value).toBe('v3');
      expect((await election.leader()).text()).toBe('v3');
    });

    it('proclaim by a non-leader writes nothing and clears the leadership', async () => {
      const name = `${prefix()}election`;
      const leader = await new Election(await fixture.session(), name).campaign('leader');
      const none = new Election(await fixture.session(), name);
      const waiting = (await enter(none, 'w')).won;
      const start = (await admin.range({ key: 'any' })).header.revision;
      expect(await rejection(none.proclaim('x'))).toBeInstanceOf(ElectionNotLeaderError);
      expect((await admin.range({ key: 'any' })).header.revision).toBe(start);
      expect((await admin.get(none.key))?.text()).toBe('w');
      await leader.resign();
      await (await waiting).resign();

      const election = new Election(await fixture.session(), name);
      const leadership = await election.campaign('v1');
      await admin.delete(leadership.key);
      const revision = (await admin.range({ key: 'any' })).header.revision;
      const error = await rejection(leadership.proclaim('v2'));
      expect(error).toBeInstanceOf(ElectionNotLeaderError);
      expect((await admin.range({ key: 'any' })).header.revision).toBe(revision);
      expect(await admin.get(leadership.key)).toBeUndefined();
      expect(election.leadership).toBeUndefined();
      expect(leadership.signal.aborted).toBe(true);
      expect(await rejection(election.proclaim('v3'))).toBeInstanceOf(ElectionNotLeaderError);
    });

    it('resign is guarded (never deletes a newer key) and idempotent', async () => {
      const name = `${prefix()}election`;
      const session = await fixture.session();
      const election = new Election(session, name);
      const old = await election.campaign('v1');
      await admin.delete(old.key);
      const renewed = await new Election(session, name).campaign('v2');
      await old.resign();
      await old.resign();
      expect((await admin.get(renewed.key))?.createRevision).toBe(renewed.epoch);
      await renewed.resign();
      expect(await admin.get(renewed.key)).toBeUndefined();
      await renewed.resign();
      await election.resign();
      expect(renewed.signal.aborted).toBe(true);
    });

    it('the leadership signal fires when the leader key goes', async () => {
      const name = `${prefix()}election`;
      const leadership = await new Election(await fixture.session(), name).campaign('v');
      await admin.delete(leadership.key);
      await eventually(() => leadership.signal.aborted);
      expect(leadership.signal.reason).toBeInstanceOf(LeadershipLostError);
      expect(leadership.signal.reason).toMatchObject({
        code: 'LEADERSHIP_LOST',
        key: leadership.key,
        epoch: leadership.epoch,
      });
    });

    it("a leadership won on a resign keeps the watch that waited: its key's delete fires the signal, a resign is no loss", async () => {
      const name = `${prefix()}election`;
      const [a, b] = [
        new Election(await fixture.session(), name),
        new Election(await fixture.session(), name),
      ];
      let leader = await a.campaign('a');
      for (const next of [b, a, b]) {
        const { won } = await enter(next, 'x');
        await leader.resign();
        expect(leader.signal.aborted).toBe(true);
        expect(leader.signal.reason).not.toBeInstanceOf(LeadershipLostError);
        expect(leader.signal.reason).not.toBeInstanceOf(LockLostError);
        leader = await won;
        expect(leader.key).toBe(next.key);
        expect(leader.signal.aborted).toBe(false);
      }
      const deleted = await admin.delete(leader.key);
      await eventually(() => leader.signal.aborted);
      expect(leader.signal.reason).toBeInstanceOf(LeadershipLostError);
      expect((leader.signal.reason as LeadershipLostError).message).toContain(
        `deleted at revision ${deleted.header.revision}`,
      );
    });

    it('await using resigns', async () => {
      const name = `${prefix()}election`;
      const election = new Election(await fixture.session(), name);
      {
        await using leadership: Leadership = await election.campaign('v');
        expect(leadership.signal.aborted).toBe(false);
      }
      expect(await candidates(name)).toEqual([]);
    });
  });

  describe('observe', () => {
    it('yields leaders in create-revision order and every proclaimed value, never a deleted key', async () => {
      const name = `${prefix()}election`;
      const observer = new Election(await fixture.session(), name);
      const controller = new AbortController();
      const seen: KeyValue[] = [];
      const observing = (async () => {
        for await (const leader of observer.observe({ signal: controller.signal })) {
          seen.push(leader);
        }
      })();
      const a = new Election(await fixture.session(), name);
      const b = new Election(await fixture.session(), name);
      const leaderA = await a.campaign('a1');
      await eventually(() => seen.length === 1);
      const wonB = (await enter(b, 'b1')).won;
      await leaderA.proclaim('a2');
      await eventually(() => seen.length === 2);
      await leaderA.resign();
      const leaderB = await wonB;
      await eventually(() => seen.length === 3);
      await leaderB.proclaim('b2');
      await eventually(() => seen.length === 4);
      controller.abort();
      // Ended by its signal as a watch is: with the client's AbortedError.
      expect(await rejection(observing)).toBeInstanceOf(AbortedError);
      expect(seen.map((kv) => kv.text())).toEqual(['a1', 'a2', 'b1', 'b2']);
      expect(seen.map((kv) => kv.keyText())).toEqual([
        leaderA.key,
        leaderA.key,
        leaderB.key,
        leaderB.key,
      ]);
      const epochs = seen.map((kv) => kv.createRevision);
      expect(epochs).toEqual([leaderA.epoch, leaderA.epoch, leaderB.epoch, leaderB.epoch]);
      expect(seen.every((kv) => kv.version > 0n)).toBe(true);
    });

    it('starts with the current leader, and breaking out of the loop stops it', async () => {
      const name = `${prefix()}election`;
      const leadership = await new Election(await fixture.session(), name).campaign('now');
      const observer = new Election(await fixture.session(), name);
      for await (const leader of observer.observe()) {
        expect(leader.keyText()).toBe(leadership.key);
        expect(leader.text()).toBe('now');
        break;
      }
    });

    it('ends on abort as etcd.election.observe() does: with AbortedError, waiting or not', async () => {
      const name = `${prefix()}election`;
      const observer = new Election(await fixture.session(), name);
      const client = fixture.client();
      // Two ways to follow one election, each aborted while it waits for a leader, then once
      // following one.
      const ways = [
        (signal: AbortSignal) => observer.observe({ signal }),
        (signal: AbortSignal) => client.election.observe(name, { signal }),
      ];
      for (const observe of ways) {
        const waiting = new AbortController();
        const idle = (async () => {
          for await (const _ of observe(waiting.signal));
        })();
        setTimeout(() => waiting.abort(), 50);
        expect(await rejection(idle)).toBeInstanceOf(AbortedError);
      }
      await new Election(await fixture.session(), name).campaign('a');
      for (const observe of ways) {
        const following = new AbortController();
        const seen: string[] = [];
        const busy = (async () => {
          for await (const leader of observe(following.signal)) {
            seen.push(leader.text());
            following.abort();
          }
        })();
        expect(await rejection(busy)).toBeInstanceOf(AbortedError);
        expect(seen).toEqual(['a']);
      }
      const already = AbortSignal.abort();
      for (const observe of ways) {
        expect(await rejection(observe(already)[Symbol.asyncIterator]().next())).toBeInstanceOf(
          AbortedError,
        );
      }
    });
  });
});
