// HashKV, computed the way etcd computes it, so that equal histories give equal hashes here and
// on a real etcd: CRC-32C (Castagnoli) over the bucket name "key", then, for each kept change in
// revision order, its backend key (8-byte big-endian main, '_', 8-byte big-endian sub, and 't' for
// a tombstone) followed by the protobuf encoding of its mvccpb.KeyValue.
import { mvccpb } from '@etcdkit/client/protocol';
import type { HistoryEntry } from './history.js';

const table = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** An incremental CRC-32C. */
export class Crc32c {
  #crc = 0xffffffff;

  update(bytes: Uint8Array): this {
    let c = this.#crc;
    for (let i = 0; i < bytes.length; i++) c = table[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
    this.#crc = c;
    return this;
  }

  digest(): number {
    return (this.#crc ^ 0xffffffff) >>> 0;
  }
}

const BUCKET_NAME = new TextEncoder().encode('key');

/** A hasher of history entries, started with the bucket name. */
export function newHistoryHasher(): { add(entry: HistoryEntry): void; digest(): number } {
  const crc = new Crc32c().update(BUCKET_NAME);
  return {
    add(entry) {
      crc.update(backendKey(entry));
      crc.update(encodeStored(entry));
    },
    digest: () => crc.digest(),
  };
}

function backendKey(entry: HistoryEntry): Uint8Array {
  const bytes = new Uint8Array(entry.tombstone ? 18 : 17);
  const view = new DataView(bytes.buffer);
  view.setBigInt64(0, BigInt(entry.revision.main));
  bytes[8] = 0x5f; // '_'
  view.setBigInt64(9, BigInt(entry.revision.sub));
  if (entry.tombstone) bytes[17] = 0x74; // 't'
  return bytes;
}

function encodeStored(entry: HistoryEntry): Uint8Array {
  const { kv } = entry;
  // etcd stores a tombstone as a KeyValue holding only the key.
  if (entry.tombstone) return mvccpb.KeyValue.encode({ key: kv.key }).finish();
  return mvccpb.KeyValue.encode({
    key: kv.key,
    createRevision: BigInt(kv.createRevision),
    modRevision: BigInt(kv.modRevision),
    version: BigInt(kv.version),
    value: kv.value,
    lease: kv.lease,
  }).finish();
}
