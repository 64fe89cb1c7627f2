import { describe, expect, it } from 'vitest';
import { Crc32c } from '../../src/mvcc/hash.js';
import { MvccStore } from '../../src/mvcc/store.js';
import { b } from '../support/bytes.js';

/** The history the expected hashes were measured on, with a real etcd 3.4.23 (HashKV). */
function measuredHistory(): MvccStore {
  const store = new MvccStore();
  const step = (apply: (write: ReturnType<MvccStore['write']>) => void) => {
    const write = store.write();
    apply(write);
    write.end();
  };
  step((w) => w.put(b('a'), b('1'), 0n)); // 2
  step((w) => w.put(b('b'), b('2'), 0x99n)); // 3
  step((w) => w.put(b('a'), b('3'), 0n)); // 4
  step((w) => w.deleteRange({ key: b('b') })); // 5
  step((w) => {
    w.put(b('c'), new Uint8Array(0), 0n);
    w.deleteRange({ key: b('a') });
  }); // 6
  return store;
}

describe('HashKV', () => {
  it('is CRC-32C', () => {
    expect(new Crc32c().update(b('123456789')).digest()).toBe(0xe3069283);
  });

  it('matches the RFC 3720 CRC-32C vectors, whole or fed in pieces at any offset', () => {
    const zeros = new Uint8Array(32);
    const ones = new Uint8Array(32).fill(0xff);
    const ascending = new Uint8Array(32).map((_, i) => i);
    expect(new Crc32c().update(zeros).digest()).toBe(0x8a9136aa);
    expect(new Crc32c().update(ones).digest()).toBe(0x62a8ab43);
    expect(new Crc32c().update(ascending).digest()).toBe(0x46dd794e);
    // Splits around the 8-byte steps, with bytes before `start` and after `end` left out.
    const padded = new Uint8Array(40);
    padded.set(ascending, 3);
    for (const cut of [1, 5, 7, 8, 9, 17, 31]) {
      const crc = new Crc32c().update(padded, 3, 3 + cut).update(padded, 3 + cut, 35);
      expect(crc.digest()).toBe(0x46dd794e);
    }
  });

  it('equals what a real etcd answers for the same history, at every revision', () => {
    const store = measuredHistory();
    expect([0, 2, 3, 4, 5].map((revision) => store.hashKV(revision).hash)).toEqual([
      751987638, 2587454935, 1296405442, 4145647800, 1628227305,
    ]);
    expect(store.hashKV(0)).toEqual({
      hash: 751987638,
      compactRevision: -1,
      hashRevision: 6,
      revision: 6,
    });
  });

  it('equals a real etcd after compactions, down to an empty store', () => {
    const store = measuredHistory();
    store.compact(4);
    expect(store.hashKV(0)).toMatchObject({ hash: 956003140, compactRevision: 4 });
    expect(store.hashKV(5)).toMatchObject({ hash: 1468967122, hashRevision: 5 });
    store.compact(6);
    expect(store.hashKV(0).hash).toBe(338889381);
    const write = store.write();
    write.deleteRange({ key: b('c') });
    write.end();
    expect(store.hashKV(0).hash).toBe(2208033361);
    store.compact(7);
    expect(store.hashKV(0)).toMatchObject({ hash: 1084519789, compactRevision: 7 });
  });

  it('is stable for equal histories and differs for different ones', () => {
    expect(measuredHistory().hashKV(0)).toEqual(measuredHistory().hashKV(0));
    const other = measuredHistory();
    const write = other.write();
    write.put(b('d'), b(''), 0n);
    write.end();
    expect(other.hashKV(6).hash).toBe(measuredHistory().hashKV(6).hash);
    expect(other.hashKV(0).hash).not.toBe(measuredHistory().hashKV(0).hash);
  });

  it('rejects compacted and future revisions; the compaction revision itself is fine', () => {
    const store = measuredHistory();
    store.compact(4);
    expect(() => store.hashKV(3)).toThrow('compacted');
    expect(() => store.hashKV(7)).toThrow('future');
    expect(store.hashKV(4).hashRevision).toBe(4);
  });
});
