// The watch stream and watchable store without gRPC, on a clock moved by hand: progress ticks,
// progress requests against unsynced watchers, backpressure, catch-up and cleanup, exactly.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_PROGRESS_NOTIFY_INTERVAL_MS,
  progressNotifyInterval,
} from '../../src/watch/watch-stream.js';
import { b } from '../support/bytes.js';
import { FakeCall, Harness } from './stream-harness.js';
import { NOPUT, put } from './watch-client.js';

describe('progress notifications (manual clock, interval 1000 ms)', () => {
  let h: Harness;

  beforeEach(() => {
    h = new Harness();
  });
  afterEach(() => h.close());

  it('an idle progress_notify watch gets {watch_id} with the current revision on every tick', () => {
    const { stream, call } = h.open();
    h.create(stream, { key: b('a'), progressNotify: true });
    h.create(stream, { key: b('b') });
    h.put('x', '1'); // 2
    call.take();
    h.clock.advance(999);
    expect(call.take()).toEqual([]);
    h.clock.advance(1);
    expect(call.take()).toEqual([{ revision: 2, watchId: 0 }]);
    h.clock.advance(1000);
    expect(call.take()).toEqual([{ revision: 2, watchId: 0 }]);
  });

  it('a response with events skips the next tick of that watch', () => {
    const { stream, call } = h.open();
    h.create(stream, { key: b('a'), progressNotify: true });
    h.clock.advance(1000);
    h.put('a', '1'); // 2
    expect(call.take()).toEqual([
      { revision: 1, watchId: 0, created: true },
      { revision: 1, watchId: 0 },
      { revision: 2, watchId: 0, events: [put('a', '1', 2, 2, 1)] },
    ]);
    h.clock.advance(1000);
    expect(call.take()).toEqual([]);
    h.clock.advance(1000);
    expect(call.take()).toEqual([{ revision: 2, watchId: 0 }]);
  });

  it('events that the filters drop do not count as sent', () => {
    const { stream, call } = h.open();
    h.create(stream, { key: b('a'), progressNotify: true, filters: [NOPUT] });
    h.put('a', '1'); // 2
    call.take();
    h.clock.advance(1000);
    expect(call.take()).toEqual([{ revision: 2, watchId: 0 }]);
  });

  it('ticks run per stream, from when the stream opened', () => {
    const first = h.open();
    h.clock.advance(600);
    const second = h.open();
    h.create(first.stream, { key: b('a'), progressNotify: true });
    h.create(second.stream, { key: b('a'), progressNotify: true });
    first.call.take();
    second.call.take();
    h.clock.advance(400);
    expect([first.call.take(), second.call.take()]).toEqual([[{ revision: 1, watchId: 0 }], []]);
    h.clock.advance(600);
    expect([first.call.take(), second.call.take()]).toEqual([[], [{ revision: 1, watchId: 0 }]]);
  });

  it('a watch that is still catching up from history gets no progress notification', async () => {
    const { stream, call } = h.open();
    h.put('a', '1'); // 2
    h.create(stream, { key: b('a'), startRevision: 2n, progressNotify: true });
    // The catch-up pass has not run yet: the watcher is unsynced.
    h.clock.advance(1000);
    expect(call.take()).toEqual([{ revision: 2, watchId: 0, created: true }]);
    await h.settle();
    expect(call.take()).toEqual([{ revision: 2, watchId: 0, events: [put('a', '1', 2, 2, 1)] }]);
    h.clock.advance(1000);
    expect(call.take()).toEqual([]);
    h.clock.advance(1000);
    expect(call.take()).toEqual([{ revision: 2, watchId: 0 }]);
  });

  it('a watch with a future start revision gets none until the store reaches it', () => {
    const { stream, call } = h.open();
    h.create(stream, { key: b('a'), startRevision: 3n, progressNotify: true });
    call.take();
    h.clock.advance(1000);
    h.put('x', '1'); // 2
    h.clock.advance(1000);
    expect(call.take()).toEqual([]);
    h.put('x', '2'); // 3
    h.clock.advance(1000);
    expect(call.take()).toEqual([{ revision: 3, watchId: 0 }]);
  });

  it('the interval defaults to 10 minutes and is at least 100 ms', () => {
    expect(progressNotifyInterval(undefined)).toBe(DEFAULT_PROGRESS_NOTIFY_INTERVAL_MS);
    expect(DEFAULT_PROGRESS_NOTIFY_INTERVAL_MS).toBe(600_000);
    expect(progressNotifyInterval(0)).toBe(600_000);
    expect(progressNotifyInterval(1)).toBe(100);
    expect(progressNotifyInterval(250)).toBe(250);
  });
});

describe('progress requests', () => {
  let h: Harness;

  beforeEach(() => {
    h = new Harness();
  });
  afterEach(() => h.close());

  it('are answered only while every watch of the stream is synced', async () => {
    const { stream, call } = h.open();
    h.put('a', '1'); // 2
    h.create(stream, { key: b('z') });
    h.create(stream, { key: b('a'), startRevision: 2n });
    stream.handle({ progressRequest: {} });
    expect(call.take()).toEqual([
      { revision: 2, watchId: 0, created: true },
      { revision: 2, watchId: 1, created: true },
    ]);
    await h.settle();
    stream.handle({ progressRequest: {} });
    expect(call.take()).toEqual([
      { revision: 2, watchId: 1, events: [put('a', '1', 2, 2, 1)] },
      { revision: 2, watchId: -1 },
    ]);
  });

  it('get nothing on a stream without watches, or with a watch canceled by compaction', async () => {
    const { stream, call } = h.open();
    stream.handle({ progressRequest: {} });
    expect(call.take()).toEqual([]);
    h.put('a', '1'); // 2
    h.put('a', '2'); // 3
    h.store.compact(3);
    h.create(stream, { key: b('a'), startRevision: 2n });
    await h.settle();
    expect(call.take()).toEqual([
      { revision: 3, watchId: 0, created: true },
      { revision: 0, watchId: 0, canceled: true, compactRevision: 3 },
    ]);
    stream.handle({ progressRequest: {} });
    expect(call.take()).toEqual([]);
    stream.handle({ cancelRequest: { watchId: 0n } });
    h.create(stream, { key: b('a') });
    stream.handle({ progressRequest: {} });
    expect(call.take()).toEqual([
      { revision: 3, watchId: 0, canceled: true },
      { revision: 3, watchId: 1, created: true },
      { revision: 3, watchId: -1 },
    ]);
  });
});

describe('a stream that stops draining', () => {
  let h: Harness;

  beforeEach(() => {
    h = new Harness();
  });
  afterEach(() => h.close());

  it('takes 128 responses, then its watcher falls back to history; writers and other streams go on', async () => {
    const slow = h.open();
    const fast = h.open();
    h.create(slow.stream, { key: b('a') });
    h.create(fast.stream, { key: b('a') });
    slow.call.blocked = true;
    slow.call.take();
    fast.call.take();
    for (let i = 0; i < 300; i++) h.put('a', `${i}`); // 2..301
    // The first write after blocking still went out (write() took it, then asked to wait).
    expect(slow.call.take().map((r) => r.revision)).toEqual([2]);
    expect(h.watchable.unsyncedSize).toBe(1);
    const fastRevisions = fast.call.take().map((r) => r.revision);
    expect(fastRevisions).toEqual(Array.from({ length: 300 }, (_, i) => i + 2));
    await h.settle();
    // Nothing is read from history while the stream is still congested.
    expect(slow.call.take()).toEqual([]);

    slow.call.unblock();
    await h.settle();
    const responses = slow.call.take();
    // 128 queued live responses (3..130), then one history response (131..301) at the current revision.
    expect(responses.slice(0, 128).map((r) => r.revision)).toEqual(
      Array.from({ length: 128 }, (_, i) => i + 3),
    );
    expect(responses.length).toBe(129);
    const history = responses[128]!;
    expect(history.revision).toBe(301);
    expect(history.events!.map((event) => event.kv!.mod)).toEqual(
      Array.from({ length: 171 }, (_, i) => i + 131),
    );
    expect(h.watchable.unsyncedSize).toBe(0);
    h.put('a', 'live'); // 302
    expect(slow.call.take()).toEqual([
      { revision: 302, watchId: 0, events: [put('a', 'live', 2, 302, 301)] },
    ]);
  });

  it('is canceled with compact_revision when it falls behind a compaction', async () => {
    const slow = h.open();
    h.create(slow.stream, { key: b('a') });
    slow.call.blocked = true;
    for (let i = 0; i < 200; i++) h.put('a', `${i}`); // 2..201
    h.store.compact(150);
    slow.call.unblock();
    await h.settle();
    const responses = slow.call.take();
    // created, revision 2 (went out before blocking), 128 queued (3..130), then the cancel.
    expect(responses.length).toBe(131);
    expect(responses.at(-2)!.revision).toBe(130);
    expect(responses.at(-1)).toEqual({
      revision: 0,
      watchId: 0,
      canceled: true,
      compactRevision: 150,
    });
    expect(h.watchable.size).toBe(0);
    h.put('a', 'after');
    expect(slow.call.take()).toEqual([]);
  });

  it('reads prev_kv when a response is written: compacted meanwhile, it is left out', () => {
    const { stream, call } = h.open();
    h.put('a', '1'); // 2
    h.create(stream, { key: b('a'), prevKv: true });
    call.blocked = true;
    call.take();
    h.put('a', '2'); // 3: written at once
    h.put('a', '3'); // 4: queued
    h.store.compact(4);
    call.unblock();
    const v1 = { key: 'a', value: '1', create: 2, mod: 2, version: 1, lease: 0n };
    expect(call.take()).toEqual([
      { revision: 3, watchId: 0, events: [put('a', '2', 2, 3, 2, v1)] },
      { revision: 4, watchId: 0, events: [put('a', '3', 2, 4, 3)] },
    ]);
  });

  it('stops reading requests while replies pile up, and reads again once they drain', () => {
    const { stream, call } = h.open();
    call.blocked = true;
    for (let i = 0; i < 16; i++) h.create(stream, { key: b(`k${i}`) });
    expect(call.paused).toBe(false);
    h.create(stream, { key: b('k16') });
    h.create(stream, { key: b('k17') });
    expect(call.paused).toBe(true);
    call.unblock();
    expect(call.paused).toBe(false);
    expect(call.take().map((r) => r.watchId)).toEqual(Array.from({ length: 18 }, (_, i) => i));
  });
});

describe('stream end', () => {
  it('removes every watcher of the stream from the store; nothing is written afterwards', async () => {
    const h = new Harness();
    const { stream, call } = h.open();
    h.put('a', '1'); // 2
    h.create(stream, { key: b('a') });
    h.create(stream, { key: b('a'), startRevision: 2n });
    h.create(stream, { key: b('a'), startRevision: 10n, progressNotify: true });
    const other = h.open();
    h.create(other.stream, { key: b('a') });
    expect(h.watchable.size).toBe(4);
    stream.close();
    expect(h.watchable.size).toBe(1);
    call.take();
    h.put('a', '2');
    await h.settle();
    h.clock.advance(10_000);
    expect(call.take()).toEqual([]);
    expect(other.call.take()).toHaveLength(2);
    h.close();
    expect(h.watchable.size).toBe(0);
    expect(h.clock.pending).toBe(0);
  });

  it('a second close is harmless', () => {
    const h = new Harness();
    const { stream } = h.open();
    stream.close();
    stream.close();
    h.close();
    expect(new FakeCall().written).toEqual([]);
  });
});
