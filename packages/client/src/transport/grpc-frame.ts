// gRPC message framing (the "Length-Prefixed-Message" of the gRPC over HTTP/2 protocol): each
// message is a 1-byte compressed flag, a 4-byte big-endian length and the protobuf bytes. Only
// uncompressed messages are sent and accepted (no `grpc-encoding` is ever negotiated).
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
  readonly #chunks: Buffer[] = [];
  /** Bytes held in #chunks. */
  #buffered = 0;
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
    if (chunk.byteLength > 0) {
      this.#chunks.push(chunk);
      this.#buffered += chunk.byteLength;
    }
    const messages: Buffer[] = [];
    for (;;) {
      if (this.#length < 0) {
        if (this.#buffered < FRAME_HEADER_BYTES) return messages;
        const header = this.#take(FRAME_HEADER_BYTES);
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
      if (this.#buffered < this.#length) return messages;
      messages.push(this.#take(this.#length));
      this.#length = -1;
    }
  }

  /** True when bytes of an unfinished message are held (a response cut short). */
  get partial(): boolean {
    return this.#buffered > 0 || this.#length >= 0;
  }

  /** Removes the first `n` buffered bytes (n <= #buffered), copying only across chunks. */
  #take(n: number): Buffer {
    this.#buffered -= n;
    const first = this.#chunks[0];
    if (n === 0) return Buffer.alloc(0);
    if (first !== undefined && first.byteLength >= n) {
      if (first.byteLength === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.#chunks[0]!;
      const wanted = n - filled;
      if (chunk.byteLength <= wanted) {
        out.set(chunk, filled);
        filled += chunk.byteLength;
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
