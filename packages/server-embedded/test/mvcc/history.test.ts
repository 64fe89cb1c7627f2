import { describe, expect, it } from 'vitest';
import { type HistoryKey, RevisionHistory } from '../../src/mvcc/history.js';
import type { KeyPosition } from '../../src/mvcc/key-index.js';
import type { Revision } from '../../src/mvcc/revision.js';
import type { KeyValue } from '../../src/mvcc/types.js';
import { b, text } from '../support/bytes.js';

function putKv(key: string, main: number, version = 1): KeyValue {
  return {
    key: b(key),
    value: b(`${key}@${main}`),
    createRevision: main,
    modRevision: main,
    version,
    lease: 0n,
  };
}

function tombstoneKv(key: string, main: number): KeyValue {
  return { key: b(key), value: b(''), createRevision: 0, modRevision: main, version: 0, lease: 0n };
}

/** The create revision and version of each put the tests add, as the key index would know them. */
const states = new Map<string, { createdMain: number; version: number }>();
const stateKey = (key: Uint8Array, revision: Revision) =>
  `${text(key)} ${revision.main}.${revision.sub}`;

/** A stand-in for the KeyIndex of `key`, answering from `states`. */
function historyKey(key: Uint8Array): HistoryKey {
  return {
    key,
    locate(main: number, sub: number, into: KeyPosition) {
      const state = states.get(stateKey(key, { main, sub }));
      if (state === undefined) return false;
      Object.assign(into, { modifiedMain: main, modifiedSub: sub, createdSub: 0, ...state });
      return true;
    },
  };
}

function newHistory(): RevisionHistory {
  return new RevisionHistory();
}

/** Appends `kv` as a put, or as a tombstone when its version is 0. */
function add(history: RevisionHistory, revision: Revision, kv: KeyValue): void {
  if (kv.version === 0) {
    history.tombstone(revision, historyKey(kv.key));
    return;
  }
  states.set(stateKey(kv.key, revision), { createdMain: kv.createRevision, version: kv.version });
  history.put(revision, historyKey(kv.key), kv.value, kv.lease);
}

/** Each kept change as `key main.sub put|delete`, in history order. */
function walk(history: RevisionHistory, upTo = 100): string[] {
  return [...history.upTo(upTo)].map(
    (e) =>
      `${text(e.kv.key)} ${e.revision.main}.${e.revision.sub} ${e.tombstone ? 'delete' : 'put'}`,
  );
}

describe('RevisionHistory', () => {
  it('keeps a revision of several changes by sub, in op order, a version-0 change as a delete', () => {
    const history = newHistory();
    add(history, { main: 2, sub: 0 }, putKv('a', 2));
    add(history, { main: 3, sub: 0 }, putKv('b', 3));
    add(history, { main: 3, sub: 1 }, tombstoneKv('a', 3));
    add(history, { main: 3, sub: 2 }, putKv('c', 3));
    expect(walk(history)).toEqual(['a 2.0 put', 'b 3.0 put', 'a 3.1 delete', 'c 3.2 put']);
    expect(text(history.get({ main: 3, sub: 2 })?.key)).toBe('c');
    expect(history.get({ main: 2, sub: 1 })).toBeUndefined();
    expect(history.get({ main: 4, sub: 0 })).toBeUndefined();
    expect(history.get({ main: 1, sub: 0 })).toBeUndefined();
    expect(history.changesAt(3).map((e) => e.revision.sub)).toEqual([0, 1, 2]);
    expect(walk(history, 2)).toEqual(['a 2.0 put']);
  });

  it('forgets removed changes, their bytes, and the revisions left empty at the start', () => {
    const history = newHistory();
    add(history, { main: 2, sub: 0 }, putKv('a', 2));
    add(history, { main: 3, sub: 0 }, putKv('b', 3));
    add(history, { main: 3, sub: 1 }, putKv('c', 3));
    add(history, { main: 4, sub: 0 }, putKv('a', 4, 2));
    // 17 + key + value + 20 per change: 'a@2' and 'c@3' are 3 bytes.
    const bytes = history.bytes;
    history.remove([
      { main: 2, sub: 0 },
      { main: 3, sub: 1 },
      { main: 9, sub: 0 },
    ]);
    expect(history.bytes).toBe(bytes - 2 * (17 + 1 + 3 + 20));
    expect(walk(history)).toEqual(['b 3.0 put', 'a 4.0 put']);
    expect(history.get({ main: 3, sub: 1 })).toBeUndefined();
    expect(history.changesAt(2)).toEqual([]);
    add(history, { main: 5, sub: 0 }, putKv('d', 5));
    expect(walk(history)).toEqual(['b 3.0 put', 'a 4.0 put', 'd 5.0 put']);
  });

  it('leaves revisions with nothing kept empty (a restored history) and starts again once empty', () => {
    const history = newHistory();
    add(history, { main: 5, sub: 0 }, putKv('a', 5));
    add(history, { main: 9, sub: 1 }, putKv('b', 9));
    expect(walk(history)).toEqual(['a 5.0 put', 'b 9.1 put']);
    expect(history.get({ main: 7, sub: 0 })).toBeUndefined();
    history.remove([
      { main: 5, sub: 0 },
      { main: 9, sub: 1 },
    ]);
    expect(walk(history)).toEqual([]);
    expect(history.bytes).toBe(0);
    add(history, { main: 12, sub: 0 }, putKv('c', 12));
    expect(walk(history)).toEqual(['c 12.0 put']);
  });

  it('refuses a change below the latest revision', () => {
    const history = newHistory();
    add(history, { main: 5, sub: 0 }, putKv('a', 5));
    add(history, { main: 6, sub: 0 }, putKv('b', 6));
    expect(() => add(history, { main: 5, sub: 1 }, putKv('c', 5))).toThrow(/below the latest/);
  });

  it('reads back every field of a put, with a copy of its value, and a tombstone as etcd holds it', () => {
    const history = newHistory();
    const value = b('hello');
    const kv = { ...putKv('k', 7, 4), value, createRevision: 3, lease: 99n };
    add(history, { main: 7, sub: 0 }, kv);
    value.fill(0);
    add(history, { main: 8, sub: 0 }, tombstoneKv('k', 8));
    expect(history.get({ main: 7, sub: 0 })).toEqual({
      key: b('k'),
      value: b('hello'),
      createRevision: 3,
      modRevision: 7,
      version: 4,
      lease: 99n,
    });
    expect(history.leaseAt({ main: 7, sub: 0 })).toBe(99n);
    expect(history.leaseAt({ main: 8, sub: 0 })).toBe(0n);
    expect(history.get({ main: 8, sub: 0 })).toEqual(tombstoneKv('k', 8));
  });

  it('keeps empty, packed and large values apart, and each one whole after others are removed', () => {
    const history = newHistory();
    const large = new Uint8Array(5000).map((_, i) => i % 251);
    const values = [
      b(''),
      large,
      ...Array.from({ length: 300 }, (_, i) => b(`value ${i}`.repeat(10))),
    ];
    values.forEach((value, i) => {
      add(history, { main: 2 + i, sub: 0 }, { ...putKv(`k${i}`, 2 + i), value });
    });
    // Removing every other one rewrites the records and frees what the removed values held.
    history.remove(values.map((_, i) => ({ main: 2 + i, sub: 0 })).filter((_, i) => i % 2 === 1));
    values.forEach((value, i) => {
      const kv = history.get({ main: 2 + i, sub: 0 });
      if (i % 2 === 1) expect(kv).toBeUndefined();
      else expect(kv?.value).toEqual(value);
    });
    history.remove(values.map((_, i) => ({ main: 2 + i, sub: 0 })));
    expect(history.bytes).toBe(0);
    expect(walk(history, 1000)).toEqual([]);
  });

  it('finds a change by sub in a revision of many once some of them were removed', () => {
    const history = newHistory();
    for (let sub = 0; sub < 50; sub++) add(history, { main: 3, sub }, putKv(`k${sub}`, 3));
    add(history, { main: 4, sub: 0 }, putKv('z', 4));
    const removed = Array.from({ length: 20 }, (_, i) => ({ main: 3, sub: i * 2 + 1 }));
    history.remove(removed);
    for (let sub = 0; sub < 50; sub++) {
      const kv = history.get({ main: 3, sub });
      expect(kv === undefined ? undefined : text(kv.key)).toBe(
        sub % 2 === 1 && sub < 40 ? undefined : `k${sub}`,
      );
    }
    expect(history.changesAt(3)).toHaveLength(30);
    expect(text(history.get({ main: 4, sub: 0 })?.key)).toBe('z');
  });

  it('keeps records past its first pages, and finds them after a rewrite across pages', () => {
    const history = newHistory();
    for (let main = 2; main < 9002; main++) add(history, { main, sub: 0 }, putKv(`k${main}`, main));
    // One revision of 5000 changes spans a page boundary (4096 records a page).
    for (let sub = 0; sub < 5000; sub++) add(history, { main: 9002, sub }, putKv(`t${sub}`, 9002));
    expect(text(history.get({ main: 4100, sub: 0 })?.key)).toBe('k4100');
    expect(text(history.get({ main: 9002, sub: 4999 })?.key)).toBe('t4999');
    const removed = Array.from({ length: 8000 }, (_, i) => ({ main: 2 + i, sub: 0 }));
    removed.push(...Array.from({ length: 2000 }, (_, i) => ({ main: 9002, sub: i * 2 })));
    history.remove(removed);
    expect(history.get({ main: 8001, sub: 0 })).toBeUndefined();
    expect(text(history.get({ main: 8002, sub: 0 })?.key)).toBe('k8002');
    expect(history.get({ main: 9002, sub: 3998 })).toBeUndefined();
    expect(text(history.get({ main: 9002, sub: 3999 })?.key)).toBe('t3999');
    expect(text(history.get({ main: 9002, sub: 4000 })?.key)).toBe('t4000');
    expect(history.changesAt(9002)).toHaveLength(3000);
    expect(walk(history, 20_000)).toHaveLength(1000 + 3000);
  });
});
