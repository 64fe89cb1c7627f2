// The KV responses (Range, Put, DeleteRange, Txn), a Watch stream's responses without events and
// every ResponseHeader written straight to protobuf bytes: byte for byte what the generated
// protobufjs code writes for the same objects, without its per-field operations, forks and
// 64-bit LongBits objects (its int64 path allocated about 4% of the server's bytes in a contended
// lock run, bench/findings/server-cpu.md). A header's encoding is kept for the next responses at
// the same revision. Anything the generated code would treat in a way this file does not mirror
// (unknown fields, a string for bytes, a Long, nesting past its depth limit) is left to it:
// encodeResponse then answers undefined.
import { etcdserverpb } from '@etcdkit/client/protocol';
import { ProtoWriter, varintSize, wideVarint } from '../mvcc/kv-encoding.js';
import type { ResponseHeader } from './requests.js';

/** protobufjs's util.recursionLimit: deeper messages make its encoder throw. */
const MAX_DEPTH = 100;
const hasOwn = Object.prototype.hasOwnProperty;
const LONE_SURROGATE = /[\ud800-\udfff]/;

/** A message as the encoder reads it: plain fields by name. */
type Message = Record<string, unknown>;

/** The encoding could not be mirrored: the generated code encodes the message instead. */
class NotMirrored extends Error {}
const NOT_MIRRORED = new NotMirrored();

/** The methods whose responses are written here, by gRPC path: sizing, then writing. */
const ENCODERS = new Map<string, readonly [Sizer, Writer]>([
  ['/etcdserverpb.KV/Range', [rangeSize, writeRange]],
  ['/etcdserverpb.KV/Put', [putSize, writePut]],
  ['/etcdserverpb.KV/DeleteRange', [deleteSize, writeDelete]],
  ['/etcdserverpb.KV/Txn', [txnSize, writeTxn]],
  ['/etcdserverpb.Watch/Watch', [watchSize, writeWatch]],
]);

/** The size of a message (at nesting `depth`), its nested messages' sizes pushed in write order. */
type Sizer = (message: Message, sizes: number[], depth: number) => number;
type Writer = (message: Message, out: Output) => void;

/**
 * The protobuf bytes of `response` of the method at `path`, or undefined when the generated code
 * must encode it (a method not written here, or a message it treats in a way not mirrored here).
 */
export function encodeResponse(path: string, response: unknown): Uint8Array | undefined {
  const encoder = ENCODERS.get(path);
  if (encoder === undefined) return undefined;
  const message = response as Message;
  // One output for every call (an encoding runs to its end before the next starts): the sizes
  // of the nested messages in the order they are written, so each is computed once.
  const out = OUTPUT;
  out.sizes.length = 0;
  out.next = 0;
  let total: number;
  try {
    total = encoder[0](message, out.sizes, 0);
  } catch (error) {
    if (error instanceof NotMirrored) return undefined;
    throw error;
  }
  const writer = out.writer;
  // Exactly the size, from Node's pool for small ones: every byte of it is written below.
  const bytes = Buffer.allocUnsafe(total);
  writer.bytes = bytes;
  writer.length = 0;
  encoder[1](message, out);
  writer.bytes = EMPTY;
  return bytes;
}

/** A writer with the nested messages' sizes, taken in order. */
interface Output {
  readonly writer: ProtoWriter;
  readonly sizes: number[];
  next: number;
}

const EMPTY = new Uint8Array(0);
const OUTPUT: Output = { writer: new ProtoWriter(0), sizes: [], next: 0 };

// Field presence exactly as the generated code tests it (`value != null`, an own property, not
// the default); each field is read by name at the call, which keeps these property loads fast.

/** An integer field's value to write, or undefined when it is left out (absent or zero). */
function integer(value: unknown, message: Message, name: string): bigint | number | undefined {
  if (value == null) return undefined;
  if (typeof value === 'bigint') {
    if (value === 0n) return undefined;
  } else if (typeof value === 'number' && Number.isSafeInteger(value)) {
    if (value === 0) return undefined;
  } else throw NOT_MIRRORED;
  return hasOwn.call(message, name) ? value : undefined;
}

/** A bool field: 1 or 0 to write, or undefined when it is left out (absent or false). */
function bool(value: unknown, message: Message, name: string): number | undefined {
  if (value == null || value === false || !hasOwn.call(message, name)) return undefined;
  return value ? 1 : 0;
}

/** A bytes field, or undefined when it is left out (absent or empty). */
function bytes(value: unknown, message: Message, name: string): Uint8Array | undefined {
  if (value == null) return undefined;
  if (!(value instanceof Uint8Array)) throw NOT_MIRRORED;
  return value.length === 0 || !hasOwn.call(message, name) ? undefined : value;
}

/** A nested message field, or undefined when absent. */
function nested(value: unknown, message: Message, name: string): Message | undefined {
  if (value == null || !hasOwn.call(message, name)) return undefined;
  if (typeof value !== 'object') throw NOT_MIRRORED;
  return value as Message;
}

const NONE: readonly Message[] = [];

/** A repeated message field's items (none: empty). */
function repeated(value: unknown): readonly Message[] {
  if (value == null) return NONE;
  if (!Array.isArray(value)) throw NOT_MIRRORED;
  return value as Message[];
}

/** Refuses what the generated code would add or refuse: unknown fields, too deep a nesting. */
function check(message: Message, depth: number): void {
  if (depth > MAX_DEPTH) throw NOT_MIRRORED;
  if (message.$unknowns != null && hasOwn.call(message, '$unknowns')) throw NOT_MIRRORED;
}

const MAX_SAFE = 9007199254740991n;

/** Bytes of an integer field (tag included); 0 when it is left out. */
function integerSize(value: bigint | number | undefined): number {
  if (value === undefined) return 0;
  if (typeof value === 'number') return 1 + (value < 0 ? 10 : varintSize(value));
  if (value >= 0n && value <= MAX_SAFE) return 1 + varintSize(Number(value));
  // Above 2^53 or negative: its 64 bits' varint (kept for the next responses).
  return 1 + wideVarint(value).length;
}

function bytesSize(value: Uint8Array | undefined): number {
  return value === undefined ? 0 : 1 + varintSize(value.length) + value.length;
}

/** A nested field of `size` bytes: tag, length, body. */
function fieldSize(size: number): number {
  return 1 + varintSize(size) + size;
}

function writeInteger(out: ProtoWriter, tag: number, value: bigint | number | undefined): void {
  if (value === undefined) return;
  out.bytes[out.length++] = tag;
  if (typeof value === 'number') {
    if (value >= 0) out.varint(value);
    else writeVarint64(out, BigInt(value));
  } else if (value >= 0n && value <= MAX_SAFE) out.varint(Number(value));
  else writeVarint64(out, value);
}

/** The varint of `value`'s 64 bits (two's complement), as protobufjs writes an int64. */
function writeVarint64(out: ProtoWriter, value: bigint): void {
  const varint = wideVarint(value);
  out.bytes.set(varint, out.length);
  out.length += varint.length;
}

function writeBool(out: ProtoWriter, tag: number, value: number | undefined): void {
  if (value === undefined) return;
  out.bytes[out.length++] = tag;
  out.bytes[out.length++] = value;
}

function writeBytes(out: ProtoWriter, tag: number, value: Uint8Array | undefined): void {
  if (value === undefined) return;
  out.bytes[out.length++] = tag;
  out.varint(value.length);
  out.raw(value, 0, value.length);
}

/** Opens a nested field: its tag and the length sized for it. */
function open(out: Output, tag: number): void {
  const writer = out.writer;
  writer.bytes[writer.length++] = tag;
  writer.varint(out.sizes[out.next++]!);
}

// ResponseHeader: its bytes are kept for the next headers with the same four fields.

/** A header's fields as written (undefined: left out), and its bytes. */
interface EncodedHeader {
  readonly clusterId: bigint | number | undefined;
  readonly memberId: bigint | number | undefined;
  readonly revision: bigint | number | undefined;
  readonly raftTerm: bigint | number | undefined;
  readonly bytes: Uint8Array;
}

/** The last headers encoded: a few, as a txn's header and its ranges' differ. */
const headers: (EncodedHeader | undefined)[] = [undefined, undefined, undefined, undefined];
let nextHeader = 0;

/**
 * The ResponseHeader's protobuf bytes (without tag or length), as the generated code writes them;
 * a header with the same fields as a recent one gets the same bytes (not to be changed).
 */
export function encodeHeader(header: ResponseHeader): Uint8Array {
  try {
    return headerBytes(header as Message);
  } catch (error) {
    if (error instanceof NotMirrored) return etcdserverpb.ResponseHeader.encode(header).finish();
    throw error;
  }
}

function headerBytes(h: Message): Uint8Array {
  check(h, 0);
  const clusterId = integer(h.clusterId, h, 'clusterId');
  const memberId = integer(h.memberId, h, 'memberId');
  const revision = integer(h.revision, h, 'revision');
  const raftTerm = integer(h.raftTerm, h, 'raftTerm');
  for (let i = 0; i < headers.length; i++) {
    const kept = headers[i];
    if (
      kept !== undefined &&
      kept.revision === revision &&
      kept.clusterId === clusterId &&
      kept.memberId === memberId &&
      kept.raftTerm === raftTerm
    ) {
      return kept.bytes;
    }
  }
  const size =
    integerSize(clusterId) + integerSize(memberId) + integerSize(revision) + integerSize(raftTerm);
  const out = new ProtoWriter(size);
  writeInteger(out, 1 << 3, clusterId);
  writeInteger(out, 2 << 3, memberId);
  writeInteger(out, 3 << 3, revision);
  writeInteger(out, 4 << 3, raftTerm);
  headers[nextHeader] = { clusterId, memberId, revision, raftTerm, bytes: out.bytes };
  nextHeader = (nextHeader + 1) % headers.length;
  return out.bytes;
}

function headerSize(m: Message, sizes: number[], depth: number): number {
  const header = nested(m.header, m, 'header');
  if (header === undefined) return 0;
  if (depth + 1 > MAX_DEPTH) throw NOT_MIRRORED;
  const size = headerBytes(header).length;
  sizes.push(size);
  return fieldSize(size);
}

function writeHeader(m: Message, out: Output): void {
  const header = nested(m.header, m, 'header');
  if (header === undefined) return;
  const encoded = headerBytes(header);
  open(out, (1 << 3) | 2);
  out.writer.raw(encoded, 0, encoded.length);
}

// mvccpb.KeyValue

function kvsSize(kvs: readonly Message[], sizes: number[], depth: number): number {
  let size = 0;
  for (let i = 0; i < kvs.length; i++) size += keyValueSize(kvs[i]!, sizes, depth);
  return size;
}

/** A KeyValue field's bytes (tag and length included); its body's size is pushed. */
function keyValueSize(kv: Message, sizes: number[], depth: number): number {
  check(kv, depth);
  const body =
    bytesSize(bytes(kv.key, kv, 'key')) +
    integerSize(integer(kv.createRevision, kv, 'createRevision')) +
    integerSize(integer(kv.modRevision, kv, 'modRevision')) +
    integerSize(integer(kv.version, kv, 'version')) +
    bytesSize(bytes(kv.value, kv, 'value')) +
    integerSize(integer(kv.lease, kv, 'lease'));
  sizes.push(body);
  return fieldSize(body);
}

function writeKeyValue(kv: Message, out: Output, tag: number): void {
  open(out, tag);
  const writer = out.writer;
  writeBytes(writer, 10, bytes(kv.key, kv, 'key'));
  writeInteger(writer, 16, integer(kv.createRevision, kv, 'createRevision'));
  writeInteger(writer, 24, integer(kv.modRevision, kv, 'modRevision'));
  writeInteger(writer, 32, integer(kv.version, kv, 'version'));
  writeBytes(writer, 42, bytes(kv.value, kv, 'value'));
  writeInteger(writer, 48, integer(kv.lease, kv, 'lease'));
}

// RangeResponse, PutResponse, DeleteRangeResponse, TxnResponse, ResponseOp

function rangeSize(m: Message, sizes: number[], depth: number): number {
  check(m, depth);
  return (
    headerSize(m, sizes, depth) +
    kvsSize(repeated(m.kvs), sizes, depth + 1) +
    (bool(m.more, m, 'more') === undefined ? 0 : 2) +
    integerSize(integer(m.count, m, 'count'))
  );
}

function writeRange(m: Message, out: Output): void {
  writeHeader(m, out);
  const kvs = repeated(m.kvs);
  for (let i = 0; i < kvs.length; i++) writeKeyValue(kvs[i]!, out, (2 << 3) | 2);
  writeBool(out.writer, 3 << 3, bool(m.more, m, 'more'));
  writeInteger(out.writer, 4 << 3, integer(m.count, m, 'count'));
}

function putSize(m: Message, sizes: number[], depth: number): number {
  check(m, depth);
  let size = headerSize(m, sizes, depth);
  const prevKv = nested(m.prevKv, m, 'prevKv');
  if (prevKv !== undefined) size += keyValueSize(prevKv, sizes, depth + 1);
  return size;
}

function writePut(m: Message, out: Output): void {
  writeHeader(m, out);
  const prevKv = nested(m.prevKv, m, 'prevKv');
  if (prevKv !== undefined) writeKeyValue(prevKv, out, (2 << 3) | 2);
}

function deleteSize(m: Message, sizes: number[], depth: number): number {
  check(m, depth);
  return (
    headerSize(m, sizes, depth) +
    integerSize(integer(m.deleted, m, 'deleted')) +
    kvsSize(repeated(m.prevKvs), sizes, depth + 1)
  );
}

function writeDelete(m: Message, out: Output): void {
  writeHeader(m, out);
  writeInteger(out.writer, 2 << 3, integer(m.deleted, m, 'deleted'));
  const prevKvs = repeated(m.prevKvs);
  for (let i = 0; i < prevKvs.length; i++) writeKeyValue(prevKvs[i]!, out, (3 << 3) | 2);
}

function txnSize(m: Message, sizes: number[], depth: number): number {
  check(m, depth);
  let size =
    headerSize(m, sizes, depth) + (bool(m.succeeded, m, 'succeeded') === undefined ? 0 : 2);
  const responses = repeated(m.responses);
  for (let i = 0; i < responses.length; i++) {
    size += nestedSize(responseOpSize, responses[i]!, sizes, depth + 1);
  }
  return size;
}

function writeTxn(m: Message, out: Output): void {
  writeHeader(m, out);
  writeBool(out.writer, 2 << 3, bool(m.succeeded, m, 'succeeded'));
  const responses = repeated(m.responses);
  for (let i = 0; i < responses.length; i++) {
    open(out, (3 << 3) | 2);
    writeResponseOp(responses[i]!, out);
  }
}

/** A nested field's bytes; its size goes before those of what it holds, as it is written first. */
function nestedSize(sizeOf: Sizer, message: Message, sizes: number[], depth: number): number {
  const at = sizes.length;
  sizes.push(0);
  const body = sizeOf(message, sizes, depth);
  sizes[at] = body;
  return fieldSize(body);
}

/** A ResponseOp: every field of its oneof that is set is written, as the generated code does. */
function responseOpSize(op: Message, sizes: number[], depth: number): number {
  check(op, depth);
  const range = nested(op.responseRange, op, 'responseRange');
  const put = nested(op.responsePut, op, 'responsePut');
  const deleted = nested(op.responseDeleteRange, op, 'responseDeleteRange');
  const txn = nested(op.responseTxn, op, 'responseTxn');
  return (
    (range === undefined ? 0 : nestedSize(rangeSize, range, sizes, depth + 1)) +
    (put === undefined ? 0 : nestedSize(putSize, put, sizes, depth + 1)) +
    (deleted === undefined ? 0 : nestedSize(deleteSize, deleted, sizes, depth + 1)) +
    (txn === undefined ? 0 : nestedSize(txnSize, txn, sizes, depth + 1))
  );
}

function writeResponseOp(op: Message, out: Output): void {
  const range = nested(op.responseRange, op, 'responseRange');
  const put = nested(op.responsePut, op, 'responsePut');
  const deleted = nested(op.responseDeleteRange, op, 'responseDeleteRange');
  const txn = nested(op.responseTxn, op, 'responseTxn');
  if (range !== undefined) {
    open(out, (1 << 3) | 2);
    writeRange(range, out);
  }
  if (put !== undefined) {
    open(out, (2 << 3) | 2);
    writePut(put, out);
  }
  if (deleted !== undefined) {
    open(out, (3 << 3) | 2);
    writeDelete(deleted, out);
  }
  if (txn !== undefined) {
    open(out, (4 << 3) | 2);
    writeTxn(txn, out);
  }
}

// WatchResponse without events (created, canceled, progress, compaction replies)

/** A cancel reason to write (undefined: left out); one protobufjs and Buffer encode alike. */
function cancelReason(m: Message): string | undefined {
  const reason = m.cancelReason;
  if (reason == null || reason === '' || !hasOwn.call(m, 'cancelReason')) return undefined;
  // Lone surrogates: protobufjs's UTF-8 writer and Buffer's differ there.
  if (typeof reason !== 'string' || LONE_SURROGATE.test(reason)) throw NOT_MIRRORED;
  return reason;
}

function watchSize(m: Message, sizes: number[], depth: number): number {
  check(m, depth);
  if (repeated(m.events).length > 0) throw NOT_MIRRORED;
  const reason = cancelReason(m);
  return (
    headerSize(m, sizes, depth) +
    integerSize(integer(m.watchId, m, 'watchId')) +
    (bool(m.created, m, 'created') === undefined ? 0 : 2) +
    (bool(m.canceled, m, 'canceled') === undefined ? 0 : 2) +
    integerSize(integer(m.compactRevision, m, 'compactRevision')) +
    (reason === undefined ? 0 : fieldSize(Buffer.byteLength(reason))) +
    (bool(m.fragment, m, 'fragment') === undefined ? 0 : 2)
  );
}

function writeWatch(m: Message, out: Output): void {
  const writer = out.writer;
  writeHeader(m, out);
  writeInteger(writer, 2 << 3, integer(m.watchId, m, 'watchId'));
  writeBool(writer, 3 << 3, bool(m.created, m, 'created'));
  writeBool(writer, 4 << 3, bool(m.canceled, m, 'canceled'));
  writeInteger(writer, 5 << 3, integer(m.compactRevision, m, 'compactRevision'));
  const reason = cancelReason(m);
  if (reason !== undefined) {
    const encoded = Buffer.from(reason, 'utf8');
    writer.bytes[writer.length++] = (6 << 3) | 2;
    writer.varint(encoded.length);
    writer.raw(encoded, 0, encoded.length);
  }
  writeBool(writer, 7 << 3, bool(m.fragment, m, 'fragment'));
}
