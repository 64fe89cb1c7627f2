import { describe, expect, it } from 'vitest';
import { RevisionHistory } from '../../src/mvcc/history.js';
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

/** Each kept change as `key main.sub put|delete`, in history order. */
function walk(history: RevisionHistory, upTo = 100): string[] {
  return [...history.upTo(upTo)].map(
    (e) =>
      `${text(e.kv.key)} ${e.revision.main}.${e.revision.sub} ${e.tombstone ? 'delete' : 'put'}`,
  );
}

describe('RevisionHistory', () => {
  it('keeps a revision of several changes by sub, in op order, a version-0 change as a delete', () => {
    const history = new RevisionHistory();
    history.add({ main: 2, sub: 0 }, putKv('a', 2));
    history.add({ main: 3, sub: 0 }, putKv('b', 3));
    history.add({ main: 3, sub: 1 }, tombstoneKv('a', 3));
    history.add({ main: 3, sub: 2 }, putKv('c', 3));
    expect(walk(history)).toEqual(['a 2.0 put', 'b 3.0 put', 'a 3.1 delete', 'c 3.2 put']);
    expect(text(history.get({ main: 3, sub: 2 })?.key)).toBe('c');
    expect(history.get({ main: 2, sub: 1 })).toBeUndefined();
    expect(history.get({ main: 4, sub: 0 })).toBeUndefined();
    expect(history.get({ main: 1, sub: 0 })).toBeUndefined();
    expect(history.changesAt(3).map((e) => e.revision.sub)).toEqual([0, 1, 2]);
    expect(walk(history, 2)).toEqual(['a 2.0 put']);
  });

  it('forgets removed changes, their bytes, and the revisions left empty at the start', () => {
    const history = new RevisionHistory();
    history.add({ main: 2, sub: 0 }, putKv('a', 2));
    history.add({ main: 3, sub: 0 }, putKv('b', 3));
    history.add({ main: 3, sub: 1 }, putKv('c', 3));
    history.add({ main: 4, sub: 0 }, putKv('a', 4, 2));
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
    history.add({ main: 5, sub: 0 }, putKv('d', 5));
    expect(walk(history)).toEqual(['b 3.0 put', 'a 4.0 put', 'd 5.0 put']);
  });

  it('leaves revisions with nothing kept empty (a restored history) and starts again once empty', () => {
    const history = new RevisionHistory();
    history.add({ main: 5, sub: 0 }, putKv('a', 5));
    history.add({ main: 9, sub: 1 }, putKv('b', 9));
    expect(walk(history)).toEqual(['a 5.0 put', 'b 9.1 put']);
    expect(history.get({ main: 7, sub: 0 })).toBeUndefined();
    history.remove([
      { main: 5, sub: 0 },
      { main: 9, sub: 1 },
    ]);
    expect(walk(history)).toEqual([]);
    expect(history.bytes).toBe(0);
    history.add({ main: 12, sub: 0 }, putKv('c', 12));
    expect(walk(history)).toEqual(['c 12.0 put']);
  });

  it('refuses a change below the latest revision', () => {
    const history = new RevisionHistory();
    history.add({ main: 5, sub: 0 }, putKv('a', 5));
    history.add({ main: 6, sub: 0 }, putKv('b', 6));
    expect(() => history.add({ main: 5, sub: 1 }, putKv('c', 5))).toThrow(/below the latest/);
  });
});
