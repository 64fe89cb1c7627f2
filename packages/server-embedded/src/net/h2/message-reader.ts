// Request DATA split into gRPC messages (a compressed flag, a 4-byte length, the bytes), with the
// limits and words of grpc-js's server: a length over the receive limit is refused as soon as the
// prefix arrives, a compressed message is inflated with the call's grpc-encoding.
import { gunzipSync, inflateSync } from 'node:zlib';
import { ChunkQueue } from '@etcdkit/client/h2';
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
  readonly #queue = new ChunkQueue();
  /** The length of the message being read; -1 while its prefix is incomplete. */
  #length = -1;
  #compressed = false;

  constructor(maxBytes: number, encoding: string) {
    this.#maxBytes = maxBytes;
    this.#encoding = encoding;
  }

  /** True while part of a message is held: the request ended in the middle of one. */
  get partial(): boolean {
    return this.#queue.length > 0 || this.#length >= 0;
  }

  /** Adds a chunk; the messages it completes, in order. Throws MessageError. */
  push(chunk: Buffer): Buffer[] {
    this.#queue.push(chunk);
    const messages: Buffer[] = [];
    for (;;) {
      if (this.#length < 0) {
        if (this.#queue.length < MESSAGE_HEADER_BYTES) return messages;
        const prefix = this.#queue.take(MESSAGE_HEADER_BYTES);
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
      if (this.#queue.length < this.#length) return messages;
      const bytes = this.#queue.take(this.#length);
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
}
