import { describe, expect, it } from 'vitest';
import { LeaseTable } from '../../src/lease/lease-table.js';
import { MvccStore } from '../../src/mvcc/store.js';
import type { CommittedRevision, KeyValue } from '../../src/mvcc/types.js';
import { b, text } from '../support/bytes.js';
import { kvSummary } from './kv-summary.js';

const ALL = { key: b('\0'), end: new Uint8Array(0) };

function put(store: MvccStore, key: string, value: string, lease = 0n): number {
  const write = store.write();
  const revision = write.put(b(key), b(value), lease);
  write.end();
  return revision;
}

function del(store: MvccStore, key: string, end?: string): number {
  const write = store.write();
  const deleted = write.deleteRange({ key: b(key), end: end === undefined ? undefined : b(end) });
  write.end();
  return deleted;
}

function summary(kv: KeyValue | undefined) {
  return kv === undefined ? undefined : kvSummary(kv);
}

function keys(store: MvccStore, options?: Parameters<MvccStore['range']>[1]): string[] {
  return store.range(ALL, options).kvs.map((kv) => text(kv.key));
}

describe('MvccStore revisions', () => {
  it('a fresh store is at revision 1 with no compaction', () => {
    const store = new MvccStore();
    expect(store.revision).toBe(1);
    expect(store.compactRevision).toBe(-1);
    expect(store.range(ALL)).toEqual({ kvs: [], count: 0, revision: 1 });
  });

  it('the first put makes revision 2 with create = mod = 2 and version 1', () => {
    const store = new MvccStore();
    expect(put(store, 'a', '1')).toBe(2);
    expect(store.revision).toBe(2);
    expect(summary(store.range({ key: b('a') }).kvs[0])).toEqual({
      key: 'a',
      value: '1',
      create: 2,
      mod: 2,
      version: 1,
      lease: 0n,
    });
  });

  it('an identical put still bumps: version + 1, create revision kept', () => {
    const store = new MvccStore();
    put(store, 'a', '1');
    expect(put(store, 'a', '1')).toBe(3);
    expect(summary(store.range({ key: b('a') }).kvs[0])).toMatchObject({
      create: 2,
      mod: 3,
      version: 2,
    });
  });

  it('delete then put starts a new generation: version 1, new create revision', () => {
    const store = new MvccStore();
    put(store, 'a', '1');
    put(store, 'a', '2');
    expect(del(store, 'a')).toBe(1);
    expect(store.revision).toBe(4);
    put(store, 'a', '3');
    expect(summary(store.range({ key: b('a') }).kvs[0])).toMatchObject({
      create: 5,
      mod: 5,
      version: 1,
    });
  });

  it('a delete that matches nothing makes no revision and no event', () => {
    const store = new MvccStore();
    const committed: CommittedRevision[] = [];
    store.subscribe((c) => committed.push(c));
    put(store, 'a', '1');
    expect(del(store, 'b')).toBe(0);
    expect(del(store, 'x', 'z')).toBe(0);
    expect(store.revision).toBe(2);
    expect(committed.map((c) => c.revision)).toEqual([2]);
  });

  it('every change of one write shares one revision, with events in op order', () => {
    const store = new MvccStore();
    put(store, 'b', '0');
    const committed: CommittedRevision[] = [];
    store.subscribe((c) => committed.push(c));
    const write = store.write();
    expect(write.put(b('c'), b('1'), 0n)).toBe(3);
    expect(write.deleteRange({ key: b('b') })).toBe(1);
    expect(write.put(b('a'), b('2'), 0n)).toBe(3);
    expect(write.revision).toBe(3);
    expect(store.revision).toBe(2);
    write.end();
    expect(store.revision).toBe(3);
    expect(committed).toHaveLength(1);
    expect(committed[0]!.revision).toBe(3);
    expect(committed[0]!.events.map((e) => [e.type, text(e.kv.key), e.kv.modRevision])).toEqual([
      ['put', 'c', 3],
      ['delete', 'b', 3],
      ['put', 'a', 3],
    ]);
    expect(store.changesAt(3)).toEqual(committed[0]);
  });

  it('replays a put its own request then deleted (a nested txn) with its version, and a later generation', () => {
    const store = new MvccStore();
    put(store, 'a', '1');
    const write = store.write();
    write.put(b('a'), b('2'), 0n);
    write.deleteRange({ key: b('a') });
    write.put(b('a'), b('3'), 0n);
    write.end();
    expect(store.changesAt(3).events.map((e) => [e.type, summary(e.kv)])).toEqual([
      ['put', { key: 'a', value: '2', create: 2, mod: 3, version: 2, lease: 0n }],
      ['delete', { key: 'a', value: '', create: 0, mod: 3, version: 0, lease: 0n }],
      ['put', { key: 'a', value: '3', create: 3, mod: 3, version: 1, lease: 0n }],
    ]);
    expect(summary(store.range({ key: b('a') }).kvs[0])).toEqual({
      key: 'a',
      value: '3',
      create: 3,
      mod: 3,
      version: 1,
      lease: 0n,
    });
  });

  it('reads inside a write see its own earlier changes', () => {
    const store = new MvccStore();
    put(store, 'a', '1');
    const write = store.write();
    expect(write.range({ key: b('a') }).revision).toBe(2);
    write.put(b('a'), b('2'), 0n);
    const read = write.range({ key: b('a') });
    expect(read.revision).toBe(3);
    expect(summary(read.kvs[0])).toMatchObject({ value: '2', version: 2, mod: 3 });
    // Reading at the revision the write started from still sees the old value.
    expect(text(write.range({ key: b('a') }, { revision: 2 }).kvs[0]!.value)).toBe('1');
    write.deleteRange({ key: b('a') });
    expect(write.range({ key: b('a') }).kvs).toEqual([]);
    write.end();
  });

  it('a write with no changes commits nothing', () => {
    const store = new MvccStore();
    const write = store.write();
    write.range(ALL);
    expect(write.end()).toBeUndefined();
    expect(store.revision).toBe(1);
  });

  it('allows only one open write', () => {
    const store = new MvccStore();
    const write = store.write();
    expect(() => store.write()).toThrow(/already in progress/);
    write.end();
    expect(() => write.put(b('a'), b(''), 0n)).toThrow(/ended/);
    store.write().end();
  });

  it('keeps its own copy of keys and values', () => {
    const store = new MvccStore();
    const key = b('a');
    const value = b('1');
    const write = store.write();
    write.put(key, value, 0n);
    write.end();
    key[0] = 0x7a;
    value[0] = 0x39;
    expect(summary(store.range({ key: b('a') }).kvs[0])).toMatchObject({ key: 'a', value: '1' });
  });
});

describe('MvccStore ranges', () => {
  function abcde(): MvccStore {
    const store = new MvccStore();
    for (const key of ['a', 'b', 'c', 'd', 'e']) put(store, key, key.toUpperCase());
    return store;
  }

  it('reads one key, a half-open range, or every key from a start', () => {
    const store = abcde();
    expect(store.range({ key: b('c') }).kvs.map((kv) => text(kv.key))).toEqual(['c']);
    expect(store.range({ key: b('b'), end: b('d') }).kvs.map((kv) => text(kv.key))).toEqual([
      'b',
      'c',
    ]);
    expect(
      store.range({ key: b('c'), end: new Uint8Array(0) }).kvs.map((kv) => text(kv.key)),
    ).toEqual(['c', 'd', 'e']);
    expect(store.range({ key: b('d'), end: b('b') })).toEqual({ kvs: [], count: 0, revision: 6 });
    expect(store.range({ key: b('c'), end: b('c') }).kvs).toEqual([]);
  });

  it('orders keys byte-wise, including bytes above 0x7f', () => {
    const store = new MvccStore();
    const write = store.write();
    for (const key of [[0xff], [0x61, 0x00], [0x61], [0x80], [0x00]]) {
      write.put(new Uint8Array(key), b(''), 0n);
    }
    write.end();
    expect(
      store
        .range({ key: new Uint8Array([0]), end: new Uint8Array(0) })
        .kvs.map((kv) => [...kv.key]),
    ).toEqual([[0x00], [0x61], [0x61, 0x00], [0x80], [0xff]]);
  });

  it('limit returns the first keys and count stays the total', () => {
    const store = abcde();
    const result = store.range(ALL, { limit: 2 });
    expect(result.kvs.map((kv) => text(kv.key))).toEqual(['a', 'b']);
    expect(result.count).toBe(5);
    expect(store.range(ALL, { limit: 2, withTotalCount: false }).count).toBe(2);
    expect(store.range(ALL, { limit: -1 }).kvs).toHaveLength(5);
  });

  it('countOnly counts without returning keys', () => {
    const store = abcde();
    expect(store.range(ALL, { countOnly: true, limit: 1 })).toEqual({
      kvs: [],
      count: 5,
      revision: 6,
    });
  });

  it('reads history at an older revision, answering with the current revision', () => {
    const store = abcde();
    put(store, 'a', 'A2');
    del(store, 'b');
    const old = store.range(ALL, { revision: 3 });
    expect(old.revision).toBe(8);
    expect(old.kvs.map(summary)).toEqual([
      { key: 'a', value: 'A', create: 2, mod: 2, version: 1, lease: 0n },
      { key: 'b', value: 'B', create: 3, mod: 3, version: 1, lease: 0n },
    ]);
    expect(keys(store)).toEqual(['a', 'c', 'd', 'e']);
    expect(keys(store, { revision: 7 })).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(keys(store, { revision: -5 })).toEqual(['a', 'c', 'd', 'e']);
  });

  it('a future revision is an error', () => {
    const store = abcde();
    expect(() => store.range(ALL, { revision: 7 })).toThrow(
      'etcdserver: mvcc: required revision is a future revision',
    );
  });
});

describe('MvccStore compaction', () => {
  it('reads below the compaction revision fail; reading exactly at it is fine', () => {
    const store = new MvccStore();
    put(store, 'a', '1'); // 2
    put(store, 'a', '2'); // 3
    put(store, 'b', '1'); // 4
    store.compact(3);
    expect(store.compactRevision).toBe(3);
    expect(() => store.range(ALL, { revision: 2 })).toThrow(
      'etcdserver: mvcc: required revision has been compacted',
    );
    expect(store.range(ALL, { revision: 3 }).kvs.map(summary)).toEqual([
      { key: 'a', value: '2', create: 2, mod: 3, version: 2, lease: 0n },
    ]);
    expect(keys(store)).toEqual(['a', 'b']);
  });

  it('compacting at or below the last compaction is compacted, above current is future', () => {
    const store = new MvccStore();
    put(store, 'a', '1');
    put(store, 'a', '2');
    expect(() => store.compact(4)).toThrow(
      'etcdserver: mvcc: required revision is a future revision',
    );
    store.compact(3);
    expect(() => store.compact(3)).toThrow(
      'etcdserver: mvcc: required revision has been compacted',
    );
    expect(() => store.compact(2)).toThrow(
      'etcdserver: mvcc: required revision has been compacted',
    );
    expect(store.revision).toBe(3);
  });

  it('keeps the latest change of each key at or below the compaction revision, and all after', () => {
    const store = new MvccStore();
    put(store, 'a', '1'); // 2
    put(store, 'b', '1'); // 3
    del(store, 'b'); // 4
    put(store, 'a', '2'); // 5
    put(store, 'c', '1'); // 6
    del(store, 'c'); // 7
    store.compact(6);
    const kept = [...store.history.upTo(100)].map((e) => [
      e.revision.main,
      text(e.kv.key),
      e.tombstone,
    ]);
    expect(kept).toEqual([
      [5, 'a', false],
      [6, 'c', false],
      [7, 'c', true],
    ]);
    store.compact(7);
    expect([...store.history.upTo(100)].map((e) => e.revision.main)).toEqual([5, 7]);
    expect(store.index.size).toBe(2);
    put(store, 'd', '1'); // 8
    store.compact(8);
    expect([...store.history.upTo(100)].map((e) => e.revision.main)).toEqual([5, 8]);
    expect(store.index.size).toBe(2);
  });

  it('the changes of every revision from the compaction revision on stay complete', () => {
    const store = new MvccStore();
    put(store, 'a', '1'); // 2
    const write = store.write(); // 3
    write.put(b('b'), b('1'), 0n);
    write.deleteRange({ key: b('a') });
    write.end();
    store.compact(3);
    expect(store.changesAt(3).events.map((e) => [e.type, text(e.kv.key)])).toEqual([
      ['put', 'b'],
      ['delete', 'a'],
    ]);
    expect(() => store.changesAt(2)).toThrow('compacted');
    expect(() => store.changesAt(4)).toThrow('future');
  });

  it('previousValue reads the value before a revision unless it is compacted', () => {
    const store = new MvccStore();
    put(store, 'a', '1'); // 2
    put(store, 'a', '2'); // 3
    put(store, 'a', '3'); // 4
    expect(store.previousValue(b('a'), 2)).toBeUndefined();
    expect(text(store.previousValue(b('a'), 4)?.value)).toBe('2');
    store.compact(3);
    expect(text(store.previousValue(b('a'), 4)?.value)).toBe('2');
    expect(store.previousValue(b('a'), 3)).toBeUndefined();
  });
});

describe('MvccStore leases', () => {
  it('attaches keys to leases, moves them, and detaches them on delete', () => {
    const leases = new LeaseTable();
    const store = new MvccStore({ lessor: leases });
    leases.grant(1n);
    leases.grant(2n);
    put(store, 'a', '1', 1n);
    put(store, 'b', '1', 1n);
    put(store, 'c', '1', 2n);
    expect(leases.keys(1n).map(text)).toEqual(['a', 'b']);
    put(store, 'b', '2', 2n);
    put(store, 'a', '2');
    expect(leases.keys(1n)).toEqual([]);
    expect(leases.keys(2n).map(text)).toEqual(['b', 'c']);
    del(store, 'c');
    expect(leases.keys(2n).map(text)).toEqual(['b']);
    expect(summary(store.range({ key: b('b') }).kvs[0])?.lease).toBe(2n);
  });

  it('revoking a lease deletes its keys in one revision, in key order', () => {
    const leases = new LeaseTable();
    const store = new MvccStore({ lessor: leases });
    leases.grant(7n);
    put(store, 'z', '1', 7n); // 2
    put(store, 'm', '1', 7n); // 3
    put(store, 'a', '1', 7n); // 4
    put(store, 'other', '1'); // 5
    const committed: CommittedRevision[] = [];
    store.subscribe((c) => committed.push(c));
    expect(leases.revoke(7n, store)).toBe(true);
    expect(store.revision).toBe(6);
    expect(committed[0]?.events.map((e) => [e.type, text(e.kv.key)])).toEqual([
      ['delete', 'a'],
      ['delete', 'm'],
      ['delete', 'z'],
    ]);
    expect(leases.has(7n)).toBe(false);
    expect(leases.revoke(7n, store)).toBe(false);
  });

  it('revoking a lease without keys makes no revision', () => {
    const leases = new LeaseTable();
    const store = new MvccStore({ lessor: leases });
    leases.grant(7n);
    leases.revoke(7n, store);
    expect(store.revision).toBe(1);
  });
});

describe('MvccStore listeners', () => {
  it('a failing listener neither undoes the commit nor starves the others', async () => {
    const store = new MvccStore();
    const seen: number[] = [];
    const failures: unknown[] = [];
    const onError = (error: unknown) => failures.push(error);
    process.on('uncaughtException', onError);
    try {
      store.subscribe(() => {
        throw new Error('boom');
      });
      const unsubscribe = store.subscribe((c) => seen.push(c.revision));
      put(store, 'a', '1');
      unsubscribe();
      put(store, 'a', '2');
      await new Promise((resolve) => setTimeout(resolve, 10));
    } finally {
      process.off('uncaughtException', onError);
    }
    expect(seen).toEqual([2]);
    expect(store.revision).toBe(3);
    expect(failures).toHaveLength(2);
  });
});
