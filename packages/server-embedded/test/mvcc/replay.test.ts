// History replay read straight from the records (changesAt's events, upTo's entries, ranges at
// past revisions, previousValue) checked field by field against a model of what each write did:
// across the history's pages (4096 records) and value chunks (16 KiB, values over 1 KiB alone),
// with leases, deletes, a put its own request then deleted, and a compaction that rewrites pages.
import { describe, expect, it } from 'vitest';
import { MvccStore } from '../../src/mvcc/store.js';
import type { KeyValue } from '../../src/mvcc/types.js';
import { b } from '../support/bytes.js';
import { type KvSummary, kvSummary } from './kv-summary.js';

interface Expected extends KvSummary {
  type: 'put' | 'delete';
}

interface Live {
  value: string;
  create: number;
  version: number;
  lease: bigint;
}

const KEYS = 40;
const REVISIONS = 6000;

function shown(type: 'put' | 'delete', kv: KeyValue): Expected {
  return { type, ...kvSummary(kv) };
}

/** A value of `length` bytes naming its key and revision, so that a misplaced one shows. */
function valueText(key: string, main: number, length: number): string {
  const head = `${key}@${main}:`;
  return length === 0 ? '' : (head + 'x'.repeat(length)).slice(0, Math.max(length, head.length));
}

/**
 * Writes REVISIONS requests of a fixed pseudo-random mix into `store`, and returns what each
 * revision's events must be.
 */
function writeHistory(store: MvccStore) {
  const events = new Map<number, Expected[]>();
  const live = new Map<string, Live>();
  let seed = 7;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const putIn = (
    expected: Expected[],
    main: number,
    key: string,
    length: number,
    lease: bigint,
  ) => {
    const before = live.get(key);
    const state: Live = {
      value: valueText(key, main, length),
      create: before?.create ?? main,
      version: (before?.version ?? 0) + 1,
      lease,
    };
    live.set(key, state);
    expected.push({ type: 'put', key, mod: main, ...state });
    return state.value;
  };
  const deleteIn = (expected: Expected[], main: number, key: string) => {
    if (!live.delete(key)) return false;
    expected.push({ type: 'delete', key, value: '', create: 0, mod: main, version: 0, lease: 0n });
    return true;
  };
  while (store.revision < REVISIONS) {
    const main = store.revision + 1;
    const expected: Expected[] = [];
    const write = store.write();
    const kind = next(10);
    const key = `k${String(next(KEYS)).padStart(2, '0')}`;
    // Mostly small values, some empty, some over 1 KiB (a chunk of their own).
    const lengths = [0, 30, 100, 700, 1500];
    const length = lengths[next(lengths.length)]!;
    const lease = next(3) === 0 ? BigInt(100 + next(5)) : 0n;
    if (kind < 6) {
      write.put(b(key), b(putIn(expected, main, key, length, lease)), lease);
    } else if (kind < 8) {
      if (deleteIn(expected, main, key)) write.deleteRange({ key: b(key) });
    } else if (kind === 8) {
      // Three changes in one request: subs 0..2.
      const other = `k${String((Number(key.slice(1)) + 1) % KEYS).padStart(2, '0')}`;
      write.put(b(key), b(putIn(expected, main, key, length, lease)), lease);
      write.put(b(other), b(putIn(expected, main, other, 100, 0n)), 0n);
      write.put(b(key), b(putIn(expected, main, key, 30, 0n)), 0n);
    } else {
      // A put its own request then deletes, then a new generation in the same request.
      write.put(b(key), b(putIn(expected, main, key, length, lease)), lease);
      deleteIn(expected, main, key);
      write.deleteRange({ key: b(key) });
      write.put(b(key), b(putIn(expected, main, key, 100, 0n)), 0n);
    }
    write.end();
    if (expected.length > 0) events.set(main, expected);
  }
  return events;
}

function rangeAt(store: MvccStore, revision: number): Expected[] {
  return store.range({ key: b('k'), end: b('l') }, { revision }).kvs.map((kv) => shown('put', kv));
}

/** Each live key's kv at `revision`, in key order, replayed from the expected events. */
function modelAt(events: Map<number, Expected[]>, revision: number): Map<string, Expected> {
  const live = new Map<string, Expected>();
  for (let main = 2; main <= revision; main++) {
    for (const event of events.get(main) ?? []) {
      if (event.type === 'put') live.set(event.key, event);
      else live.delete(event.key);
    }
  }
  return new Map([...live.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

describe('history replay from the records', () => {
  const store = new MvccStore();
  const events = writeHistory(store);
  const sampled = Array.from({ length: REVISIONS / 250 }, (_, i) => (i + 1) * 250);

  it('gives every revision its events with exact key, value, revisions, version and lease', () => {
    let records = 0;
    for (let main = 1; main <= store.revision; main++) {
      const got = store.changesAt(main).events.map((event) => shown(event.type, event.kv));
      expect(got).toEqual(events.get(main) ?? []);
      records += got.length;
    }
    // More than one page of records, and values over many chunks.
    expect(records).toBeGreaterThan(4096 + 1000);
  });

  it('walks the same changes with upTo, in revision order, tombstones as tombstones', () => {
    const walked = [...store.history.upTo(store.revision)].map((entry) => ({
      ...shown(entry.tombstone ? 'delete' : 'put', entry.kv),
      sub: entry.revision.sub,
    }));
    const expected = [...events.entries()].flatMap(([, list]) =>
      list.map((event, sub) => ({ ...event, sub })),
    );
    expect(walked).toEqual(expected);
  });

  it('reads ranges at past revisions and previous values as they were', () => {
    for (const revision of sampled) {
      expect(rangeAt(store, revision)).toEqual([...modelAt(events, revision).values()]);
    }
    const changes = [...events.values()].flat();
    let withPrevious = 0;
    for (let i = 0; i < changes.length; i += 37) {
      const { key, mod } = changes[i]!;
      const previous = store.previousValue(b(key), mod);
      const expected = modelAt(events, mod - 1).get(key);
      expect(previous && shown('put', previous)).toEqual(expected);
      if (expected !== undefined) withPrevious++;
    }
    expect(withPrevious).toBeGreaterThan(50);
  });

  it('after a compaction (pages rewritten) keeps every change from the compaction revision on', () => {
    const compacted = 5000;
    store.compact(compacted);
    for (let main = compacted + 1; main <= store.revision; main++) {
      const got = store.changesAt(main).events.map((event) => shown(event.type, event.kv));
      expect(got).toEqual(events.get(main) ?? []);
    }
    expect(() => store.changesAt(compacted - 1)).toThrow(/compacted/);
    for (const revision of sampled.filter((revision) => revision >= compacted)) {
      expect(rangeAt(store, revision)).toEqual([...modelAt(events, revision).values()]);
    }
    // What upTo still walks: each key live at the compaction as it was then, and every change
    // after it, in revision order.
    const kept = [...store.history.upTo(store.revision)].map((entry) =>
      shown(entry.tombstone ? 'delete' : 'put', entry.kv),
    );
    const after = [...events.entries()].filter(([main]) => main > compacted).flatMap(([, l]) => l);
    const atCompaction = [...modelAt(events, compacted).values()].sort((x, y) => x.mod - y.mod);
    const tombstoneAt = (events.get(compacted) ?? []).filter((event) => event.type === 'delete');
    expect(kept.filter((kv) => kv.mod > compacted)).toEqual(after);
    expect(kept.filter((kv) => kv.mod <= compacted && kv.type === 'put')).toEqual(atCompaction);
    expect(kept.filter((kv) => kv.mod <= compacted && kv.type === 'delete')).toEqual(tombstoneAt);
  });
});
