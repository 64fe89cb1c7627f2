// gRPC message framing (the "Length-Prefixed-Message" of the gRPC over HTTP/2 protocol): each
// message is a 1-byte compressed flag, a 4-byte big-endian length and the protobuf bytes. Only
// uncompressed messages are sent and accepted (no `grpc-encoding` is ever negotiated).
import { ChunkQueue } from './h2/chunk-queue.js';
import { GrpcStatus } from './types.js';

/** Bytes before each message: the compressed flag and the length. */
export const FRAME_HEADER_BYTES = 5;

/** A framing violation or a message over the receive limit, with the gRPC status to report. */
export class FrameError extends Error {
  constructor(
    readonly code: GrpcStatus,
    message: string,
  ) {
    super(message);
    this.name = 'FrameError';
  }
}

/** Frames one message: header and payload in one buffer, ready for one HTTP/2 DATA write. */
export function encodeFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + message.byteLength);
  frame[0] = 0;
  frame.writeUInt32BE(message.byteLength, 1);
  frame.set(message, FRAME_HEADER_BYTES);
  return frame;
}

/**
 * Splits the DATA chunks of one response into messages. Chunks are kept as received and copied
 * only when a header or message spans several of them, so a large message costs one copy.
 */
export class FrameDecoder {
  readonly #maxMessageBytes: number;
  readonly #queue = new ChunkQueue();
  /** Length of the message being read, or -1 while its header is not complete. */
  #length = -1;

  /** `maxMessageBytes`: the largest message accepted; a larger one fails the response. */
  constructor(maxMessageBytes: number) {
    this.#maxMessageBytes = maxMessageBytes;
  }

  /**
   * Adds a chunk and returns the messages it completes, in order (views into the chunks, valid
   * while the caller decodes them). Throws FrameError on a compressed or oversized message; the
   * decoder must not be used after that.
   */
  push(chunk: Buffer): Buffer[] {
    this.#queue.push(chunk);
    const messages: Buffer[] = [];
    for (;;) {
      if (this.#length < 0) {
        if (this.#queue.length < FRAME_HEADER_BYTES) return messages;
        const header = this.#queue.take(FRAME_HEADER_BYTES);
        const length = header.readUInt32BE(1);
        if (header[0] !== 0) {
          throw new FrameError(
            GrpcStatus.Internal,
            'received a compressed message, but no compression was negotiated',
          );
        }
        if (length > this.#maxMessageBytes) {
          throw new FrameError(
            GrpcStatus.ResourceExhausted,
            `Received message larger than max (${length} vs ${this.#maxMessageBytes})`,
          );
        }
        this.#length = length;
      }
      if (this.#queue.length < this.#length) return messages;
      messages.push(this.#queue.take(this.#length));
      this.#length = -1;
    }
  }

  /** True when bytes of an unfinished message are held (a response cut short). */
  get partial(): boolean {
    return this.#queue.length > 0 || this.#length >= 0;
  }
}
