// Hand-written decoders of the hottest responses (KV Range, Put, DeleteRange and Txn, and the stream
// messages recipes receive most: WatchResponse and LeaseKeepAliveResponse): one pass
// over the bytes with no Reader object, building the same generated message objects (so their
// prototype defaults are the same). They cover the messages etcd sends: known fields with their
// wire types. Anything else (an unknown field, a wrong wire type, a nested txn, truncated or
// malformed bytes) makes them give up, and the generated decoder decodes the whole message again,
// so what it keeps or throws stays the answer. response-decoders.test.ts checks them field by field
// against it.
import { isUtf8 } from 'node:buffer';
import type { MethodDescriptor } from '../generated/methods.js';
import { etcdserverpb, mvccpb } from '../generated/protocol.js';

/** Thrown to give up on a message: the generated decoder takes it. */
const GIVE_UP = Symbol('give up');

const EMPTY = Buffer.alloc(0);
/** The message being decoded, and where the next byte is. */
let buf: Buffer = EMPTY;
let pos = 0;

/** A tag or length, of at most four bytes (28 bits: etcd's need no more). */
function uint32(end: number): number {
  let value = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    if (pos >= end) throw GIVE_UP;
    const b = buf[pos++]!;
    value |= (b & 0x7f) << shift;
    if (b < 0x80) return value;
  }
  throw GIVE_UP;
}

/** A 64-bit varint as an unsigned bigint, exactly as the generated code reads it. */
function uint64(end: number): bigint {
  let small = 0;
  let scale = 1;
  for (let i = 0; i < 7; i++) {
    if (pos >= end) throw GIVE_UP;
    const b = buf[pos++]!;
    small += (b & 0x7f) * scale;
    if (b < 0x80) return BigInt(small);
    scale *= 128;
  }
  // The bits above 49 (at most 21 of them) as a number too: two bigints made, not one per byte
  // (a header's cluster and member ids always take this path).
  let high = 0;
  scale = 1;
  for (let i = 7; i < 10; i++) {
    if (pos >= end) throw GIVE_UP;
    const b = buf[pos++]!;
    high += (b & 0x7f) * scale;
    if (b < 0x80) return BigInt.asUintN(64, (BigInt(high) << 49n) | BigInt(small));
    scale *= 128;
  }
  throw GIVE_UP;
}

function int64(end: number): bigint {
  return BigInt.asIntN(64, uint64(end));
}

function bool(end: number): boolean {
  // True when any bit of the varint is set, as the generated code reads it.
  let value = false;
  for (let i = 0; i < 10; i++) {
    if (pos >= end) throw GIVE_UP;
    const b = buf[pos++]!;
    if (b & 0x7f) value = true;
    if (b < 0x80) return value;
  }
  throw GIVE_UP;
}

/** The end of the length-delimited field starting at `pos`. */
function limit(end: number): number {
  const length = uint32(end);
  const stop = pos + length;
  if (stop > end) throw GIVE_UP;
  return stop;
}

function bytes(end: number): Buffer {
  const stop = limit(end);
  const value = buf.subarray(pos, stop);
  pos = stop;
  return value;
}

/** Field number and wire type checked at once: `(field << 3) | wireType`. */
const VARINT = 0;
const DELIMITED = 2;
const tag = (field: number, wireType: number) => (field << 3) | wireType;

function header(
  end: number,
  target: etcdserverpb.ResponseHeader.$Properties | null | undefined,
): etcdserverpb.ResponseHeader {
  // A target is a message made here, for a field seen before: its fields merge, as protobuf's do.
  const m = (target ?? new etcdserverpb.ResponseHeader()) as etcdserverpb.ResponseHeader;
  while (pos < end) {
    switch (uint32(end)) {
      case tag(1, VARINT): {
        const v = uint64(end);
        if (v !== 0n) m.clusterId = v;
        else delete (m as Partial<etcdserverpb.ResponseHeader>).clusterId;
        break;
      }
      case tag(2, VARINT): {
        const v = uint64(end);
        if (v !== 0n) m.memberId = v;
        else delete (m as Partial<etcdserverpb.ResponseHeader>).memberId;
        break;
      }
      case tag(3, VARINT): {
        const v = int64(end);
        if (v !== 0n) m.revision = v;
        else delete (m as Partial<etcdserverpb.ResponseHeader>).revision;
        break;
      }
      case tag(4, VARINT): {
        const v = uint64(end);
        if (v !== 0n) m.raftTerm = v;
        else delete (m as Partial<etcdserverpb.ResponseHeader>).raftTerm;
        break;
      }
      default:
        throw GIVE_UP;
    }
  }
  return m;
}

function keyValue(
  end: number,
  target: mvccpb.KeyValue.$Properties | null | undefined,
): mvccpb.KeyValue {
  const m = (target ?? new mvccpb.KeyValue()) as mvccpb.KeyValue;
  const d = m as Partial<mvccpb.KeyValue>;
  while (pos < end) {
    switch (uint32(end)) {
      case tag(1, DELIMITED): {
        const v = bytes(end);
        if (v.length) m.key = v;
        else delete d.key;
        break;
      }
      case tag(2, VARINT): {
        const v = int64(end);
        if (v !== 0n) m.createRevision = v;
        else delete d.createRevision;
        break;
      }
      case tag(3, VARINT): {
        const v = int64(end);
        if (v !== 0n) m.modRevision = v;
        else delete d.modRevision;
        break;
      }
      case tag(4, VARINT): {
        const v = int64(end);
        if (v !== 0n) m.version = v;
        else delete d.version;
        break;
      }
      case tag(5, DELIMITED): {
        const v = bytes(end);
        if (v.length) m.value = v;
        else delete d.value;
        break;
      }
      case tag(6, VARINT): {
        const v = int64(end);
        if (v !== 0n) m.lease = v;
        else delete d.lease;
        break;
      }
      default:
        throw GIVE_UP;
    }
  }
  return m;
}

function range(
  end: number,
  target: etcdserverpb.RangeResponse.$Properties | null | undefined,
): etcdserverpb.RangeResponse {
  const m = (target ?? new etcdserverpb.RangeResponse()) as etcdserverpb.RangeResponse;
  while (pos < end) {
    switch (uint32(end)) {
      case tag(1, DELIMITED):
        m.header = header(limit(end), m.header);
        break;
      case tag(2, DELIMITED): {
        if (!m.kvs?.length) m.kvs = [];
        m.kvs.push(keyValue(limit(end), undefined));
        break;
      }
      case tag(3, VARINT): {
        if (bool(end)) m.more = true;
        else delete (m as Partial<etcdserverpb.RangeResponse>).more;
        break;
      }
      case tag(4, VARINT): {
        const v = int64(end);
        if (v !== 0n) m.count = v;
        else delete (m as Partial<etcdserverpb.RangeResponse>).count;
        break;
      }
      default:
        throw GIVE_UP;
    }
  }
  return m;
}

function put(
  end: number,
  target: etcdserverpb.PutResponse.$Properties | null | undefined,
): etcdserverpb.PutResponse {
  const m = (target ?? new etcdserverpb.PutResponse()) as etcdserverpb.PutResponse;
  while (pos < end) {
    switch (uint32(end)) {
      case tag(1, DELIMITED):
        m.header = header(limit(end), m.header);
        break;
      case tag(2, DELIMITED):
        m.prevKv = keyValue(limit(end), m.prevKv);
        break;
      default:
        throw GIVE_UP;
    }
  }
  return m;
}

function deleteRange(
  end: number,
  target: etcdserverpb.DeleteRangeResponse.$Properties | null | undefined,
): etcdserverpb.DeleteRangeResponse {
  const m = (target ?? new etcdserverpb.DeleteRangeResponse()) as etcdserverpb.DeleteRangeResponse;
  while (pos < end) {
    switch (uint32(end)) {
      case tag(1, DELIMITED):
        m.header = header(limit(end), m.header);
        break;
      case tag(2, VARINT): {
        const v = int64(end);
        if (v !== 0n) m.deleted = v;
        else delete (m as Partial<etcdserverpb.DeleteRangeResponse>).deleted;
        break;
      }
      case tag(3, DELIMITED): {
        if (!m.prevKvs?.length) m.prevKvs = [];
        m.prevKvs.push(keyValue(limit(end), undefined));
        break;
      }
      default:
        throw GIVE_UP;
    }
  }
  return m;
}

function responseOp(end: number): etcdserverpb.ResponseOp {
  const m = new etcdserverpb.ResponseOp();
  while (pos < end) {
    // Setting `response` (the oneof) deletes the other members, as the generated code does.
    switch (uint32(end)) {
      case tag(1, DELIMITED):
        m.responseRange = range(limit(end), m.responseRange);
        m.response = 'responseRange';
        break;
      case tag(2, DELIMITED):
        m.responsePut = put(limit(end), m.responsePut);
        m.response = 'responsePut';
        break;
      case tag(3, DELIMITED):
        m.responseDeleteRange = deleteRange(limit(end), m.responseDeleteRange);
        m.response = 'responseDeleteRange';
        break;
      default:
        // A nested txn (field 4) included: rare, and left to the generated code.
        throw GIVE_UP;
    }
  }
  return m;
}

function txn(end: number): etcdserverpb.TxnResponse {
  const m = new etcdserverpb.TxnResponse();
  while (pos < end) {
    switch (uint32(end)) {
      case tag(1, DELIMITED):
        m.header = header(limit(end), m.header);
        break;
      case tag(2, VARINT): {
        if (bool(end)) m.succeeded = true;
        else delete (m as Partial<etcdserverpb.TxnResponse>).succeeded;
        break;
      }
      case tag(3, DELIMITED): {
        if (!m.responses?.length) m.responses = [];
        m.responses.push(responseOp(limit(end)));
        break;
      }
      default:
        throw GIVE_UP;
    }
  }
  return m;
}

/** A UTF-8 string; bytes that are not UTF-8 go to the generated decoder (it throws on them). */
function utf8(end: number): string {
  const stop = limit(end);
  const bytes = buf.subarray(pos, stop);
  if (!isUtf8(bytes)) throw GIVE_UP;
  pos = stop;
  return bytes.toString('utf8');
}

function event(end: number): mvccpb.Event {
  const m = new mvccpb.Event();
  const d = m as Partial<mvccpb.Event>;
  while (pos < end) {
    switch (uint32(end)) {
      case tag(1, VARINT): {
        // An enum is an int32: the low 32 bits of the varint, signed, as the generated code reads it.
        const v = Number(BigInt.asIntN(32, uint64(end)));
        if (v !== 0) m.type = v;
        else delete d.type;
        break;
      }
      case tag(2, DELIMITED):
        m.kv = keyValue(limit(end), m.kv);
        break;
      case tag(3, DELIMITED):
        m.prevKv = keyValue(limit(end), m.prevKv);
        break;
      default:
        throw GIVE_UP;
    }
  }
  return m;
}

function watch(end: number): etcdserverpb.WatchResponse {
  const m = new etcdserverpb.WatchResponse();
  const d = m as Partial<etcdserverpb.WatchResponse>;
  while (pos < end) {
    switch (uint32(end)) {
      case tag(1, DELIMITED):
        m.header = header(limit(end), m.header);
        break;
      case tag(2, VARINT): {
        const v = int64(end);
        if (v !== 0n) m.watchId = v;
        else delete d.watchId;
        break;
      }
      case tag(3, VARINT): {
        if (bool(end)) m.created = true;
        else delete d.created;
        break;
      }
      case tag(4, VARINT): {
        if (bool(end)) m.canceled = true;
        else delete d.canceled;
        break;
      }
      case tag(5, VARINT): {
        const v = int64(end);
        if (v !== 0n) m.compactRevision = v;
        else delete d.compactRevision;
        break;
      }
      case tag(6, DELIMITED): {
        const v = utf8(end);
        if (v.length) m.cancelReason = v;
        else delete d.cancelReason;
        break;
      }
      case tag(7, VARINT): {
        if (bool(end)) m.fragment = true;
        else delete d.fragment;
        break;
      }
      case tag(11, DELIMITED): {
        if (!m.events?.length) m.events = [];
        m.events.push(event(limit(end)));
        break;
      }
      default:
        throw GIVE_UP;
    }
  }
  return m;
}

function leaseKeepAlive(end: number): etcdserverpb.LeaseKeepAliveResponse {
  const m = new etcdserverpb.LeaseKeepAliveResponse();
  const d = m as Partial<etcdserverpb.LeaseKeepAliveResponse>;
  while (pos < end) {
    switch (uint32(end)) {
      case tag(1, DELIMITED):
        m.header = header(limit(end), m.header);
        break;
      case tag(2, VARINT): {
        const v = int64(end);
        if (v !== 0n) m.ID = v;
        else delete d.ID;
        break;
      }
      case tag(3, VARINT): {
        const v = int64(end);
        if (v !== 0n) m.TTL = v;
        else delete d.TTL;
        break;
      }
      default:
        throw GIVE_UP;
    }
  }
  return m;
}

/** Decodes a whole message with `decode`, or with `generated` when it gives up. */
function withFallback<T>(
  decode: (end: number) => T,
  generated: (bytes: Uint8Array) => T,
): (bytes: Uint8Array) => T {
  return (bytes) => {
    // The generated code reads a Buffer with a BufferReader, slicing bytes fields into Buffers.
    if (!Buffer.isBuffer(bytes)) return generated(bytes);
    buf = bytes;
    pos = 0;
    try {
      return decode(bytes.length);
    } catch (error) {
      if (error === GIVE_UP) return generated(bytes);
      throw error;
    } finally {
      buf = EMPTY;
    }
  };
}

/** The hand decoders by method path. @internal Exported for the tests. */
export const HOT_DECODERS: ReadonlyMap<string, (bytes: Uint8Array) => unknown> = new Map<
  string,
  (bytes: Uint8Array) => unknown
>([
  [
    '/etcdserverpb.KV/Range',
    withFallback(
      (end) => range(end, undefined),
      (b) => etcdserverpb.RangeResponse.decode(b),
    ),
  ],
  [
    '/etcdserverpb.KV/Put',
    withFallback(
      (end) => put(end, undefined),
      (b) => etcdserverpb.PutResponse.decode(b),
    ),
  ],
  [
    '/etcdserverpb.KV/DeleteRange',
    withFallback(
      (end) => deleteRange(end, undefined),
      (b) => etcdserverpb.DeleteRangeResponse.decode(b),
    ),
  ],
  ['/etcdserverpb.KV/Txn', withFallback(txn, (b) => etcdserverpb.TxnResponse.decode(b))],
  ['/etcdserverpb.Watch/Watch', withFallback(watch, (b) => etcdserverpb.WatchResponse.decode(b))],
  [
    '/etcdserverpb.Lease/LeaseKeepAlive',
    withFallback(leaseKeepAlive, (b) => etcdserverpb.LeaseKeepAliveResponse.decode(b)),
  ],
]);

/** The response of `method` in `bytes`. Throws what the generated decoder throws. */
export function decodeResponse<Res>(method: MethodDescriptor<unknown, Res>, bytes: Buffer): Res {
  const hot = HOT_DECODERS.get(method.path);
  return hot ? (hot(bytes) as Res) : method.response.decode(bytes);
}
