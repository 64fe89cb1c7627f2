// The log's bytes. A segment file starts with a 16-byte header (magic, format version), then holds
// records back to back:
//
//   length (u32, big-endian: bytes of the body)  crc (u32: CRC-32C of the body)  body
//   body = sequence (u64: 1, 2, 3... across all segments)  name length (u8)  state name  payload
//
// Reading a segment stops at the first record that is incomplete, fails its checksum or breaks the
// sequence. Whether that is a torn tail or damage in the middle is told apart by what follows: a
// crash can only leave a partial last write behind, so if any intact record with a later sequence
// number can be found after the bad spot, the log is damaged in the middle (and must not be
// loaded); if none can, the bad bytes are the unfinished tail and can be cut.
import { Crc32c } from '../mvcc/hash.js';

const MAGIC = new TextEncoder().encode('ETCDKIT-WAL\n');
const FORMAT_VERSION = 1;
/** Bytes of a segment's header. */
export const SEGMENT_HEADER_BYTES = MAGIC.length + 4;
const FRAME_HEADER_BYTES = 8;
const SEQUENCE_BYTES = 8;
/** Larger bodies are taken for damage: no record comes near (requests are at most a few MiB). */
const MAX_BODY_BYTES = 1 << 30;
/** How far past the last good sequence number a record found after damage may be. */
const SEQUENCE_SEARCH_WINDOW = 1 << 24;

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

/** One record read back from the log. */
export interface LogRecord {
  readonly sequence: number;
  /** The name of the state that appended it. */
  readonly state: string;
  readonly payload: Uint8Array;
}

/** The header every segment file starts with. */
export function segmentHeader(): Uint8Array {
  const header = new Uint8Array(SEGMENT_HEADER_BYTES);
  header.set(MAGIC);
  new DataView(header.buffer).setUint32(MAGIC.length, FORMAT_VERSION);
  return header;
}

/** One record, framed with its length and checksum. */
export function encodeRecord(sequence: number, state: string, payload: Uint8Array): Uint8Array {
  const name = textEncoder.encode(state);
  if (name.length === 0 || name.length > 255) throw new RangeError(`bad state name "${state}"`);
  const bodyLength = SEQUENCE_BYTES + 1 + name.length + payload.length;
  const frame = new Uint8Array(FRAME_HEADER_BYTES + bodyLength);
  const view = new DataView(frame.buffer);
  view.setUint32(0, bodyLength);
  view.setBigUint64(FRAME_HEADER_BYTES, BigInt(sequence));
  frame[FRAME_HEADER_BYTES + SEQUENCE_BYTES] = name.length;
  frame.set(name, FRAME_HEADER_BYTES + SEQUENCE_BYTES + 1);
  frame.set(payload, FRAME_HEADER_BYTES + SEQUENCE_BYTES + 1 + name.length);
  view.setUint32(4, new Crc32c().update(frame.subarray(FRAME_HEADER_BYTES)).digest());
  return frame;
}

/** Where and why reading a segment stopped early. */
export interface SegmentDamage {
  /** Offset of the first bad byte: everything before it is intact. */
  readonly offset: number;
  readonly reason: string;
  /**
   * True when nothing intact follows the bad spot: a torn tail, which may be cut. False when an
   * intact later record follows: damage in the middle.
   */
  readonly tail: boolean;
}

/** What reading one segment found. */
export interface ScannedSegment {
  readonly records: LogRecord[];
  /** Bytes up to the end of the last intact record (the whole file when nothing is wrong). */
  readonly intactBytes: number;
  readonly damage: SegmentDamage | undefined;
}

/**
 * Reads the records of a segment. `firstSequence` is the sequence number its first record must
 * have (the one after the previous segment's last), or undefined when any is fine.
 */
export function scanSegment(bytes: Uint8Array, firstSequence: number | undefined): ScannedSegment {
  const records: LogRecord[] = [];
  if (bytes.length < SEGMENT_HEADER_BYTES || !hasHeader(bytes)) {
    // A segment is created empty and gets its header with its first records; a crash in between
    // leaves it short. A full-length wrong header is not ours.
    const torn = bytes.length < SEGMENT_HEADER_BYTES && isHeaderPrefix(bytes);
    return {
      records,
      intactBytes: 0,
      damage: {
        offset: 0,
        reason: torn ? 'incomplete segment header' : 'not a log segment (bad header)',
        tail: torn,
      },
    };
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = SEGMENT_HEADER_BYTES;
  let expected = firstSequence;
  while (offset < bytes.length) {
    const read = readRecord(bytes, view, offset, expected);
    if ('reason' in read) {
      const last = expected === undefined ? 0 : expected - 1;
      // A record that passes its checksum yet is wrong was written wrong: no crash does that.
      const tail = !read.intact && !intactRecordFollows(bytes, view, offset + 1, last);
      return { records, intactBytes: offset, damage: { offset, reason: read.reason, tail } };
    }
    records.push(read.record);
    offset = read.next;
    expected = read.record.sequence + 1;
  }
  return { records, intactBytes: offset, damage: undefined };
}

function hasHeader(bytes: Uint8Array): boolean {
  const expected = segmentHeader();
  for (let i = 0; i < expected.length; i++) if (bytes[i] !== expected[i]) return false;
  return true;
}

/** A header cut short: a prefix of the real header, or zeros (space allocated, never written). */
function isHeaderPrefix(bytes: Uint8Array): boolean {
  const expected = segmentHeader();
  const prefix = bytes.every((byte, i) => byte === expected[i]);
  return prefix || bytes.every((byte) => byte === 0);
}

/** Why no record could be read; `intact` when the bytes passed their checksum all the same. */
interface Unreadable {
  readonly reason: string;
  readonly intact: boolean;
}

/** The record at `offset`, or why there is none. */
function readRecord(
  bytes: Uint8Array,
  view: DataView,
  offset: number,
  expected: number | undefined,
): { record: LogRecord; next: number } | Unreadable {
  const damaged = (reason: string): Unreadable => ({ reason, intact: false });
  if (bytes.length - offset < FRAME_HEADER_BYTES) return damaged('incomplete record header');
  const length = view.getUint32(offset);
  if (length < SEQUENCE_BYTES + 2 || length > MAX_BODY_BYTES) {
    return damaged(`bad record length ${length}`);
  }
  const start = offset + FRAME_HEADER_BYTES;
  if (start + length > bytes.length) return damaged('incomplete record');
  const body = bytes.subarray(start, start + length);
  if (new Crc32c().update(body).digest() !== view.getUint32(offset + 4)) {
    return damaged('record checksum mismatch');
  }
  const sequence = Number(view.getBigUint64(start));
  if (expected !== undefined && sequence !== expected) {
    return { reason: `record sequence ${sequence} where ${expected} was expected`, intact: true };
  }
  const nameLength = body[SEQUENCE_BYTES]!;
  const payloadStart = SEQUENCE_BYTES + 1 + nameLength;
  if (nameLength === 0 || payloadStart > length) {
    return { reason: 'bad state name length', intact: true };
  }
  return {
    record: {
      sequence,
      state: textDecoder.decode(body.subarray(SEQUENCE_BYTES + 1, payloadStart)),
      payload: body.subarray(payloadStart),
    },
    next: start + length,
  };
}

/**
 * Whether an intact record with a sequence number after `lastSequence` starts anywhere from
 * `from` on. Cheap checks (a plausible length and sequence number) come before the checksum, so
 * random bytes are passed over quickly.
 */
function intactRecordFollows(
  bytes: Uint8Array,
  view: DataView,
  from: number,
  lastSequence: number,
): boolean {
  const minimum = FRAME_HEADER_BYTES + SEQUENCE_BYTES + 2;
  for (let offset = from; offset + minimum <= bytes.length; offset++) {
    const length = view.getUint32(offset);
    if (length < SEQUENCE_BYTES + 2 || offset + FRAME_HEADER_BYTES + length > bytes.length) {
      continue;
    }
    const sequence = Number(view.getBigUint64(offset + FRAME_HEADER_BYTES));
    if (sequence <= lastSequence || sequence > lastSequence + SEQUENCE_SEARCH_WINDOW) continue;
    const body = bytes.subarray(offset + FRAME_HEADER_BYTES, offset + FRAME_HEADER_BYTES + length);
    if (new Crc32c().update(body).digest() === view.getUint32(offset + 4)) return true;
  }
  return false;
}
