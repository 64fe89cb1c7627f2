// The limits node:http2 (nghttp2 under it) puts on a header block, the defaults of both roles of
// the connection core (session.ts): what a client meets when its metadata is too large is what it
// would meet on a node:http2 server, and a server's oversized answer headers fail as on node.

/**
 * Most CONTINUATION frames after a HEADERS frame (nghttp2's default max_continuations): one more
 * is a connection error, INTERNAL_ERROR as node reports it. This also bounds what a header block
 * can make the server buffer (9 frames of at most 16,384 octets: this side never raises
 * SETTINGS_MAX_FRAME_SIZE).
 */
export const MAX_CONTINUATIONS = 8;

/**
 * Most header fields, pseudo-headers included, in one block (node's maxHeaderListPairs default):
 * one more and the stream is reset with ENHANCE_YOUR_CALM; the connection goes on.
 */
export const MAX_HEADER_PAIRS = 128;

/** Longest HPACK string literal as sent (nghttp2's NGHTTP2_HD_MAX_NV): longer is COMPRESSION_ERROR. */
export const MAX_STRING_LITERAL = 65_536;

/**
 * A bound on the decoded header list, for the decoder to stop at: a block within the limits above
 * with at most MAX_HEADER_PAIRS fields decodes to less (Huffman inflates at most 8/5, a table
 * entry is at most 4,096 octets), so only a block that is reset anyway for its pairs reaches it.
 */
export const MAX_DECODED_LIST = 1024 * 1024;

/**
 * True when the (possibly partial) header block has a string literal longer than
 * {@link MAX_STRING_LITERAL}, found as nghttp2 finds it: from its length prefix, before its bytes.
 * A block cut short (or malformed) is false here: the decoder judges it.
 */
export function hasOversizedString(block: Uint8Array, limit: number = MAX_STRING_LITERAL): boolean {
  let offset = 0;
  /** An N-bit prefix integer (RFC 7541, 5.1); -1 when cut short or absurd. */
  const integer = (prefixBits: number): number => {
    if (offset >= block.length) return -1;
    const full = 2 ** prefixBits - 1;
    let value = block[offset++]! & full;
    if (value < full) return value;
    for (let shift = 0; shift <= 28; shift += 7) {
      if (offset >= block.length) return -1;
      const byte = block[offset++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
    return -1;
  };
  /** Skips one string literal: 1 oversized, 0 skipped, -1 cut short. */
  const string = (): number => {
    const length = integer(7);
    if (length < 0) return -1;
    if (length > limit) return 1;
    offset += length;
    return offset > block.length ? -1 : 0;
  };
  while (offset < block.length) {
    const first = block[offset]!;
    let prefixBits: number;
    if (first & 0x80) {
      if (integer(7) < 0) return false;
      continue;
    }
    if (first & 0x40) prefixBits = 6;
    else if (first & 0x20) {
      if (integer(5) < 0) return false;
      continue;
    } else prefixBits = 4;
    const index = integer(prefixBits);
    if (index < 0) return false;
    if (index === 0) {
      const name = string();
      if (name !== 0) return name === 1;
    }
    const value = string();
    if (value !== 0) return value === 1;
  }
  return false;
}
