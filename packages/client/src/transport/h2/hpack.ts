// HPACK header blocks (RFC 7541): a decoder that follows the peer's dynamic table, and an encoder
// that writes literals only. The connection core (session.ts) decodes the peer's blocks with it in
// both roles (grpc-go servers and node:http2 clients index their headers); literals keep the
// peer's dynamic table empty, so it never disagrees with what was meant.
import { decodeHuffman } from './huffman.js';

/** One header field; names and values are bytes, held as latin1 strings (one char per byte). */
export interface HeaderField {
  readonly name: string;
  readonly value: string;
  /** Sent as "never indexed" (a sensitive value): kept so when re-encoded. */
  readonly sensitive: boolean;
}

/** A header block that is not valid HPACK. */
export class HpackError extends Error {
  constructor(message: string) {
    super(`invalid HPACK header block: ${message}`);
    this.name = 'HpackError';
  }
}

/**
 * A dynamic table size update after a header field representation. RFC 7541, 4.2 allows them only
 * at the beginning of a header block, so the block is invalid whatever the dynamic table holds:
 * every HPACK decoder refuses it (nghttp2, under Node's HTTP/2 server, with a GOAWAY carrying
 * COMPRESSION_ERROR).
 */
export class MisplacedTableSizeUpdateError extends HpackError {
  constructor() {
    super('dynamic table size update after a header field');
    this.name = 'MisplacedTableSizeUpdateError';
  }
}

// RFC 7541, Appendix A.
export const STATIC_TABLE: readonly (readonly [string, string])[] = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];

/** Every entry costs its name and value plus 32 octets (RFC 7541, 4.1). */
const ENTRY_OVERHEAD = 32;
/** SETTINGS_HEADER_TABLE_SIZE that Node's HTTP/2 server announces (and HTTP/2's default). */
export const DEFAULT_HEADER_TABLE_SIZE = 4096;
/**
 * SETTINGS_MAX_HEADER_LIST_SIZE that Node's HTTP/2 server announces: the largest header list it
 * accepts, counted as the dynamic table counts entries (RFC 7540, 6.5.2).
 */
export const DEFAULT_MAX_HEADER_LIST_SIZE = 65_535;

/** Decodes the header blocks of one direction of one connection, in order. */
export class HeaderBlockDecoder {
  // Newest first, as HPACK indexes them (62 is the newest).
  readonly #entries: (readonly [string, string])[] = [];
  #size = 0;
  #maxSize: number;
  /** The table size the encoder may not exceed (SETTINGS_HEADER_TABLE_SIZE). */
  readonly #sizeLimit: number;
  readonly #maxListSize: number;

  constructor(maxSize = DEFAULT_HEADER_TABLE_SIZE, maxListSize = DEFAULT_MAX_HEADER_LIST_SIZE) {
    this.#maxListSize = maxListSize;
    this.#maxSize = maxSize;
    this.#sizeLimit = maxSize;
  }

  /**
   * Decodes one complete header block, updating the dynamic table as the encoder did. A block
   * whose header list is larger than the receiver accepts is refused: a few octets that refer to
   * a large table entry would otherwise decode to megabytes.
   */
  decode(block: Uint8Array): HeaderField[] {
    const fields: HeaderField[] = [];
    const reader = new BlockReader(block);
    // No closure per block: under a runtime that keeps function names (tsx), each one made costs a
    // defineProperty, and a call decodes two blocks.
    let listSize = 0;
    while (!reader.done) {
      const first = reader.peek();
      if (first & 0x80) {
        // Indexed header field.
        const [name, value] = this.#lookup(reader.integer(7));
        listSize = this.#push(fields, listSize, { name, value, sensitive: false });
      } else if (first & 0x40) {
        // Literal with incremental indexing.
        const field = this.#literal(reader, 6, false);
        this.#add(field.name, field.value);
        listSize = this.#push(fields, listSize, field);
      } else if (first & 0x20) {
        // Dynamic table size update, which may not exceed the receiver's setting (RFC 7541, 6.3).
        // Any number of them may open the block (nghttp2 takes three as well as two), none may
        // follow a field: every field representation is in `fields` by now.
        if (fields.length > 0) throw new MisplacedTableSizeUpdateError();
        const size = reader.integer(5);
        if (size > this.#sizeLimit) throw new HpackError(`table size ${size} above the limit`);
        this.#maxSize = size;
        this.#evict(0);
      } else {
        // Literal without indexing (0000) or never indexed (0001).
        listSize = this.#push(fields, listSize, this.#literal(reader, 4, (first & 0x10) !== 0));
      }
    }
    return fields;
  }

  /** Adds `field` to the block's list within the list size limit; the list's size after it. */
  #push(fields: HeaderField[], listSize: number, field: HeaderField): number {
    const size = listSize + field.name.length + field.value.length + ENTRY_OVERHEAD;
    if (size > this.#maxListSize) {
      throw new HpackError(`header list larger than ${this.#maxListSize} octets`);
    }
    fields.push(field);
    return size;
  }

  #literal(reader: BlockReader, prefixBits: number, sensitive: boolean): HeaderField {
    const index = reader.integer(prefixBits);
    const name = index === 0 ? reader.string() : this.#lookup(index)[0];
    return { name, value: reader.string(), sensitive };
  }

  #lookup(index: number): readonly [string, string] {
    if (index === 0) throw new HpackError('index 0');
    const entry =
      index <= STATIC_TABLE.length
        ? STATIC_TABLE[index - 1]
        : this.#entries[index - STATIC_TABLE.length - 1];
    if (entry === undefined) throw new HpackError(`index ${index} is not in the table`);
    return entry;
  }

  #add(name: string, value: string): void {
    const entrySize = name.length + value.length + ENTRY_OVERHEAD;
    // An entry larger than the table empties it and is not added (RFC 7541, 4.4).
    this.#evict(entrySize);
    if (entrySize > this.#maxSize) return;
    this.#entries.unshift([name, value]);
    this.#size += entrySize;
  }

  /** Evicts the oldest entries until `room` more octets fit. */
  #evict(room: number): void {
    while (this.#entries.length > 0 && this.#size + room > this.#maxSize) {
      const [name, value] = this.#entries.pop()!;
      this.#size -= name.length + value.length + ENTRY_OVERHEAD;
    }
  }
}

/**
 * Encodes header fields as literals without indexing (never indexed for sensitive ones), with
 * plain strings: the block is valid for a receiver in any dynamic table state and changes none.
 */
export function encodeLiterals(fields: readonly HeaderField[]): Buffer {
  const bytes: number[] = [];
  for (const field of fields) {
    bytes.push(field.sensitive ? 0x10 : 0x00);
    for (const text of [field.name, field.value]) {
      writeInteger(bytes, 0x00, 7, text.length);
      for (let i = 0; i < text.length; i++) bytes.push(text.charCodeAt(i) & 0xff);
    }
  }
  return Buffer.from(bytes);
}

/** Appends an integer with an N-bit prefix (RFC 7541, 5.1), `flags` in the bits above it. */
export function writeInteger(
  bytes: number[],
  flags: number,
  prefixBits: number,
  value: number,
): void {
  const limit = 2 ** prefixBits - 1;
  if (value < limit) {
    bytes.push(flags | value);
    return;
  }
  bytes.push(flags | limit);
  let rest = value - limit;
  while (rest >= 128) {
    bytes.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
}

/** Reads HPACK's primitives from one header block. */
class BlockReader {
  #offset = 0;
  readonly #block: Buffer;

  constructor(block: Uint8Array) {
    // A Buffer view (no copy), so plain literals are read straight into strings.
    this.#block = Buffer.isBuffer(block)
      ? block
      : Buffer.from(block.buffer, block.byteOffset, block.byteLength);
  }

  get done(): boolean {
    return this.#offset >= this.#block.length;
  }

  peek(): number {
    return this.#block[this.#offset]!;
  }

  /** An integer with an N-bit prefix (RFC 7541, 5.1). */
  integer(prefixBits: number): number {
    const limit = 2 ** prefixBits - 1;
    let value = this.#byte() & limit;
    if (value < limit) return value;
    let factor = 1;
    for (;;) {
      const byte = this.#byte();
      value += (byte & 0x7f) * factor;
      factor *= 128;
      if ((byte & 0x80) === 0) return value;
      // Headers never need integers this large; a longer run is garbage or an attack.
      if (factor > 2 ** 28) throw new HpackError('integer too large');
    }
  }

  /** A string literal, Huffman-encoded or not (RFC 7541, 5.2), as latin1. */
  string(): string {
    const huffman = (this.peek() & 0x80) !== 0;
    const length = this.integer(7);
    if (this.#offset + length > this.#block.length) throw new HpackError('string past the end');
    const start = this.#offset;
    this.#offset += length;
    // A plain literal is read in place: copying it into a Buffer first cost a copy per field.
    if (!huffman) return this.#block.toString('latin1', start, this.#offset);
    return decodeHuffman(this.#block.subarray(start, this.#offset)).toString('latin1');
  }

  #byte(): number {
    if (this.done) throw new HpackError('truncated');
    return this.#block[this.#offset++]!;
  }
}

/** An HPACK string literal, not Huffman-coded. */
export function writeString(bytes: number[], text: string): void {
  // Header names and values are ASCII nearly always (a gRPC request's grpc-timeout, a token): copied
  // by char code, without a Buffer made and iterated per string.
  let ascii = true;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (ascii) {
    writeInteger(bytes, 0x00, 7, text.length);
    for (let i = 0; i < text.length; i++) bytes.push(text.charCodeAt(i));
    return;
  }
  const raw = Buffer.from(text, 'utf8');
  writeInteger(bytes, 0x00, 7, raw.length);
  for (let i = 0; i < raw.length; i++) bytes.push(raw[i]!);
}

/**
 * A literal field with incremental indexing (01, RFC 7541, 6.2.1): the receiver adds it to its
 * dynamic table as the newest entry. Its name a static table index or spelled out.
 */
export function writeIndexingLiteral(bytes: number[], name: number | string, value: string): void {
  if (typeof name === 'number') writeInteger(bytes, 0x40, 6, name);
  else {
    bytes.push(0x40);
    writeString(bytes, name);
  }
  writeString(bytes, value);
}

/** A literal field without indexing (0000), its name a static table index or spelled out. */
export function writeLiteral(bytes: number[], name: number | string, value: string): void {
  if (typeof name === 'number') writeInteger(bytes, 0x00, 4, name);
  else {
    bytes.push(0x00);
    writeString(bytes, name);
  }
  writeString(bytes, value);
}
