// HTTP/2 frames (RFC 9113 section 4 and 6): the header of every frame, the header block fragment
// inside a HEADERS or CONTINUATION frame, and the frames that carry a header block. The client's
// own HTTP/2 transport (h2-connection.ts) and the embedded server's authority filter both use them.

/** What a client sends before any frame (RFC 9113, 3.4). */
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Octets of every frame's header: length (3), type, flags, stream id (4). */
export const FRAME_HEADER_BYTES = 9;
export const FRAME_HEADERS = 0x1;
export const FRAME_CONTINUATION = 0x9;
export const FLAG_END_STREAM = 0x1;
export const FLAG_END_HEADERS = 0x4;
export const FLAG_PADDED = 0x8;
export const FLAG_PRIORITY = 0x20;
/** SETTINGS_MAX_FRAME_SIZE of Node's HTTP/2 server (HTTP/2's default). */
export const MAX_FRAME_PAYLOAD = 16_384;

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

/** A HEADERS frame, and CONTINUATION frames if the block is too large for one frame. */
export function headerFrames(block: OpenBlock, headerBlock: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  const priority = block.priority ?? Buffer.alloc(0);
  let offset = 0;
  let first = true;
  do {
    const room = MAX_FRAME_PAYLOAD - (first ? priority.length : 0);
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
