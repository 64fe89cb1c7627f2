// HTTP/2 frames (RFC 9113 section 4 and 6): the header of every frame, the header block fragment
// inside a HEADERS or CONTINUATION frame, and the frames that carry a header block. The connection
// core (session.ts) and both roles over it (the client's h2-connection.ts, the embedded server's
// net/h2) use them.

/** What a client sends before any frame (RFC 9113, 3.4). */
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Octets of every frame's header: length (3), type, flags, stream id (4). */
export const FRAME_HEADER_BYTES = 9;
export const FRAME_DATA = 0x0;
export const FRAME_HEADERS = 0x1;
export const FRAME_PRIORITY = 0x2;
export const FRAME_RST_STREAM = 0x3;
export const FRAME_SETTINGS = 0x4;
export const FRAME_PUSH_PROMISE = 0x5;
export const FRAME_PING = 0x6;
export const FRAME_GOAWAY = 0x7;
export const FRAME_WINDOW_UPDATE = 0x8;
export const FRAME_CONTINUATION = 0x9;
/** ACK, on SETTINGS and PING frames. */
export const FLAG_ACK = 0x1;
export const FLAG_END_STREAM = 0x1;
export const FLAG_END_HEADERS = 0x4;
export const FLAG_PADDED = 0x8;
export const FLAG_PRIORITY = 0x20;
/** SETTINGS_MAX_FRAME_SIZE of Node's HTTP/2 server (HTTP/2's default). */
export const MAX_FRAME_PAYLOAD = 16_384;

/** SETTINGS parameters (RFC 9113, 6.5.2). */
export const SETTINGS_HEADER_TABLE_SIZE = 0x1;
export const SETTINGS_ENABLE_PUSH = 0x2;
export const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
export const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
export const SETTINGS_MAX_FRAME_SIZE = 0x5;
export const SETTINGS_MAX_HEADER_LIST_SIZE = 0x6;

/** Error codes of RST_STREAM and GOAWAY (RFC 9113, 7). */
export const NO_ERROR = 0x0;
export const PROTOCOL_ERROR = 0x1;
export const INTERNAL_ERROR = 0x2;
export const FLOW_CONTROL_ERROR = 0x3;
export const FRAME_SIZE_ERROR = 0x6;
export const REFUSED_STREAM = 0x7;
export const CANCEL = 0x8;
export const COMPRESSION_ERROR = 0x9;
export const ENHANCE_YOUR_CALM = 0xb;

/** The initial flow control window of every stream and of the connection (RFC 9113, 6.9.2). */
export const DEFAULT_WINDOW = 65_535;
/** The largest flow control window (2^31 - 1). */
export const MAX_WINDOW = 0x7fff_ffff;

/** Writes a frame header at `offset` of `into`. */
export function writeFrameHeader(
  into: Buffer,
  offset: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): void {
  into[offset] = length >>> 16;
  into[offset + 1] = (length >>> 8) & 0xff;
  into[offset + 2] = length & 0xff;
  into[offset + 3] = type;
  into[offset + 4] = flags;
  into.writeUInt32BE(streamId, offset + 5);
}

/** One frame whose payload is `payload`, in one buffer. */
export function frameOf(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  writeFrameHeader(out, 0, payload.length, type, flags, streamId);
  payload.copy(out, FRAME_HEADER_BYTES);
  return out;
}

/** A SETTINGS frame of `[parameter, value]` pairs. */
export function settingsFrame(settings: ReadonlyArray<readonly [number, number]>): Buffer {
  const payload = Buffer.allocUnsafe(6 * settings.length);
  settings.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, 6 * i);
    payload.writeUInt32BE(value, 6 * i + 2);
  });
  return frameOf(FRAME_SETTINGS, 0, 0, payload);
}

/** A WINDOW_UPDATE frame granting `increment` octets on `streamId` (0: the connection). */
export function windowUpdateFrame(streamId: number, increment: number): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + 4);
  writeFrameHeader(out, 0, 4, FRAME_WINDOW_UPDATE, 0, streamId);
  out.writeUInt32BE(increment, FRAME_HEADER_BYTES);
  return out;
}

/** A RST_STREAM frame ending `streamId` with `code`. */
export function rstStreamFrame(streamId: number, code: number): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + 4);
  writeFrameHeader(out, 0, 4, FRAME_RST_STREAM, 0, streamId);
  out.writeUInt32BE(code, FRAME_HEADER_BYTES);
  return out;
}

/** A GOAWAY frame: the last stream processed, the error code and optional debug data. */
export function goawayFrame(lastStreamId: number, code: number, debug = ''): Buffer {
  const data = Buffer.from(debug);
  const out = Buffer.allocUnsafe(FRAME_HEADER_BYTES + 8 + data.length);
  writeFrameHeader(out, 0, 8 + data.length, FRAME_GOAWAY, 0, 0);
  out.writeUInt32BE(lastStreamId, FRAME_HEADER_BYTES);
  out.writeUInt32BE(code, FRAME_HEADER_BYTES + 4);
  data.copy(out, FRAME_HEADER_BYTES + 8);
  return out;
}

/** A header block being received: its HEADERS frame, then CONTINUATION frames. */
export interface OpenBlock {
  readonly streamId: number;
  readonly endStream: boolean;
  /** The priority fields of the HEADERS frame, if it had them. */
  readonly priority: Buffer | undefined;
  readonly fragments: Buffer[];
  /** The frames as received, to forward unchanged when nothing needs rewriting. */
  readonly frames: Buffer[];
  /** Octets in {@link fragments}. */
  length: number;
}

/** The header block fragment in what came of a HEADERS or CONTINUATION frame cut short. */
export function cutFragment(cut: Buffer): Buffer {
  const payload = cut.subarray(FRAME_HEADER_BYTES);
  if (cut[3] === FRAME_CONTINUATION) return payload;
  const flags = cut[4]!;
  let start = 0;
  let end = cut.readUIntBE(0, 3);
  if (flags & FLAG_PADDED) {
    start = 1;
    end -= payload[0] ?? 0;
  }
  if (flags & FLAG_PRIORITY) start += 5;
  return payload.subarray(start, Math.max(start, Math.min(end, payload.length)));
}

/**
 * The header block fragment of a HEADERS frame's payload, and its priority fields if it has them.
 * Throws when the padding does not fit in the payload.
 */
export function headersFragment(
  flags: number,
  payload: Buffer,
): { fragment: Buffer; priority: Buffer | undefined } {
  let start = 0;
  let end = payload.length;
  if (flags & FLAG_PADDED) {
    const padding = payload[0];
    if (padding === undefined) throw new Error('HEADERS frame without its padding length');
    start = 1;
    end -= padding;
  }
  let priority: Buffer | undefined;
  if (flags & FLAG_PRIORITY) {
    priority = payload.subarray(start, start + 5);
    start += 5;
  }
  if (end < start) throw new Error('bad HEADERS padding');
  return { fragment: payload.subarray(start, end), priority };
}

/**
 * A HEADERS frame, and CONTINUATION frames if the block is too large for one frame of
 * `maxPayload` octets.
 */
export function headerFrames(
  block: Pick<OpenBlock, 'streamId' | 'endStream' | 'priority'>,
  headerBlock: Buffer,
  maxPayload = MAX_FRAME_PAYLOAD,
): Buffer[] {
  const frames: Buffer[] = [];
  const priority = block.priority ?? Buffer.alloc(0);
  let offset = 0;
  let first = true;
  do {
    const room = maxPayload - (first ? priority.length : 0);
    const piece = headerBlock.subarray(offset, offset + room);
    offset += piece.length;
    let flags = offset >= headerBlock.length ? FLAG_END_HEADERS : 0;
    if (first) {
      if (block.endStream) flags |= FLAG_END_STREAM;
      if (block.priority !== undefined) flags |= FLAG_PRIORITY;
    }
    const payload = first ? Buffer.concat([priority, piece]) : piece;
    const header = Buffer.alloc(FRAME_HEADER_BYTES);
    header.writeUIntBE(payload.length, 0, 3);
    header[3] = first ? FRAME_HEADERS : FRAME_CONTINUATION;
    header[4] = flags;
    header.writeUInt32BE(block.streamId, 5);
    frames.push(header, payload);
    first = false;
  } while (offset < headerBlock.length);
  return frames;
}
