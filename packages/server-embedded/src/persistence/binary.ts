// The byte layout of log records and snapshot sections: unsigned varints for counts, lengths and
// revisions (exact up to 2^53, like the store's revisions), length-prefixed byte strings, and
// 64-bit two's complement for lease and member ids. A reader refuses to run past its input, so a
// damaged record fails loudly instead of decoding garbage.

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder('utf-8', { fatal: true });

/** Builds a byte string piece by piece. */
export class ByteWriter {
  #buffer: Uint8Array;
  #view: DataView;
  #length = 0;

  constructor(initialBytes = 64) {
    this.#buffer = new Uint8Array(initialBytes);
    this.#view = new DataView(this.#buffer.buffer);
  }

  /** One byte. */
  u8(value: number): this {
    this.#reserve(1);
    this.#buffer[this.#length++] = value;
    return this;
  }

  /** A big-endian unsigned 32-bit integer. */
  u32(value: number): this {
    this.#reserve(4);
    this.#view.setUint32(this.#length, value);
    this.#length += 4;
    return this;
  }

  /** A non-negative integer up to 2^53, 7 bits per byte. */
  varint(value: number): this {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`not a varint: ${value}`);
    }
    this.#reserve(8);
    while (value >= 0x80) {
      this.#buffer[this.#length++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.#buffer[this.#length++] = value;
    return this;
  }

  /** A signed 64-bit integer (lease and member ids), big-endian. */
  int64(value: bigint): this {
    this.#reserve(8);
    this.#view.setBigInt64(this.#length, BigInt.asIntN(64, value));
    this.#length += 8;
    return this;
  }

  /** A length-prefixed byte string. */
  bytes(value: Uint8Array): this {
    this.varint(value.length);
    return this.raw(value);
  }

  /** Bytes as they are, without a length. */
  raw(value: Uint8Array): this {
    this.#reserve(value.length);
    this.#buffer.set(value, this.#length);
    this.#length += value.length;
    return this;
  }

  /** A length-prefixed UTF-8 string. */
  string(value: string): this {
    return this.bytes(textEncoder.encode(value));
  }

  /** The bytes written so far (a view: write nothing more once taken). */
  finish(): Uint8Array {
    return this.#buffer.subarray(0, this.#length);
  }

  #reserve(bytes: number): void {
    if (this.#length + bytes <= this.#buffer.length) return;
    let size = this.#buffer.length * 2;
    while (size < this.#length + bytes) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.#buffer.subarray(0, this.#length));
    this.#buffer = grown;
    this.#view = new DataView(grown.buffer);
  }
}

/** Thrown when bytes do not decode: the data was damaged or is not what it claims to be. */
export class MalformedDataError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedDataError';
  }
}

/** Reads what a {@link ByteWriter} wrote, in the same order. */
export class ByteReader {
  readonly #input: Uint8Array;
  readonly #view: DataView;
  #offset = 0;

  constructor(bytes: Uint8Array) {
    this.#input = bytes;
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** True once every byte was read. */
  get done(): boolean {
    return this.#offset === this.#input.length;
  }

  u8(): number {
    this.#need(1);
    return this.#input[this.#offset++]!;
  }

  u32(): number {
    this.#need(4);
    const value = this.#view.getUint32(this.#offset);
    this.#offset += 4;
    return value;
  }

  varint(): number {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = this.u8();
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) break;
      scale *= 0x80;
      if (scale > 2 ** 56) throw new MalformedDataError('varint too long');
    }
    if (!Number.isSafeInteger(value)) throw new MalformedDataError('varint out of range');
    return value;
  }

  int64(): bigint {
    this.#need(8);
    const value = this.#view.getBigInt64(this.#offset);
    this.#offset += 8;
    return value;
  }

  /** A length-prefixed byte string, copied (the input may be a large buffer not worth keeping). */
  bytes(): Uint8Array {
    const length = this.varint();
    this.#need(length);
    const value = this.#input.slice(this.#offset, this.#offset + length);
    this.#offset += length;
    return value;
  }

  string(): string {
    const length = this.varint();
    this.#need(length);
    try {
      return textDecoder.decode(this.#input.subarray(this.#offset, this.#offset + length));
    } catch {
      throw new MalformedDataError('invalid UTF-8 string');
    } finally {
      this.#offset += length;
    }
  }

  /** Fails unless every byte was read: trailing bytes mean a layout this code does not know. */
  end(): void {
    if (!this.done) {
      throw new MalformedDataError(
        `${this.#input.length - this.#offset} unexpected trailing bytes`,
      );
    }
  }

  #need(bytes: number): void {
    if (this.#offset + bytes > this.#input.length) {
      throw new MalformedDataError('unexpected end of data');
    }
  }
}
