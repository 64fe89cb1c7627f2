// The watch package's building blocks: the interval tree behind range watchers, history batches,
// and fragment sizing.
import { etcdserverpb } from '@etcdkit/client/protocol';
import { describe, expect, it } from 'vitest';
import type { MvccEvent } from '../../src/mvcc/types.js';
import { EventBatch } from '../../src/watch/event-batch.js';
import { fragmentResponse } from '../../src/watch/fragments.js';
import { IntervalTree } from '../../src/watch/interval-tree.js';
import type { WireWatchResponse } from '../../src/watch/wire.js';
import { b } from '../support/bytes.js';

describe('IntervalTree', () => {
  /** A small deterministic generator, so a failure reproduces. */
  function random(seed: number): () => number {
    let state = seed;
    return () => {
      state = (state * 1103515245 + 12345) % 2147483648;
      return state / 2147483648;
    };
  }

  it('stabs exactly the intervals containing a point, through inserts and deletes (vs a scan)', () => {
    const next = random(7);
    const key = () =>
      String.fromCharCode(97 + Math.floor(next() * 6)).repeat(1 + Math.floor(next() * 2));
    const tree = new IntervalTree<string>();
    const live = new Map<string, { start: string; end: string | undefined }>();
    for (let step = 0; step < 3000; step++) {
      const start = key();
      const end = next() < 0.2 ? undefined : start + key();
      const id = `${start}|${end ?? ''}`;
      if (live.has(id)) {
        expect(tree.get(start, end)).toBe(id);
        expect(tree.delete(start, end)).toBe(true);
        live.delete(id);
        expect(tree.get(start, end)).toBeUndefined();
      } else {
        tree.insert(start, end, id);
        live.set(id, { start, end });
      }
      expect(tree.size).toBe(live.size);
      const point = key();
      const stabbed: string[] = [];
      tree.stab(point, (value) => stabbed.push(value));
      const scanned = [...live]
        .filter(([, i]) => i.start <= point && (i.end === undefined || point < i.end))
        .map(([id]) => id);
      expect(stabbed.sort()).toEqual(scanned.sort());
    }
  });

  it('deleting an interval that is not there changes nothing', () => {
    const tree = new IntervalTree<number>();
    tree.insert('a', 'c', 1);
    expect(tree.delete('a', 'b')).toBe(false);
    expect(tree.delete('a', undefined)).toBe(false);
    expect(tree.size).toBe(1);
  });
});

describe('EventBatch', () => {
  const event = (revision: number): MvccEvent => ({
    type: 'put',
    kv: {
      key: b('k'),
      value: b(''),
      createRevision: 1,
      modRevision: revision,
      version: 1,
      lease: 0n,
    },
  });

  it('takes events of up to the given number of distinct revisions, never part of a revision', () => {
    const batch = new EventBatch(2);
    for (const revision of [5, 5, 7, 7, 7, 9, 9, 12]) batch.add(event(revision));
    expect(batch.events.map((e) => e.kv.modRevision)).toEqual([5, 5, 7, 7, 7]);
    expect(batch.full).toBe(true);
    expect(batch.moreRevision).toBe(9);
  });

  it('is not full while it has room', () => {
    const batch = new EventBatch();
    for (let revision = 2; revision <= 1001; revision++) batch.add(event(revision));
    expect(batch.full).toBe(false);
    batch.add(event(1002));
    expect(batch.moreRevision).toBe(1002);
    expect(batch.events).toHaveLength(1000);
  });
});

describe('fragmentResponse', () => {
  const header = { clusterId: 1n, memberId: 2n, revision: 10n, raftTerm: 2n };
  const wireEvent = (size: number) => ({
    type: 0,
    kv: {
      key: b('k'),
      value: new Uint8Array(size),
      createRevision: 2n,
      modRevision: 3n,
      version: 1n,
    },
  });
  const size = (message: WireWatchResponse) =>
    etcdserverpb.WatchResponse.encode(message).finish().length;

  it('sends a response below the limit whole, and splits one that reaches it', () => {
    const message: WireWatchResponse = {
      header,
      watchId: 3n,
      events: [wireEvent(100), wireEvent(100)],
    };
    const exact = size(message);
    expect(fragmentResponse(message, exact + 1)).toEqual([message]);
    const pieces = fragmentResponse(message, exact);
    expect(pieces.map((piece) => [piece.fragment, piece.events?.length])).toEqual([
      [true, 1],
      [false, 1],
    ]);
    for (const piece of pieces) {
      expect(piece.header).toBe(header);
      expect(piece.watchId).toBe(3n);
    }
  });

  it('fills each piece while it stays under the limit, measured with fragment = true', () => {
    const events = [wireEvent(100), wireEvent(100), wireEvent(100), wireEvent(100), wireEvent(100)];
    const two = size({ header, watchId: 0n, fragment: true, events: events.slice(0, 2) });
    // Room for exactly two events per piece: the limit is one byte above their size.
    const pieces = fragmentResponse({ header, watchId: 0n, events }, two + 1);
    expect(pieces.map((piece) => [piece.fragment, piece.events?.length])).toEqual([
      [true, 2],
      [true, 2],
      [false, 1],
    ]);
    // At exactly their size, two no longer fit.
    expect(
      fragmentResponse({ header, watchId: 0n, events }, two).map((p) => p.events?.length),
    ).toEqual([1, 1, 1, 1, 1]);
  });

  it('never splits a single event, nor a response of one event', () => {
    const one: WireWatchResponse = { header, watchId: 0n, events: [wireEvent(1000)] };
    expect(fragmentResponse(one, 10)).toEqual([one]);
    const big = fragmentResponse(
      { header, watchId: 0n, events: [wireEvent(1000), wireEvent(10)] },
      500,
    );
    expect(big.map((piece) => piece.events?.length)).toEqual([1, 1]);
  });
});
