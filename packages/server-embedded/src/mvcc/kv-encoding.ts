// A KeyValue's protobuf encoding written straight from the store's fields into one growing buffer,
// byte for byte what protobufjs writes for the same message (zero fields left out, int64 as
// 64-bit varints): HashKV and a watch's catch-up encode every change they read, and going through
// a KeyValue object, a value view and protobufjs's writer cost most of their time (issue 28.1).

/** Bytes of a varint encoding `value` (a non-negative integer below 2^53). */
export function varintSize(value: number): number {
  let size = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

/** Bytes of an int64 field's varint: negative values take 10, as two's complement. */
export function int64Size(value: bigint): number {
  if (value >= 0n && value <= 9007199254740991n) return varintSize(Number(value));
  return wideVarint(value).length;
}

/**
 * Varints of int64s outside [0, 2^53) (lease ids, cluster and member ids), kept: the same few are
 * written in every response and event, and working one out allocates a BigInt per 7 bits.
 */
const wideVarints = new Map<bigint, Uint8Array>();
const WIDE_VARINTS_KEPT = 1024;

/** The varint of `value`'s 64 bits (two's complement), as protobuf writes an int64. */
export function wideVarint(value: bigint): Uint8Array {
  let bytes = wideVarints.get(value);
  if (bytes !== undefined) return bytes;
  let rest = BigInt.asUintN(64, value);
  const out: number[] = [];
  while (rest >= 128n) {
    out.push(Number(rest & 127n) | 128);
    rest >>= 7n;
  }
  out.push(Number(rest));
  bytes = Uint8Array.from(out);
  if (wideVarints.size >= WIDE_VARINTS_KEPT) wideVarints.clear();
  wideVarints.set(value, bytes);
  return bytes;
}

/** Protobuf bytes written into a buffer that grows as needed; `bytes` up to `length` are the output. */
export class ProtoWriter {
  bytes: Uint8Array;
  length = 0;

  constructor(capacity = 1024) {
    this.bytes = new Uint8Array(capacity);
  }

  /** Makes room for `more` bytes after `length`; the writes below assume it was made. */
  reserve(more: number): void {
    const needed = this.length + more;
    if (needed <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(needed, this.bytes.length * 2));
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
  }

  /** A varint of a non-negative integer below 2^53. */
  varint(value: number): void {
    const bytes = this.bytes;
    let at = this.length;
    while (value >= 128) {
      // The low 7 bits survive ToInt32's modulo 2^32.
      bytes[at++] = (value & 127) | 128;
      value = Math.floor(value / 128);
    }
    bytes[at++] = value;
    this.length = at;
  }

  /** An int64 as protobuf writes it: a negative value as its 64-bit two's complement. */
  int64(value: bigint): void {
    if (value >= 0n && value <= 9007199254740991n) {
      this.varint(Number(value));
      return;
    }
    const varint = wideVarint(value);
    this.bytes.set(varint, this.length);
    this.length += varint.length;
  }

  /** `length` bytes of `source` from `offset`. */
  raw(source: Uint8Array, offset: number, length: number): void {
    const bytes = this.bytes;
    const at = this.length;
    // A loop beats a subarray (an object) for the short keys and values most are.
    if (length <= 64) {
      for (let i = 0; i < length; i++) bytes[at + i] = source[offset + i]!;
    } else if (offset === 0 && length === source.length) bytes.set(source, at);
    else bytes.set(source.subarray(offset, offset + length), at);
    this.length = at + length;
  }
}

/** The fields of a KeyValue to encode; the value is `valueLength` bytes of `values` from `valueOffset`. */
export interface KeyValueFields {
  key: Uint8Array;
  createRevision: number;
  modRevision: number;
  version: number;
  values: Uint8Array;
  valueOffset: number;
  valueLength: number;
  lease: bigint;
}

/** Fields of an empty KeyValue: an object to fill and reuse, one per reader rather than one per read. */
export function emptyKeyValueFields(): KeyValueFields {
  const empty = new Uint8Array(0);
  return {
    key: empty,
    createRevision: 0,
    modRevision: 0,
    version: 0,
    values: empty,
    valueOffset: 0,
    valueLength: 0,
    lease: 0n,
  };
}

/** Bytes of `kv`'s encoding. */
export function keyValueSize(kv: KeyValueFields): number {
  const keyLength = kv.key.length;
  let size = keyLength === 0 ? 0 : 1 + varintSize(keyLength) + keyLength;
  if (kv.createRevision !== 0) size += 1 + varintSize(kv.createRevision);
  if (kv.modRevision !== 0) size += 1 + varintSize(kv.modRevision);
  if (kv.version !== 0) size += 1 + varintSize(kv.version);
  if (kv.valueLength !== 0) size += 1 + varintSize(kv.valueLength) + kv.valueLength;
  if (kv.lease !== 0n) size += 1 + int64Size(kv.lease);
  return size;
}

/** Writes `kv`'s encoding (keyValueSize(kv) bytes, which the caller reserved). */
export function writeKeyValue(out: ProtoWriter, kv: KeyValueFields): void {
  const keyLength = kv.key.length;
  if (keyLength !== 0) {
    out.bytes[out.length++] = 10;
    out.varint(keyLength);
    out.raw(kv.key, 0, keyLength);
  }
  if (kv.createRevision !== 0) {
    out.bytes[out.length++] = 16;
    out.varint(kv.createRevision);
  }
  if (kv.modRevision !== 0) {
    out.bytes[out.length++] = 24;
    out.varint(kv.modRevision);
  }
  if (kv.version !== 0) {
    out.bytes[out.length++] = 32;
    out.varint(kv.version);
  }
  if (kv.valueLength !== 0) {
    out.bytes[out.length++] = 42;
    out.varint(kv.valueLength);
    out.raw(kv.values, kv.valueOffset, kv.valueLength);
  }
  if (kv.lease !== 0n) {
    out.bytes[out.length++] = 48;
    out.int64(kv.lease);
  }
}

/** WatchResponse.events: field 11, length-delimited. */
const EVENTS_TAG = (11 << 3) | 2;
/** Event.kv: field 2, length-delimited. */
const KV_TAG = (2 << 3) | 2;

/** Bytes of an mvccpb.Event written as a WatchResponse `events` field, its kv `kvSize` bytes. */
export function eventFieldSize(tombstone: boolean, kvSize: number): number {
  // Event.type is left out for PUT (0); DELETE is tag and 1.
  const eventSize = (tombstone ? 2 : 0) + 1 + varintSize(kvSize) + kvSize;
  return 1 + varintSize(eventSize) + eventSize;
}

/**
 * Writes an mvccpb.Event of `kv` (keyValueSize(kv) is `kvSize`) as a WatchResponse `events`
 * field: eventFieldSize(tombstone, kvSize) bytes, which the caller reserved.
 */
export function writeEventField(
  out: ProtoWriter,
  tombstone: boolean,
  kv: KeyValueFields,
  kvSize: number,
): void {
  out.bytes[out.length++] = EVENTS_TAG;
  out.varint((tombstone ? 2 : 0) + 1 + varintSize(kvSize) + kvSize);
  if (tombstone) {
    out.bytes[out.length++] = 1 << 3;
    out.bytes[out.length++] = 1;
  }
  out.bytes[out.length++] = KV_TAG;
  out.varint(kvSize);
  writeKeyValue(out, kv);
}
