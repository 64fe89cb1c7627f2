import { describe, expect, it } from 'vitest';
import { rangeStreamChunks } from '../../src/kv/range-stream.js';
import { MvccStore } from '../../src/mvcc/store.js';
import { b, text } from '../support/bytes.js';

function storeWith(count: number): MvccStore {
  const store = new MvccStore();
  const write = store.write();
  for (let i = 0; i < count; i++) write.put(b(`k${String(i).padStart(4, '0')}`), b('v'), 0n);
  write.end();
  return store;
}

const everything = { key: b('k'), rangeEnd: b('l') };

describe('RangeStream chunks', () => {
  it('grow from 10 keys, carry disjoint slices in order, and only the last has header, more, count', () => {
    const chunks = [...rangeStreamChunks(storeWith(100), everything, 1.5 * 1024 * 1024)];
    expect(chunks.map((chunk) => chunk.kvs?.length)).toEqual([10, 20, 40, 30]);
    expect(
      chunks.slice(0, -1).every((chunk) => chunk.header === undefined && chunk.count === undefined),
    ).toBe(true);
    expect(chunks.at(-1)).toMatchObject({ header: { revision: 2n }, more: false, count: 100n });
    const keys = chunks.flatMap((chunk) => (chunk.kvs ?? []).map((kv) => text(kv.key)));
    expect(keys).toHaveLength(100);
    expect(keys).toEqual([...keys].sort());
    expect(new Set(keys).size).toBe(100);
  });

  it('stop at the limit and count what is left', () => {
    const chunks = [
      ...rangeStreamChunks(storeWith(100), { ...everything, limit: 25n }, 1.5 * 1024 * 1024),
    ];
    expect(chunks.map((chunk) => chunk.kvs?.length)).toEqual([10, 15]);
    expect(chunks.at(-1)).toMatchObject({ more: true, count: 100n });
  });

  it('shrink when chunks are far above max-request-bytes', () => {
    const store = new MvccStore();
    const write = store.write();
    for (let i = 0; i < 40; i++)
      write.put(b(`k${String(i).padStart(2, '0')}`), new Uint8Array(1000), 0n);
    write.end();
    const chunks = [...rangeStreamChunks(store, everything, 2000)];
    // ~10 kB, then ~5 kB are over twice the 2 kB target; ~2 kB chunks are within [0.5x, 2x].
    expect(chunks.map((chunk) => chunk.kvs?.length)).toEqual([10, 5, ...Array(12).fill(2), 1]);
  });

  it('read at the revision pinned when the stream started', () => {
    const store = storeWith(30);
    const stream = rangeStreamChunks(store, everything, 1.5 * 1024 * 1024);
    expect(stream.next().value?.kvs).toHaveLength(10);
    const write = store.write();
    write.put(b('k0029'), b('changed'), 0n);
    write.put(b('k0015x'), b('new'), 0n);
    write.end();
    const rest = [...stream];
    expect(rest.at(-1)).toMatchObject({ header: { revision: 2n }, count: 30n });
    const values = rest.flatMap((chunk) => chunk.kvs ?? []).map((kv) => text(kv.value));
    expect(values).toEqual(Array(20).fill('v'));
  });

  it('end with the compacted error when a compaction passes the pinned revision', () => {
    const store = storeWith(30);
    const stream = rangeStreamChunks(store, everything, 1.5 * 1024 * 1024);
    stream.next();
    const write = store.write();
    write.put(b('x'), b(''), 0n);
    write.end();
    store.compact(3);
    expect(() => stream.next()).toThrow('etcdserver: mvcc: required revision has been compacted');
  });

  it('answer count_only with one message', () => {
    const chunks = [...rangeStreamChunks(storeWith(30), { ...everything, countOnly: true }, 1024)];
    expect(chunks).toEqual([{ header: { revision: 2n }, count: 30n }]);
  });

  it('answer an empty range with one message', () => {
    const chunks = [...rangeStreamChunks(storeWith(3), { key: b('z') }, 1024)];
    expect(chunks).toEqual([{ header: { revision: 2n }, kvs: [], more: false, count: 0n }]);
  });
});
