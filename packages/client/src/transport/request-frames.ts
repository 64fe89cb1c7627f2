// The gRPC frame of a request: header and protobuf message in one buffer. The hottest requests
// (KV Range, Put and Txn; a watch stream's create and cancel, a lease keepalive) have hand-written encoders that size the message first and write it straight
// into the frame, without protobufjs's Writer (an object per field) and the copy into the frame.
// The generated code stays the source of truth for the wire format: request-frames.test.ts checks
// that these give its bytes exactly, and any request they do not cover (a field given as a number
// or a base64 string, unknown fields) goes through it.
import type { MethodDescriptor } from '../generated/methods.js';
import type { etcdserverpb } from '../generated/protocol.js';
import { encodeMessage, MESSAGE_PREFIX_BYTES } from './h2/grpc-message.js';

/** Encodes one message into its frame, or returns undefined when the generated code must. */
type HotEncoder = (message: never) => Buffer | undefined;

/** The frame of `request` for `method`. Throws what the generated encoder throws. */
export function encodeRequestFrame<Req>(
  method: MethodDescriptor<Req, unknown>,
  request: Req,
): Buffer {
  const hot = HOT.get(method.path);
  return hot?.(request as never) ?? encodeMessage(method.request.encode(request).finish());
}

const TWO_32 = 0x1_0000_0000;

/** Bytes of a varint of the non-negative safe integer `n`. */
function varintBytes(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = n < TWO_32 ? n >>> 7 : Math.floor(n / 128);
    size++;
  }
  return size;
}

/** An int64 field's value as protobuf writes it: two's complement in 64 bits. */
function uint64Of(value: bigint): bigint {
  return value < 0n ? BigInt.asUintN(64, value) : value;
}

function bigVarintBytes(value: bigint): number {
  if (value < 0x1_0000_0000n) return varintBytes(Number(value));
  let size = 1;
  for (let v = value >> 7n; v > 0n; v >>= 7n) size++;
  return size;
}

/** Writes fields into one buffer; `pos` is where the next byte goes. */
class FrameWriter {
  readonly buf: Buffer;
  pos = MESSAGE_PREFIX_BYTES;
  /** The embedded messages' sizes in the order they are written (the sizing pass found them). */
  readonly #sizes: readonly number[];
  #nextSize = 0;

  constructor(messageBytes: number, sizes: readonly number[]) {
    this.#sizes = sizes;
    this.buf = Buffer.allocUnsafe(MESSAGE_PREFIX_BYTES + messageBytes);
    this.buf[0] = 0;
    this.buf.writeUInt32BE(messageBytes, 1);
  }

  varint(n: number): void {
    const buf = this.buf;
    while (n >= 0x80) {
      buf[this.pos++] = (n & 0x7f) | 0x80;
      n = n < TWO_32 ? n >>> 7 : Math.floor(n / 128);
    }
    buf[this.pos++] = n;
  }

  bigVarint(value: bigint): void {
    if (value < 0x1_0000_0000n) {
      this.varint(Number(value));
      return;
    }
    let v = value;
    while (v >= 0x80n) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.pos++] = Number(v);
  }

  uint64(tag: number, value: bigint): void {
    this.buf[this.pos++] = tag;
    this.bigVarint(value);
  }

  int32(tag: number, value: number): void {
    this.buf[this.pos++] = tag;
    this.varint(value);
  }

  true(tag: number): void {
    this.buf[this.pos++] = tag;
    this.buf[this.pos++] = 1;
  }

  /** The tag and length of an embedded message, which the caller writes next. */
  embedded(tag: number): void {
    this.buf[this.pos++] = tag;
    this.varint(this.#sizes[this.#nextSize++] ?? 0);
  }

  bytes(tag: number, value: Uint8Array): void {
    this.buf[this.pos++] = tag;
    this.varint(value.length);
    this.buf.set(value, this.pos);
    this.pos += value.length;
  }
}

const bytesSize = (value: Uint8Array) => 1 + varintBytes(value.length) + value.length;

/** A bytes field we can write: absent, or a Uint8Array (protobufjs also takes base64 strings). */
const plainBytes = (value: unknown) => value == null || value instanceof Uint8Array;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** An int64 field we can write: absent or a bigint in range (protobufjs also takes numbers, Longs). */
const plainInt64 = (value: unknown) =>
  value == null || (typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX);
/** A bool field we can write: absent or a boolean. */
const plainBool = (value: unknown) => value == null || typeof value === 'boolean';
/** An enum field we can write: absent or a non-negative int32 (negative ones take 10 bytes). */
const plainEnum = (value: unknown) =>
  value == null || (typeof value === 'number' && (value | 0) === value && value >= 0);

const int64Fields = [
  'limit',
  'revision',
  'minModRevision',
  'maxModRevision',
  'minCreateRevision',
  'maxCreateRevision',
] as const;

/**
 * A message's size, or -1 when a field needs the generated code. It appends the sizes of its
 * embedded messages to `sizes` in the order they are written (a parent's before its children's).
 */
type Sizer<M> = (m: M, sizes: number[], depth: number) => number;
/** Writes a message that its sizer accepted. */
type Write<M> = (w: FrameWriter, m: M) => void;

/** The frame of one message, written by hand; undefined when the generated code must. */
function frameOf<M>(m: M, size: Sizer<M>, write: Write<M>): Buffer | undefined {
  const sizes: number[] = [];
  const bytes = size(m, sizes, 0);
  if (bytes < 0) return undefined;
  const w = new FrameWriter(bytes, sizes);
  write(w, m);
  return w.buf;
}

function rangeSize(m: etcdserverpb.RangeRequest.$Properties): number {
  if (
    m.$unknowns != null ||
    !plainBytes(m.key) ||
    !plainBytes(m.rangeEnd) ||
    !plainEnum(m.sortOrder) ||
    !plainEnum(m.sortTarget) ||
    !plainBool(m.serializable) ||
    !plainBool(m.keysOnly) ||
    !plainBool(m.countOnly)
  ) {
    return -1;
  }
  for (const field of int64Fields) if (!plainInt64(m[field])) return -1;
  const { key, rangeEnd, sortOrder, sortTarget } = m;
  let size = 0;
  if (key?.length) size += bytesSize(key);
  if (rangeEnd?.length) size += bytesSize(rangeEnd);
  if (m.limit) size += 1 + bigVarintBytes(uint64Of(m.limit));
  if (m.revision) size += 1 + bigVarintBytes(uint64Of(m.revision));
  if (sortOrder) size += 1 + varintBytes(sortOrder);
  if (sortTarget) size += 1 + varintBytes(sortTarget);
  if (m.serializable) size += 2;
  if (m.keysOnly) size += 2;
  if (m.countOnly) size += 2;
  if (m.minModRevision) size += 1 + bigVarintBytes(uint64Of(m.minModRevision));
  if (m.maxModRevision) size += 1 + bigVarintBytes(uint64Of(m.maxModRevision));
  if (m.minCreateRevision) size += 1 + bigVarintBytes(uint64Of(m.minCreateRevision));
  if (m.maxCreateRevision) size += 1 + bigVarintBytes(uint64Of(m.maxCreateRevision));
  return size;
}

function writeRange(w: FrameWriter, m: etcdserverpb.RangeRequest.$Properties): void {
  const { key, rangeEnd, sortOrder, sortTarget } = m;
  if (key?.length) w.bytes(10, key);
  if (rangeEnd?.length) w.bytes(18, rangeEnd);
  if (m.limit) w.uint64(24, uint64Of(m.limit));
  if (m.revision) w.uint64(32, uint64Of(m.revision));
  if (sortOrder) w.int32(40, sortOrder);
  if (sortTarget) w.int32(48, sortTarget);
  if (m.serializable) w.true(56);
  if (m.keysOnly) w.true(64);
  if (m.countOnly) w.true(72);
  if (m.minModRevision) w.uint64(80, uint64Of(m.minModRevision));
  if (m.maxModRevision) w.uint64(88, uint64Of(m.maxModRevision));
  if (m.minCreateRevision) w.uint64(96, uint64Of(m.minCreateRevision));
  if (m.maxCreateRevision) w.uint64(104, uint64Of(m.maxCreateRevision));
}

function putSize(m: etcdserverpb.PutRequest.$Properties): number {
  if (
    m.$unknowns != null ||
    !plainBytes(m.key) ||
    !plainBytes(m.value) ||
    !plainInt64(m.lease) ||
    !plainBool(m.prevKv) ||
    !plainBool(m.ignoreValue) ||
    !plainBool(m.ignoreLease)
  ) {
    return -1;
  }
  const { key, value } = m;
  let size = 0;
  if (key?.length) size += bytesSize(key);
  if (value?.length) size += bytesSize(value);
  if (m.lease) size += 1 + bigVarintBytes(uint64Of(m.lease));
  if (m.prevKv) size += 2;
  if (m.ignoreValue) size += 2;
  if (m.ignoreLease) size += 2;
  return size;
}

function writePut(w: FrameWriter, m: etcdserverpb.PutRequest.$Properties): void {
  const { key, value } = m;
  if (key?.length) w.bytes(10, key);
  if (value?.length) w.bytes(18, value);
  if (m.lease) w.uint64(24, uint64Of(m.lease));
  if (m.prevKv) w.true(32);
  if (m.ignoreValue) w.true(40);
  if (m.ignoreLease) w.true(48);
}

function deleteSize(m: etcdserverpb.DeleteRangeRequest.$Properties): number {
  if (
    m.$unknowns != null ||
    !plainBytes(m.key) ||
    !plainBytes(m.rangeEnd) ||
    !plainBool(m.prevKv)
  ) {
    return -1;
  }
  const { key, rangeEnd } = m;
  let size = 0;
  if (key?.length) size += bytesSize(key);
  if (rangeEnd?.length) size += bytesSize(rangeEnd);
  if (m.prevKv) size += 2;
  return size;
}

function writeDelete(w: FrameWriter, m: etcdserverpb.DeleteRangeRequest.$Properties): void {
  const { key, rangeEnd } = m;
  if (key?.length) w.bytes(10, key);
  if (rangeEnd?.length) w.bytes(18, rangeEnd);
  if (m.prevKv) w.true(24);
}

/** The oneof target fields of a Compare: written when set, even to zero. */
const compareInt64Fields = ['version', 'createRevision', 'modRevision', 'lease'] as const;

function compareSize(m: etcdserverpb.Compare.$Properties): number {
  if (
    m == null ||
    m.$unknowns != null ||
    !plainEnum(m.result) ||
    !plainEnum(m.target) ||
    !plainBytes(m.key) ||
    !plainBytes(m.value) ||
    !plainBytes(m.rangeEnd)
  ) {
    return -1;
  }
  for (const field of compareInt64Fields) if (!plainInt64(m[field])) return -1;
  const { result, target, key, value, rangeEnd } = m;
  let size = 0;
  if (result) size += 1 + varintBytes(result);
  if (target) size += 1 + varintBytes(target);
  if (key?.length) size += bytesSize(key);
  if (m.version != null) size += 1 + bigVarintBytes(uint64Of(m.version));
  if (m.createRevision != null) size += 1 + bigVarintBytes(uint64Of(m.createRevision));
  if (m.modRevision != null) size += 1 + bigVarintBytes(uint64Of(m.modRevision));
  if (value != null) size += bytesSize(value);
  if (m.lease != null) size += 1 + bigVarintBytes(uint64Of(m.lease));
  // Field 64's tag takes two bytes.
  if (rangeEnd?.length) size += 1 + bytesSize(rangeEnd);
  return size;
}

function writeCompare(w: FrameWriter, m: etcdserverpb.Compare.$Properties): void {
  const { result, target, key, value, rangeEnd } = m;
  if (result) w.int32(8, result);
  if (target) w.int32(16, target);
  if (key?.length) w.bytes(26, key);
  if (m.version != null) w.uint64(32, uint64Of(m.version));
  if (m.createRevision != null) w.uint64(40, uint64Of(m.createRevision));
  if (m.modRevision != null) w.uint64(48, uint64Of(m.modRevision));
  if (value != null) w.bytes(58, value);
  if (m.lease != null) w.uint64(64, uint64Of(m.lease));
  if (rangeEnd?.length) {
    // Tag 514 (field 64, length-delimited) is the varint 0x82 0x04.
    w.buf[w.pos++] = 0x82;
    w.bytes(0x04, rangeEnd);
  }
}

/** Txns nested deeper than this go to the generated code (which has its own depth limit). */
const MAX_TXN_DEPTH = 8;

/**
 * Adds an embedded message of `inner` bytes to `size`, recording `inner` at `at` in `sizes`;
 * -1 when either is -1.
 */
function withEmbedded(size: number, inner: number, sizes: number[], at: number): number {
  if (size < 0 || inner < 0) return -1;
  sizes[at] = inner;
  return size + 1 + varintBytes(inner) + inner;
}

function opSize(m: etcdserverpb.RequestOp.$Properties, sizes: number[], depth: number): number {
  if (m == null || m.$unknowns != null) return -1;
  let size = 0;
  if (m.requestRange != null) {
    const at = sizes.push(0) - 1;
    size = withEmbedded(size, rangeSize(m.requestRange), sizes, at);
  }
  if (m.requestPut != null) {
    const at = sizes.push(0) - 1;
    size = withEmbedded(size, putSize(m.requestPut), sizes, at);
  }
  if (m.requestDeleteRange != null) {
    const at = sizes.push(0) - 1;
    size = withEmbedded(size, deleteSize(m.requestDeleteRange), sizes, at);
  }
  if (m.requestTxn != null) {
    if (depth >= MAX_TXN_DEPTH) return -1;
    const at = sizes.push(0) - 1;
    size = withEmbedded(size, txnSize(m.requestTxn, sizes, depth + 1), sizes, at);
  }
  return size;
}

function writeOp(w: FrameWriter, m: etcdserverpb.RequestOp.$Properties): void {
  if (m.requestRange != null) {
    w.embedded(10);
    writeRange(w, m.requestRange);
  }
  if (m.requestPut != null) {
    w.embedded(18);
    writePut(w, m.requestPut);
  }
  if (m.requestDeleteRange != null) {
    w.embedded(26);
    writeDelete(w, m.requestDeleteRange);
  }
  if (m.requestTxn != null) {
    w.embedded(34);
    writeTxn(w, m.requestTxn);
  }
}

function opsSize(
  ops: readonly etcdserverpb.RequestOp.$Properties[] | null | undefined,
  sizes: number[],
  depth: number,
): number {
  let size = 0;
  if (ops != null) {
    for (const o of ops) {
      const at = sizes.push(0) - 1;
      size = withEmbedded(size, opSize(o, sizes, depth), sizes, at);
      if (size < 0) return -1;
    }
  }
  return size;
}

function txnSize(m: etcdserverpb.TxnRequest.$Properties, sizes: number[], depth: number): number {
  if (m == null || m.$unknowns != null) return -1;
  let size = 0;
  if (m.compare != null) {
    for (const c of m.compare) {
      const at = sizes.push(0) - 1;
      size = withEmbedded(size, compareSize(c), sizes, at);
      if (size < 0) return -1;
    }
  }
  const success = opsSize(m.success, sizes, depth);
  const failure = success < 0 ? -1 : opsSize(m.failure, sizes, depth);
  return failure < 0 ? -1 : size + success + failure;
}

function writeTxn(w: FrameWriter, m: etcdserverpb.TxnRequest.$Properties): void {
  if (m.compare != null) {
    for (const c of m.compare) {
      w.embedded(10);
      writeCompare(w, c);
    }
  }
  if (m.success != null) {
    for (const o of m.success) {
      w.embedded(18);
      writeOp(w, o);
    }
  }
  if (m.failure != null) {
    for (const o of m.failure) {
      w.embedded(26);
      writeOp(w, o);
    }
  }
}

/** A packed repeated enum field we can write: absent, or an array of non-negative int32s. */
function packedEnumBytes(values: unknown): number {
  if (values == null) return 0;
  if (!Array.isArray(values)) return -1;
  let size = 0;
  for (const v of values) {
    if (v == null || !plainEnum(v)) return -1;
    size += varintBytes(v as number);
  }
  return size;
}

function watchCreateSize(m: etcdserverpb.WatchCreateRequest.$Properties): number {
  if (
    m.$unknowns != null ||
    !plainBytes(m.key) ||
    !plainBytes(m.rangeEnd) ||
    !plainInt64(m.startRevision) ||
    !plainBool(m.progressNotify) ||
    !plainBool(m.prevKv) ||
    !plainInt64(m.watchId) ||
    !plainBool(m.fragment)
  ) {
    return -1;
  }
  const filters = packedEnumBytes(m.filters);
  if (filters < 0) return -1;
  const { key, rangeEnd } = m;
  let size = 0;
  if (key?.length) size += bytesSize(key);
  if (rangeEnd?.length) size += bytesSize(rangeEnd);
  if (m.startRevision) size += 1 + bigVarintBytes(uint64Of(m.startRevision));
  if (m.progressNotify) size += 2;
  if (filters > 0) size += 1 + varintBytes(filters) + filters;
  if (m.prevKv) size += 2;
  if (m.watchId) size += 1 + bigVarintBytes(uint64Of(m.watchId));
  if (m.fragment) size += 2;
  return size;
}

function writeWatchCreate(w: FrameWriter, m: etcdserverpb.WatchCreateRequest.$Properties): void {
  const { key, rangeEnd, filters } = m;
  if (key?.length) w.bytes(10, key);
  if (rangeEnd?.length) w.bytes(18, rangeEnd);
  if (m.startRevision) w.uint64(24, uint64Of(m.startRevision));
  if (m.progressNotify) w.true(32);
  if (filters?.length) {
    w.int32(42, packedEnumBytes(filters));
    for (const f of filters) w.varint(f);
  }
  if (m.prevKv) w.true(48);
  if (m.watchId) w.uint64(56, uint64Of(m.watchId));
  if (m.fragment) w.true(64);
}

/** The size of a message whose one field is the int64 `value` (a watch cancel, a keepalive). */
function idSize(unknowns: unknown, value: unknown): number {
  if (unknowns != null || !plainInt64(value)) return -1;
  return value ? 1 + bigVarintBytes(uint64Of(value as bigint)) : 0;
}

/** Adds an embedded message's size to `sizes` and returns what it takes in its parent. */
function embeddedSize(inner: number, sizes: number[]): number {
  sizes.push(inner);
  return 1 + varintBytes(inner) + inner;
}

function watchSize(m: etcdserverpb.WatchRequest.$Properties, sizes: number[]): number {
  if (m.$unknowns != null) return -1;
  let size = 0;
  const { createRequest: create, cancelRequest: cancel, progressRequest: progress } = m;
  if (create != null) {
    const inner = watchCreateSize(create);
    if (inner < 0) return -1;
    size += embeddedSize(inner, sizes);
  }
  if (cancel != null) {
    const inner = idSize(cancel.$unknowns, cancel.watchId);
    if (inner < 0) return -1;
    size += embeddedSize(inner, sizes);
  }
  if (progress != null) {
    if (progress.$unknowns != null) return -1;
    size += embeddedSize(0, sizes);
  }
  return size;
}

function writeWatch(w: FrameWriter, m: etcdserverpb.WatchRequest.$Properties): void {
  const { createRequest: create, cancelRequest: cancel, progressRequest: progress } = m;
  if (create != null) {
    w.embedded(10);
    writeWatchCreate(w, create);
  }
  if (cancel != null) {
    w.embedded(18);
    if (cancel.watchId) w.uint64(8, uint64Of(cancel.watchId));
  }
  if (progress != null) w.embedded(26);
}

function keepAliveSize(m: etcdserverpb.LeaseKeepAliveRequest.$Properties): number {
  return idSize(m.$unknowns, m.ID);
}

function writeKeepAlive(w: FrameWriter, m: etcdserverpb.LeaseKeepAliveRequest.$Properties): void {
  if (m.ID) w.uint64(8, uint64Of(m.ID));
}

const HOT = new Map<string, HotEncoder>([
  ['/etcdserverpb.KV/Range', ((m) => frameOf(m, rangeSize, writeRange)) as HotEncoder],
  ['/etcdserverpb.KV/Put', ((m) => frameOf(m, putSize, writePut)) as HotEncoder],
  ['/etcdserverpb.KV/Txn', ((m) => frameOf(m, txnSize, writeTxn)) as HotEncoder],
  ['/etcdserverpb.Watch/Watch', ((m) => frameOf(m, watchSize, writeWatch)) as HotEncoder],
  [
    '/etcdserverpb.Lease/LeaseKeepAlive',
    ((m) => frameOf(m, keepAliveSize, writeKeepAlive)) as HotEncoder,
  ],
]);
