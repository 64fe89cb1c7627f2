// The watchable store of a simulated cluster's member cut off from its leader (held), on streams
// over fake calls and a clock moved by hand, so every response is checked exactly and nothing
// sleeps. Held, the member's watchers are served from what it had applied, as a real etcd member's
// watchable store serves from a store no commit reaches: history up to that revision at once,
// progress at it, nothing newer; released, they catch up with the shared store from history.
import { afterEach, describe, expect, it } from 'vitest';
import { MvccStore } from '../../src/mvcc/store.js';
import type { AppliedHistory } from '../../src/watch/watchable-store.js';
import { b } from '../support/bytes.js';
import { Harness } from '../watch/stream-harness.js';
import { put } from '../watch/watch-client.js';

/** What a member cut off now had applied: a copy of the shared store's history up to now. */
function appliedNow(store: MvccStore): AppliedHistory {
  const copy = new MvccStore();
  copy.restore({
    revision: store.revision,
    compactRevision: store.compactRevision,
    changes: [...store.history.upTo(store.revision)],
  });
  return { revision: store.revision, store: copy };
}

describe('a held watchable store (a member cut off from its leader)', () => {
  let h: Harness;
  afterEach(() => h.close());

  it('delivers none of the shared store commits; a watch from a past revision replays up to the applied revision at once', async () => {
    h = new Harness();
    h.put('a', '1'); // 2
    h.put('b', '1'); // 3
    const { stream, call } = h.open();
    h.create(stream, { key: b('a'), rangeEnd: b('c') });
    h.watchable.hold(appliedNow(h.store));
    h.put('a', '2'); // 4: the quorum's, not the member's
    h.create(stream, { key: b('a'), rangeEnd: b('c'), startRevision: 2n });
    await h.settle();
    expect(call.take()).toEqual([
      { revision: 3, watchId: 0, created: true },
      // Created while held: the header carries the member's revision, not the cluster's.
      { revision: 3, watchId: 1, created: true },
      { revision: 3, watchId: 1, events: [put('a', '1', 2, 2, 1), put('b', '1', 3, 3, 1)] },
    ]);
  });

  it('a watch starting past the applied revision waits; released, it gets that revision once the cluster has it', async () => {
    h = new Harness();
    h.put('a', '1'); // 2
    const { stream, call } = h.open();
    h.watchable.hold(appliedNow(h.store));
    h.put('a', '2'); // 3
    h.create(stream, { key: b('a'), startRevision: 3n });
    h.create(stream, { key: b('a'), startRevision: 5n });
    await h.settle();
    expect(call.take()).toEqual([
      { revision: 2, watchId: 0, created: true },
      { revision: 2, watchId: 1, created: true },
    ]);

    h.watchable.release();
    await h.settle();
    expect(call.take()).toEqual([{ revision: 3, watchId: 0, events: [put('a', '2', 2, 3, 2)] }]);
    h.put('a', '3'); // 4
    h.put('a', '4'); // 5
    expect(call.take()).toEqual([
      { revision: 4, watchId: 0, events: [put('a', '3', 2, 4, 3)] },
      { revision: 5, watchId: 0, events: [put('a', '4', 2, 5, 4)] },
      { revision: 5, watchId: 1, events: [put('a', '4', 2, 5, 4)] },
    ]);
  });

  it('released, every watcher gets what the cluster committed meanwhile, in order, exactly once, then live', async () => {
    h = new Harness();
    h.put('a', '1'); // 2
    const { stream, call } = h.open();
    h.create(stream, { key: b('a') });
    h.watchable.hold(appliedNow(h.store));
    h.create(stream, { key: b('a'), startRevision: 1n });
    await h.settle();
    h.put('a', '2'); // 3
    h.put('a', '3'); // 4
    expect(call.take()).toEqual([
      { revision: 2, watchId: 0, created: true },
      { revision: 2, watchId: 1, created: true },
      { revision: 2, watchId: 1, events: [put('a', '1', 2, 2, 1)] },
    ]);

    h.watchable.release();
    await h.settle();
    const missed = [put('a', '2', 2, 3, 2), put('a', '3', 2, 4, 3)];
    expect(call.take()).toEqual([
      { revision: 4, watchId: 0, events: missed },
      { revision: 4, watchId: 1, events: missed },
    ]);
    h.put('a', '4'); // 5
    expect(call.take()).toEqual([
      { revision: 5, watchId: 0, events: [put('a', '4', 2, 5, 4)] },
      { revision: 5, watchId: 1, events: [put('a', '4', 2, 5, 4)] },
    ]);
    expect(h.watchable.unsyncedSize).toBe(0);
  });

  it('progress requests and progress ticks report the applied revision', async () => {
    h = new Harness();
    h.put('a', '1'); // 2
    const { stream, call } = h.open();
    h.create(stream, { key: b('a'), progressNotify: true });
    h.watchable.hold(appliedNow(h.store));
    h.put('b', '1'); // 3
    stream.handle({ progressRequest: {} });
    h.clock.advance(1000);
    expect(call.take()).toEqual([
      { revision: 2, watchId: 0, created: true },
      { revision: 2, watchId: -1 },
      { revision: 2, watchId: 0 },
    ]);
  });

  it('a watcher catching up when the member is cut off goes on from its own history, even once the cluster compacted it', async () => {
    h = new Harness();
    h.put('a', '1'); // 2
    h.put('a', '2'); // 3
    const { stream, call } = h.open();
    h.create(stream, { key: b('a'), startRevision: 2n, prevKv: true });
    // Cut off before the catch-up pass ran.
    h.watchable.hold(appliedNow(h.store));
    h.put('a', '3'); // 4
    h.store.compact(4);
    await h.settle();
    const prev = { key: 'a', value: '1', create: 2, mod: 2, version: 1, lease: 0n };
    expect(call.take()).toEqual([
      { revision: 3, watchId: 0, created: true },
      // Its prev_kv is read from the member's store too: the cluster's no longer has revision 2.
      { revision: 3, watchId: 0, events: [put('a', '1', 2, 2, 1), put('a', '2', 2, 3, 2, prev)] },
    ]);
  });

  it('a watch created held from below the member compaction is canceled with the member compaction revision', async () => {
    h = new Harness();
    h.put('a', '1'); // 2
    h.put('a', '2'); // 3
    h.store.compact(3);
    const { stream, call } = h.open();
    h.watchable.hold(appliedNow(h.store));
    h.put('a', '3'); // 4
    h.store.compact(4);
    h.create(stream, { key: b('a'), startRevision: 2n });
    h.create(stream, { key: b('a'), startRevision: 3n });
    await h.settle();
    expect(call.take()).toEqual([
      { revision: 3, watchId: 0, created: true },
      { revision: 3, watchId: 1, created: true },
      { revision: 0, watchId: 0, canceled: true, compactRevision: 3 },
      { revision: 3, watchId: 1, events: [put('a', '2', 2, 3, 2)] },
    ]);
  });

  it('released after the cluster compacted past the member revision, a watcher is canceled with the cluster compaction revision', async () => {
    h = new Harness();
    h.put('a', '1'); // 2
    const { stream, call } = h.open();
    h.create(stream, { key: b('a') });
    h.create(stream, { key: b('a'), startRevision: 10n });
    h.watchable.hold(appliedNow(h.store));
    h.put('a', '2'); // 3
    h.put('a', '3'); // 4
    h.store.compact(4);
    h.watchable.release();
    await h.settle();
    expect(call.take()).toEqual([
      { revision: 2, watchId: 0, created: true },
      { revision: 2, watchId: 1, created: true },
      // Revision 3, the next it needed, is gone: canceled (etcd's answer after a snapshot).
      { revision: 0, watchId: 0, canceled: true, compactRevision: 4 },
    ]);
    // The watch waiting for revision 10 needs nothing compacted: it goes on waiting.
    for (let value = 4; value <= 9; value++) h.put('a', `${value}`); // 5..10
    expect(call.take()).toEqual([{ revision: 10, watchId: 1, events: [put('a', '9', 2, 10, 9)] }]);
  });

  it('released when the cluster compacted only up to the next revision the member needs, nothing is canceled', async () => {
    h = new Harness();
    h.put('a', '1'); // 2
    const { stream, call } = h.open();
    h.create(stream, { key: b('a') });
    h.watchable.hold(appliedNow(h.store));
    h.put('a', '2'); // 3
    h.put('a', '3'); // 4
    h.store.compact(3);
    h.watchable.release();
    await h.settle();
    expect(call.take()).toEqual([
      { revision: 2, watchId: 0, created: true },
      { revision: 4, watchId: 0, events: [put('a', '2', 2, 3, 2), put('a', '3', 2, 4, 3)] },
    ]);
  });
});
