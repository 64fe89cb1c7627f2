// Watches on a member of the simulated cluster cut off from the quorum, over gRPC: the member
// serves them from what it had applied (as a real etcd member's watchable store does, leader or
// not), whatever the quorum writes or compacts meanwhile: a watch from a past revision replays up
// to the member's revision at once, a later start waits, progress carries the member's revision.
// Healed, every watcher gets what it missed, in order, exactly once, or, if the quorum compacted
// it, a cancel with the compaction revision. Exact rules, on fake streams: held-watchable-store.test.ts.
import { etcdserverpb_KV as KV } from '@etcdkit/client/protocol';
import { describe, expect, it } from 'vitest';
import { type EmbeddedCluster, type EmbeddedClusterMember, VirtualClock } from '../../src/index.js';
import { b } from '../support/bytes.js';
import { put, type WatchStreamClient } from '../watch/watch-client.js';
import { clusterFixture, putText, type ThreeMembers } from './cluster-support.js';

describe('watches on a member cut off from the quorum', () => {
  const { start, clientOf, watchConnectionOf } = clusterFixture();
  const watchOf = (member: EmbeddedClusterMember): WatchStreamClient =>
    watchConnectionOf(member).open();
  const write = putText;

  /** A 3-member cluster with w = 1 at revision 2, member2 partitioned, the quorum at revision 4. */
  const cutOff = async (options: Parameters<typeof EmbeddedCluster.start>[0] = {}) => {
    const cluster = await start({ ...options, members: 3 });
    const [m0, , m2] = cluster.members as ThreeMembers;
    const quorum = clientOf(m0);
    await write(quorum, 'w', '1'); // 2
    m2.partition();
    await write(quorum, 'w', '2'); // 3
    await write(quorum, 'w', '3'); // 4
    return { c: cluster, quorum, m2 };
  };

  it('replays up to its revision at once, waits past it, and reports its revision as progress; healed, delivers the rest once', async () => {
    const { quorum, m2 } = await cutOff();
    const stream = watchOf(m2);
    stream.create({ key: b('w'), startRevision: 1n });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 2, watchId: 0, created: true },
      { revision: 2, watchId: 0, events: [put('w', '1', 2, 2, 1)] },
    ]);
    stream.progress();
    expect(await stream.next()).toEqual({ revision: 2, watchId: -1 });
    stream.create({ key: b('w'), startRevision: 3n });
    expect(await stream.next()).toEqual({ revision: 2, watchId: 1, created: true });
    expect(await stream.drain(100)).toEqual([]);

    m2.heal();
    const missed = [put('w', '2', 2, 3, 2), put('w', '3', 2, 4, 3)];
    const caughtUp = await stream.nextMany(2);
    expect(caughtUp.sort((x, y) => x.watchId - y.watchId)).toEqual([
      { revision: 4, watchId: 0, events: missed },
      { revision: 4, watchId: 1, events: missed },
    ]);
    await write(quorum, 'w', '4'); // 5
    expect(await stream.nextMany(2)).toEqual([
      { revision: 5, watchId: 0, events: [put('w', '4', 2, 5, 4)] },
      { revision: 5, watchId: 1, events: [put('w', '4', 2, 5, 4)] },
    ]);
  });

  it('a progress-notify watch gets its ticks at the member revision', async () => {
    const { c, m2 } = await cutOff({ clock: 'virtual', watchProgressNotifyIntervalMs: 100 });
    const stream = watchOf(m2);
    stream.create({ key: b('w'), progressNotify: true });
    expect(await stream.next()).toEqual({ revision: 2, watchId: 0, created: true });
    if (!(c.clock instanceof VirtualClock)) throw new Error('the cluster runs on a virtual clock');
    c.clock.advance(100);
    expect(await stream.next()).toEqual({ revision: 2, watchId: 0 });
  });

  it('healed after the quorum compacted past its revision, a watcher still behind is canceled with the compaction revision', async () => {
    const { c, quorum, m2 } = await cutOff();
    const stream = watchOf(m2);
    stream.create({ key: b('w') });
    expect(await stream.next()).toEqual({ revision: 2, watchId: 0, created: true });
    await quorum.unary(KV.Compact, { revision: 4n });
    // The member's own history is untouched: a watch from revision 1 still replays it.
    stream.create({ key: b('w'), startRevision: 1n });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 2, watchId: 1, created: true },
      { revision: 2, watchId: 1, events: [put('w', '1', 2, 2, 1)] },
    ]);

    m2.heal();
    const canceled = await stream.nextMany(2);
    expect(canceled.sort((x, y) => x.watchId - y.watchId)).toEqual([
      { revision: 0, watchId: 0, canceled: true, compactRevision: 4 },
      { revision: 0, watchId: 1, canceled: true, compactRevision: 4 },
    ]);
    expect(c.store.compactRevision).toBe(4);
  });
});
