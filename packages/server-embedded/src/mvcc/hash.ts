// HashKV, computed the way etcd computes it, so that equal histories give equal hashes here and
// on a real etcd: CRC-32C (Castagnoli) over the bucket name "key", then, for each kept change in
// revision order, its backend key (8-byte big-endian main, '_', 8-byte big-endian sub, and 't' for
// a tombstone) followed by the protobuf encoding of its mvccpb.KeyValue. Each change is encoded
// straight from the history's fields into one reused buffer (no KeyValue, no protobufjs).
import {
  type KeyValueFields,
  keyValueSize,
  ProtoWriter,
  varintSize,
  writeKeyValue,
} from './kv-encoding.js';

/**
 * CRC-32C tables for slicing by 8: table k (at k * 256) gives the CRC of a byte followed by k zero
 * bytes, so eight bytes are folded in per step with eight lookups instead of one step per byte.
 */
const TABLES = (() => {
  const t = new Uint32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  for (let n = 0; n < 256; n++) {
    for (let k = 1; k < 8; k++) {
      const previous = t[(k - 1) * 256 + n]!;
      t[k * 256 + n] = (previous >>> 8) ^ t[previous & 0xff]!;
    }
  }
  return t;
})();

/** An incremental CRC-32C. */
export class Crc32c {
  #crc = 0xffffffff;

  /** Adds `bytes` from `start` up to `end` (default: all of them). */
  update(bytes: Uint8Array, start = 0, end = bytes.length): this {
    const t = TABLES;
    let c = this.#crc;
    let i = start;
    for (; i + 8 <= end; i += 8) {
      const low =
        c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
      const high =
        bytes[i + 4]! | (bytes[i + 5]! << 8) | (bytes[i + 6]! << 16) | (bytes[i + 7]! << 24);
      c =
        t[1792 + (low & 0xff)]! ^
        t[1536 + ((low >>> 8) & 0xff)]! ^
        t[1280 + ((low >>> 16) & 0xff)]! ^
        t[1024 + (low >>> 24)]! ^
        t[768 + (high & 0xff)]! ^
        t[512 + ((high >>> 8) & 0xff)]! ^
        t[256 + ((high >>> 16) & 0xff)]! ^
        t[high >>> 24]!;
    }
    for (; i < end; i++) c = t[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
    this.#crc = c;
    return this;
  }

  digest(): number {
    return (this.#crc ^ 0xffffffff) >>> 0;
  }
}

const BUCKET_NAME = new TextEncoder().encode('key');

/** A hasher of history changes, started with the bucket name. */
export class HistoryHasher {
  readonly #crc = new Crc32c().update(BUCKET_NAME);
  readonly #out = new ProtoWriter(256);

  /** Adds the change at (kv.modRevision, sub); a tombstone's `kv` needs only its key. */
  add(sub: number, tombstone: boolean, kv: KeyValueFields): void {
    const out = this.#out;
    out.length = 0;
    const keyLength = kv.key.length;
    // etcd stores a tombstone as a KeyValue holding only the key.
    const stored = tombstone
      ? keyLength === 0
        ? 0
        : 1 + varintSize(keyLength) + keyLength
      : keyValueSize(kv);
    out.reserve(18 + stored);
    // The backend key: 8-byte big-endian main, '_', 8-byte big-endian sub, 't' for a tombstone.
    writeBigEndian64(out, kv.modRevision);
    out.bytes[out.length++] = 0x5f; // '_'
    writeBigEndian64(out, sub);
    if (tombstone) {
      out.bytes[out.length++] = 0x74; // 't'
      if (keyLength !== 0) {
        out.bytes[out.length++] = 10;
        out.varint(keyLength);
        out.raw(kv.key, 0, keyLength);
      }
    } else {
      writeKeyValue(out, kv);
    }
    this.#crc.update(out.bytes, 0, out.length);
  }

  digest(): number {
    return this.#crc.digest();
  }
}

/** `value` (a non-negative integer below 2^53) as 8 big-endian bytes. */
function writeBigEndian64(out: ProtoWriter, value: number): void {
  const bytes = out.bytes;
  let at = out.length;
  let high = Math.floor(value / 0x100000000);
  let low = value >>> 0;
  for (let i = 3; i >= 0; i--) {
    bytes[at + i] = high & 0xff;
    high >>>= 8;
  }
  at += 4;
  for (let i = 3; i >= 0; i--) {
    bytes[at + i] = low & 0xff;
    low >>>= 8;
  }
  out.length = at + 4;
}
