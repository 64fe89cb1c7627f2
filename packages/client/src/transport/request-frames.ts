// The gRPC frame of a request: header and protobuf message in one buffer. The hottest requests
// (KV Range and Put) have hand-written encoders that size the message first and write it straight
// into the frame, without protobufjs's Writer (an object per field) and the copy into the frame.
// The generated code stays the source of truth for the wire format: request-frames.test.ts checks
// that these give its bytes exactly, and any request they do not cover (a field given as a number
// or a base64 string, unknown fields) goes through it.
import type { MethodDescriptor } from '../generated/methods.js';
import type { etcdserverpb } from '../generated/protocol.js';
import { encodeFrame, FRAME_HEADER_BYTES } from './grpc-frame.js';

/** Encodes one message into its frame, or returns undefined when the generated code must. */
type HotEncoder = (message: never) => Buffer | undefined;

/** The frame of `request` for `method`. Throws what the generated encoder throws. */
export function encodeRequestFrame<Req>(
  method: MethodDescriptor<Req, unknown>,
  request: Req,
): Buffer {
  const hot = HOT.get(method.path);
  return hot?.(request as never) ?? encodeFrame(method.request.encode(request).finish());
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
  pos = FRAME_HEADER_BYTES;

  constructor(messageBytes: number) {
    this.buf = Buffer.allocUnsafe(FRAME_HEADER_BYTES + messageBytes);
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
/** An int64 field we can write: absent or a bigint (protobufjs also takes numbers and Longs). */
const plainInt64 = (value: unknown) => value == null || typeof value === 'bigint';
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

function rangeFrame(m: etcdserverpb.RangeRequest.$Properties): Buffer | undefined {
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
    return undefined;
  }
  for (const field of int64Fields) if (!plainInt64(m[field])) return undefined;
  const { key, rangeEnd, sortOrder, sortTarget } = m;
  const limit = m.limit ? uint64Of(m.limit) : 0n;
  const revision = m.revision ? uint64Of(m.revision) : 0n;
  const minMod = m.minModRevision ? uint64Of(m.minModRevision) : 0n;
  const maxMod = m.maxModRevision ? uint64Of(m.maxModRevision) : 0n;
  const minCreate = m.minCreateRevision ? uint64Of(m.minCreateRevision) : 0n;
  const maxCreate = m.maxCreateRevision ? uint64Of(m.maxCreateRevision) : 0n;
  let size = 0;
  if (key?.length) size += bytesSize(key);
  if (rangeEnd?.length) size += bytesSize(rangeEnd);
  if (limit) size += 1 + bigVarintBytes(limit);
  if (revision) size += 1 + bigVarintBytes(revision);
  if (sortOrder) size += 1 + varintBytes(sortOrder);
  if (sortTarget) size += 1 + varintBytes(sortTarget);
  if (m.serializable) size += 2;
  if (m.keysOnly) size += 2;
  if (m.countOnly) size += 2;
  if (minMod) size += 1 + bigVarintBytes(minMod);
  if (maxMod) size += 1 + bigVarintBytes(maxMod);
  if (minCreate) size += 1 + bigVarintBytes(minCreate);
  if (maxCreate) size += 1 + bigVarintBytes(maxCreate);
  const w = new FrameWriter(size);
  if (key?.length) w.bytes(10, key);
  if (rangeEnd?.length) w.bytes(18, rangeEnd);
  if (limit) w.uint64(24, limit);
  if (revision) w.uint64(32, revision);
  if (sortOrder) w.int32(40, sortOrder);
  if (sortTarget) w.int32(48, sortTarget);
  if (m.serializable) w.true(56);
  if (m.keysOnly) w.true(64);
  if (m.countOnly) w.true(72);
  if (minMod) w.uint64(80, minMod);
  if (maxMod) w.uint64(88, maxMod);
  if (minCreate) w.uint64(96, minCreate);
  if (maxCreate) w.uint64(104, maxCreate);
  return w.buf;
}

function putFrame(m: etcdserverpb.PutRequest.$Properties): Buffer | undefined {
  if (
    m.$unknowns != null ||
    !plainBytes(m.key) ||
    !plainBytes(m.value) ||
    !plainInt64(m.lease) ||
    !plainBool(m.prevKv) ||
    !plainBool(m.ignoreValue) ||
    !plainBool(m.ignoreLease)
  ) {
    return undefined;
  }
  const { key, value } = m;
  const lease = m.lease ? uint64Of(m.lease) : 0n;
  let size = 0;
  if (key?.length) size += bytesSize(key);
  if (value?.length) size += bytesSize(value);
  if (lease) size += 1 + bigVarintBytes(lease);
  if (m.prevKv) size += 2;
  if (m.ignoreValue) size += 2;
  if (m.ignoreLease) size += 2;
  const w = new FrameWriter(size);
  if (key?.length) w.bytes(10, key);
  if (value?.length) w.bytes(18, value);
  if (lease) w.uint64(24, lease);
  if (m.prevKv) w.true(32);
  if (m.ignoreValue) w.true(40);
  if (m.ignoreLease) w.true(48);
  return w.buf;
}

const HOT = new Map<string, HotEncoder>([
  ['/etcdserverpb.KV/Range', rangeFrame as HotEncoder],
  ['/etcdserverpb.KV/Put', putFrame as HotEncoder],
]);
