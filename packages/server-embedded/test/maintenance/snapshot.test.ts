import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeSnapshot } from '../../src/index.js';
import {
  encodeSnapshot,
  SNAPSHOT_CHUNK_BYTES,
  type SnapshotMetadata,
  snapshotMessages,
} from '../../src/maintenance/snapshot.js';
import { MvccStore } from '../../src/mvcc/store.js';
import { b, text } from '../support/bytes.js';

const metadata: SnapshotMetadata = {
  version: '3.7.0',
  clusterId: 0xffff_ffff_ffff_fffen,
  memberId: 7n,
  revision: 4,
  compactRevision: -1,
  members: [
    {
      id: 7n,
      name: 'default',
      peerUrls: ['http://localhost:2380'],
      clientUrls: [],
      isLearner: false,
    },
  ],
  leases: [{ id: -3n, ttl: 60 }],
  alarms: [{ memberId: 7n, type: 1 }],
};

function storeWithHistory(): MvccStore {
  const store = new MvccStore();
  for (const [key, value] of [
    ['a', '1'],
    ['b', '2'],
  ] as const) {
    const write = store.write();
    write.put(b(key), b(value), 0n);
    write.end();
  }
  const write = store.write();
  write.deleteRange({ key: b('a') });
  write.put(b('c'), b('3'), 5n);
  write.end();
  return store;
}

describe('snapshot format', () => {
  it('round-trips the metadata and every kept change', () => {
    const store = storeWithHistory();
    const data = encodeSnapshot(metadata, store.history);
    expect(data.length % 4096).toBe(0);
    expect(Buffer.from(data.subarray(0, 16)).toString()).toBe('ETCDKIT-SNAPSHOT');
    const decoded = decodeSnapshot(data);
    expect(decoded.metadata).toEqual(metadata);
    expect(
      decoded.changes.map((c) => [c.main, c.sub, c.tombstone, text(c.kv.key), text(c.kv.value)]),
    ).toEqual([
      [2, 0, false, 'a', '1'],
      [3, 0, false, 'b', '2'],
      [4, 0, true, 'a', ''],
      [4, 1, false, 'c', '3'],
    ]);
    expect(decoded.changes[3]?.kv).toMatchObject({
      createRevision: 4,
      modRevision: 4,
      version: 1,
      lease: 5n,
    });
    expect(decoded.changes[2]?.kv.modRevision).toBe(4);
  });

  it('keeps long values, negative and 64-bit leases, and deleted ranges through a round trip', () => {
    const store = new MvccStore();
    const long = new Uint8Array(300).map((_, i) => i % 256);
    let write = store.write();
    write.put(b('k'.repeat(200)), long, -9n);
    write.put(b('m'), b(''), 2n ** 62n + 1n);
    write.end();
    write = store.write();
    write.deleteRange({ key: b('k'), end: b('l') });
    write.end();
    const decoded = decodeSnapshot(encodeSnapshot({ ...metadata, revision: 3 }, store.history));
    expect(
      decoded.changes.map((c) => [c.main, c.sub, c.tombstone, c.kv.key.length, c.kv.lease]),
    ).toEqual([
      [2, 0, false, 200, -9n],
      [2, 1, false, 1, 2n ** 62n + 1n],
      [3, 0, true, 200, 0n],
    ]);
    expect(decoded.changes[0]?.kv.value).toEqual(long);
    expect(decoded.changes[2]?.kv.modRevision).toBe(3);
  });

  it('is the same bytes for the same state', () => {
    const one = storeWithHistory();
    const two = storeWithHistory();
    expect(encodeSnapshot(metadata, one.history)).toEqual(encodeSnapshot(metadata, two.history));
  });

  it('refuses what is not one', () => {
    expect(() => decodeSnapshot(new Uint8Array(4096))).toThrow(/not an etcdkit embedded snapshot/);
    const data = encodeSnapshot(metadata, new MvccStore().history);
    expect(() => decodeSnapshot(data.subarray(0, 30))).toThrow(/truncated/);
  });

  it('streams 32 KiB chunks counting down, then the SHA-256 of them all', () => {
    const data = new Uint8Array(SNAPSHOT_CHUNK_BYTES * 2 + 4096).map((_, i) => i % 251);
    const messages = [...snapshotMessages(data, '3.7.0')];
    expect(messages.map((m) => [m.blob?.length, m.remainingBytes])).toEqual([
      [SNAPSHOT_CHUNK_BYTES, BigInt(SNAPSHOT_CHUNK_BYTES + 4096)],
      [SNAPSHOT_CHUNK_BYTES, 4096n],
      [4096, 0n],
      [32, 0n],
    ]);
    expect(Buffer.from(messages[3]?.blob ?? [])).toEqual(
      createHash('sha256').update(data).digest(),
    );
    expect(messages.every((m) => m.version === '3.7.0')).toBe(true);
  });
});
