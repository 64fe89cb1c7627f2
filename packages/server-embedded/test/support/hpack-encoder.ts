// A test-only HPACK encoder (RFC 7541) and HTTP/2 frame helpers, to build the byte streams the
// authority rewriter is fuzzed with. The encoder keeps its own dynamic table and lets the caller
// choose every representation (indexed, literal with/without/never indexing, name by index or
// not, table size updates), so generated blocks use the table the way real encoders may. Strings
// are sent as plain octets: Huffman-coded blocks come from Node's own HTTP/2 client in the
// end-to-end properties. Also a strict decoder for what the rewriter re-encodes: literals that
// neither use nor change a dynamic table.
import { STATIC_TABLE } from '@etcdkit/client/h2';

/** One header field as the fuzz tests see it: latin1 strings, one char per octet. */
export interface Field {
  readonly name: string;
  readonly value: string;
  /** Sent as "never indexed". */
  readonly sensitive: boolean;
}

/** How to encode one field; the encoder falls back when the table cannot serve the choice. */
export type Representation = 'indexed' | 'incremental' | 'without' | 'never';

/** One step of a header block: a field, or a dynamic table size update. */
export type BlockItem =
  | {
      readonly kind: 'field';
      readonly field: Field;
      readonly how: Representation;
      readonly nameByIndex: boolean;
    }
  | { readonly kind: 'size'; readonly size: number };

const STATIC = STATIC_TABLE;

/** Encodes the header blocks of one connection direction, in order. */
export class TestHpackEncoder {
  private entries: [string, string][] = [];
  private size = 0;
  private maxSize = 4096;

  /** The header block for `items`, and the fields a decoder must read from it. */
  encode(items: readonly BlockItem[]): { block: Buffer; fields: Field[] } {
    const out: number[] = [];
    const fields: Field[] = [];
    for (const item of items) {
      if (item.kind === 'size') {
        writeInt(out, 0x20, 5, item.size);
        this.maxSize = item.size;
        this.evict(0);
        continue;
      }
      const { field, how, nameByIndex } = item;
      const exact = this.find(field.name, field.value);
      if (how === 'indexed' && exact !== undefined) {
        writeInt(out, 0x80, 7, exact);
        fields.push({ ...field, sensitive: false });
        continue;
      }
      const nameIndex = nameByIndex ? this.find(field.name, undefined) : undefined;
      const kind = how === 'indexed' ? 'incremental' : how;
      const [flags, prefix] =
        kind === 'incremental' ? [0x40, 6] : kind === 'never' ? [0x10, 4] : [0x00, 4];
      writeInt(out, flags, prefix, nameIndex ?? 0);
      if (nameIndex === undefined) writeString(out, field.name);
      writeString(out, field.value);
      if (kind === 'incremental') this.add(field.name, field.value);
      fields.push({ ...field, sensitive: kind === 'never' });
    }
    return { block: Buffer.from(out), fields };
  }

  /** The index of an entry with this name (and value, unless undefined), if there is one. */
  private find(name: string, value: string | undefined): number | undefined {
    const matches = ([n, v]: readonly [string, string]) =>
      n === name && (value === undefined || v === value);
    const s = STATIC.findIndex(matches);
    if (s >= 0) return s + 1;
    const d = this.entries.findIndex(matches);
    return d >= 0 ? STATIC.length + d + 1 : undefined;
  }

  private add(name: string, value: string): void {
    const entry = name.length + value.length + 32;
    this.evict(entry);
    if (entry > this.maxSize) return;
    this.entries.unshift([name, value]);
    this.size += entry;
  }

  private evict(room: number): void {
    while (this.entries.length > 0 && this.size + room > this.maxSize) {
      const [n, v] = this.entries.pop()!;
      this.size -= n.length + v.length + 32;
    }
  }
}

function writeInt(out: number[], flags: number, prefixBits: number, value: number): void {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out.push(flags | value);
    return;
  }
  out.push(flags | max);
  let rest = value - max;
  while (rest >= 0x80) {
    out.push(0x80 | (rest & 0x7f));
    rest >>>= 7;
  }
  out.push(rest);
}

function writeString(out: number[], text: string): void {
  writeInt(out, 0x00, 7, text.length);
  for (let i = 0; i < text.length; i++) out.push(text.charCodeAt(i));
}

/**
 * Decodes a block the rewriter produced, which must hold only plain literals without indexing or
 * never indexed (so the server's table stays empty); throws on anything else.
 */
export function decodeLiteralsOnly(block: Buffer): Field[] {
  const fields: Field[] = [];
  let at = 0;
  const int = (prefixBits: number): number => {
    const max = (1 << prefixBits) - 1;
    let value = block[at++]! & max;
    if (value < max) return value;
    let shift = 0;
    for (;;) {
      if (at >= block.length) throw new Error('truncated integer');
      const byte = block[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
      if ((byte & 0x80) === 0) return value;
    }
  };
  const str = (): string => {
    if (block[at]! & 0x80) throw new Error('Huffman string in a rewritten block');
    const length = int(7);
    if (at + length > block.length) throw new Error('string past the end');
    const text = block.subarray(at, at + length).toString('latin1');
    at += length;
    return text;
  };
  while (at < block.length) {
    const first = block[at]!;
    if ((first & 0xe0) !== 0) throw new Error(`not a plain literal: 0x${first.toString(16)}`);
    if ((first & 0x0f) !== 0) throw new Error('literal with an indexed name');
    at++;
    const name = str();
    fields.push({ name, value: str(), sensitive: (first & 0x10) !== 0 });
  }
  return fields;
}

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = { END_STREAM: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;

/** One frame: a 9-octet header and the payload. */
export function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId >>> 0, 5);
  return Buffer.concat([header, payload]);
}

/** A parsed frame. */
export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Buffer;
  /** The frame's bytes as they were. */
  readonly raw: Buffer;
}

/** Splits a byte stream (after the preface) into frames; throws when it ends inside one. */
export function parseFrames(bytes: Buffer): Frame[] {
  const frames: Frame[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (at + 9 > bytes.length) throw new Error('stream ends inside a frame header');
    const length = bytes.readUIntBE(at, 3);
    if (at + 9 + length > bytes.length) throw new Error('stream ends inside a frame');
    frames.push({
      type: bytes[at + 3]!,
      flags: bytes[at + 4]!,
      streamId: bytes.readUInt32BE(at + 5) & 0x7fff_ffff,
      payload: bytes.subarray(at + 9, at + 9 + length),
      raw: bytes.subarray(at, at + 9 + length),
    });
    at += 9 + length;
  }
  return frames;
}
