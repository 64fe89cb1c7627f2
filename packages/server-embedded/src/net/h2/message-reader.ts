// Request DATA split into gRPC messages (a compressed flag, a 4-byte length, the bytes), with the
// limits and words of grpc-js's server: a length over the receive limit is refused as soon as the
// prefix arrives, a compressed message is inflated with the call's grpc-encoding.
import { gunzipSync, inflateSync } from 'node:zlib';
import { GrpcCode } from '../../errors.js';

/** Octets before each message: the compressed flag and the length. */
export const MESSAGE_HEADER_BYTES = 5;

/** A request the server refuses, with the status grpc-js sends for it. */
export class MessageError extends Error {
  constructor(
    readonly code: GrpcCode,
    message: string,
  ) {
    super(message);
    this.name = 'MessageError';
  }
}

/** Splits one request's DATA into messages; a message is copied only when it spans chunks. */
export class MessageReader {
  readonly #maxBytes: number;
  readonly #encoding: string;
  readonly #chunks: Buffer[] = [];
  #buffered = 0;
  /** The length of the message being read; -1 while its prefix is incomplete. */
  #length = -1;
  #compressed = false;

  constructor(maxBytes: number, encoding: string) {
    this.#maxBytes = maxBytes;
    this.#encoding = encoding;
  }

  /** True while part of a message is held: the request ended in the middle of one. */
  get partial(): boolean {
    return this.#buffered > 0 || this.#length >= 0;
  }

  /** Adds a chunk; the messages it completes, in order. Throws MessageError. */
  push(chunk: Buffer): Buffer[] {
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    const messages: Buffer[] = [];
    for (;;) {
      if (this.#length < 0) {
        if (this.#buffered < MESSAGE_HEADER_BYTES) return messages;
        const prefix = this.#take(MESSAGE_HEADER_BYTES);
        const length = prefix.readUInt32BE(1);
        if (length > this.#maxBytes) {
          throw new MessageError(
            GrpcCode.RESOURCE_EXHAUSTED,
            `Received message larger than max (${length} vs ${this.#maxBytes})`,
          );
        }
        this.#compressed = prefix[0] !== 0;
        this.#length = length;
      }
      if (this.#buffered < this.#length) return messages;
      const bytes = this.#take(this.#length);
      this.#length = -1;
      messages.push(this.#compressed ? this.#inflate(bytes) : bytes);
    }
  }

  #inflate(bytes: Buffer): Buffer {
    const options = { maxOutputLength: this.#maxBytes };
    let out: Buffer;
    try {
      if (this.#encoding === 'gzip') out = gunzipSync(bytes, options);
      else if (this.#encoding === 'deflate') out = inflateSync(bytes, options);
      else {
        throw new MessageError(
          GrpcCode.UNIMPLEMENTED,
          `Received message compressed with unsupported encoding "${this.#encoding}"`,
        );
      }
    } catch (error) {
      if (error instanceof MessageError) throw error;
      if (error instanceof RangeError) {
        throw new MessageError(
          GrpcCode.RESOURCE_EXHAUSTED,
          `Received message that decompresses to a size larger than ${this.#maxBytes}`,
        );
      }
      throw new MessageError(GrpcCode.INTERNAL, 'Failed to decompress message');
    }
    return out;
  }

  /** Removes the first `n` buffered octets (n <= buffered), copying only across chunks. */
  #take(n: number): Buffer {
    this.#buffered -= n;
    const first = this.#chunks[0];
    if (first !== undefined && first.length >= n) {
      if (first.length === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.#chunks[0]!;
      const wanted = n - filled;
      if (chunk.length <= wanted) {
        out.set(chunk, filled);
        filled += chunk.length;
        this.#chunks.shift();
      } else {
        out.set(chunk.subarray(0, wanted), filled);
        this.#chunks[0] = chunk.subarray(wanted);
        filled = n;
      }
    }
    return out;
  }
}
