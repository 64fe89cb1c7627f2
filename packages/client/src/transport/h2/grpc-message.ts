// gRPC message framing (the "Length-Prefixed-Message" of gRPC over HTTP/2), for both roles: each
// message is a 1-byte compressed flag, a 4-byte big-endian length and the message bytes. The
// client reads responses and the embedded server reads requests with the same reader; a
// compressed message is refused unless the reader's owner knows how to inflate it.
import { ChunkQueue } from './chunk-queue.js';

/** Octets before each message: the compressed flag and the length. */
export const MESSAGE_PREFIX_BYTES = 5;

/** gRPC status codes the framing itself can produce (the same numbers in every status table). */
export const GRPC_RESOURCE_EXHAUSTED = 8;
export const GRPC_UNIMPLEMENTED = 12;
export const GRPC_INTERNAL = 13;

/** A framing violation or a message over the receive limit, with the gRPC status to report. */
export class GrpcMessageError extends Error {
  constructor(
    /** The gRPC status code the call ends with. */
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'GrpcMessageError';
  }
}

/** Frames one uncompressed message: prefix and bytes in one buffer, ready for one DATA write. */
export function encodeMessage(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(MESSAGE_PREFIX_BYTES + message.byteLength);
  frame[0] = 0;
  frame.writeUInt32BE(message.byteLength, 1);
  frame.set(message, MESSAGE_PREFIX_BYTES);
  return frame;
}

/**
 * Splits the DATA chunks of one call's direction into messages. Chunks are kept as received and
 * copied only when a prefix or message spans several of them, so a large message costs one copy.
 * A length over the limit is refused as soon as its prefix arrives, before its bytes are held.
 */
export class MessageReader {
  readonly #maxBytes: number;
  readonly #queue = new ChunkQueue();
  /** Length of the message being read, or -1 while its prefix is incomplete. */
  #length = -1;
  #compressed = false;

  /** `maxBytes`: the largest message accepted; a larger one fails the call. */
  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** The largest message accepted. */
  get maxBytes(): number {
    return this.#maxBytes;
  }

  /** True when bytes of an unfinished message are held (the direction ended inside one). */
  get partial(): boolean {
    return this.#queue.length > 0 || this.#length >= 0;
  }

  /**
   * Adds a chunk and returns the messages it completes, in order (views into the chunks, valid
   * while the caller decodes them). Throws GrpcMessageError; the reader is unusable after that.
   */
  push(chunk: Buffer): Buffer[] {
    this.#queue.push(chunk);
    const messages: Buffer[] = [];
    for (;;) {
      if (this.#length < 0) {
        if (this.#queue.length < MESSAGE_PREFIX_BYTES) return messages;
        const prefix = this.#queue.take(MESSAGE_PREFIX_BYTES);
        const length = prefix.readUInt32BE(1);
        this.#compressed = prefix[0] !== 0;
        if (this.#compressed) this.compressedMessage();
        if (length > this.#maxBytes) {
          throw new GrpcMessageError(
            GRPC_RESOURCE_EXHAUSTED,
            `Received message larger than max (${length} vs ${this.#maxBytes})`,
          );
        }
        this.#length = length;
      }
      if (this.#queue.length < this.#length) return messages;
      const bytes = this.#queue.take(this.#length);
      this.#length = -1;
      messages.push(this.#compressed ? this.decompress(bytes) : bytes);
    }
  }

  /**
   * A message with the compressed flag is announced: throws when this reader cannot inflate one
   * (the default: no compression was negotiated).
   */
  protected compressedMessage(): void {
    throw new GrpcMessageError(
      GRPC_INTERNAL,
      'received a compressed message, but no compression was negotiated',
    );
  }

  /** Inflates a compressed message (only reached when compressedMessage() allowed it). */
  protected decompress(bytes: Buffer): Buffer {
    return bytes;
  }
}
