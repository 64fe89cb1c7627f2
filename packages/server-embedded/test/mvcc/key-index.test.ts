import { describe, expect, it } from 'vitest';
import { KeyIndex } from '../../src/mvcc/key-index.js';
import type { Revision } from '../../src/mvcc/revision.js';
import { b } from '../support/bytes.js';

const rev = (main: number, sub = 0): Revision => ({ main, sub });

/** a: put@2, put@3, delete@4, put@6, put@7 */
function twoGenerations(): KeyIndex {
  const index = new KeyIndex(b('a'));
  index.put(rev(2));
  index.put(rev(3));
  index.tombstone(rev(4));
  index.put(rev(6));
  index.put(rev(7, 1));
  return index;
}

describe('KeyIndex', () => {
  it('reports the modification, creation and version visible at each revision', () => {
    const index = twoGenerations();
    expect(index.get(1)).toBeUndefined();
    expect(index.get(2)).toEqual({ modified: rev(2), created: rev(2), version: 1 });
    expect(index.get(3)).toEqual({ modified: rev(3), created: rev(2), version: 2 });
    expect(index.get(4)).toBeUndefined();
    expect(index.get(5)).toBeUndefined();
    expect(index.get(6)).toEqual({ modified: rev(6), created: rev(6), version: 1 });
    expect(index.get(100)).toEqual({ modified: rev(7, 1), created: rev(6), version: 2 });
  });

  it('refuses a tombstone for a key that is not live', () => {
    const index = new KeyIndex(b('a'));
    index.put(rev(2));
    expect(index.tombstone(rev(3))).toBe(true);
    expect(index.tombstone(rev(4))).toBe(false);
  });

  it('rejects a put that is not after the last change', () => {
    const index = new KeyIndex(b('a'));
    index.put(rev(5, 1));
    expect(() => index.put(rev(5, 1))).toThrow();
    expect(() => index.put(rev(5, 0))).toThrow();
    index.put(rev(5, 2));
  });

  it('compaction keeps the revision visible at the compaction revision and later ones', () => {
    const index = twoGenerations();
    const dropped: Revision[] = [];
    index.compact(3, (r) => dropped.push(r));
    expect(dropped).toEqual([rev(2)]);
    expect(index.get(3)).toEqual({ modified: rev(3), created: rev(2), version: 2 });
    expect(index.get(7)).toEqual({ modified: rev(7, 1), created: rev(6), version: 2 });
  });

  it('compaction exactly at a tombstone keeps the tombstone', () => {
    const index = twoGenerations();
    const dropped: Revision[] = [];
    index.compact(4, (r) => dropped.push(r));
    expect(dropped).toEqual([rev(2), rev(3)]);
    expect(index.get(4)).toBeUndefined();
    expect(index.get(6)).toEqual({ modified: rev(6), created: rev(6), version: 1 });
  });

  it('compaction past a tombstone drops the whole ended generation', () => {
    const index = twoGenerations();
    const dropped: Revision[] = [];
    index.compact(5, (r) => dropped.push(r));
    expect(dropped).toEqual([rev(2), rev(3), rev(4)]);
    expect(index.get(6)?.version).toBe(1);
  });

  it('a deleted key is empty once compaction passes its tombstone', () => {
    const index = new KeyIndex(b('a'));
    index.put(rev(2));
    index.tombstone(rev(3));
    index.compact(3, () => {});
    expect(index.isEmpty).toBe(false);
    const dropped: Revision[] = [];
    index.compact(4, (r) => dropped.push(r));
    expect(dropped).toEqual([rev(3)]);
    expect(index.isEmpty).toBe(true);
  });

  it('versions still count puts that compaction dropped', () => {
    const index = new KeyIndex(b('a'));
    for (let main = 2; main <= 6; main++) index.put(rev(main));
    index.compact(5, () => {});
    expect(index.get(5)).toEqual({ modified: rev(5), created: rev(2), version: 4 });
    expect(index.get(6)).toEqual({ modified: rev(6), created: rev(2), version: 5 });
  });
});
