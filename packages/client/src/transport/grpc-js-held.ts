// The request bytes a grpc-js channel's calls handed to grpc-js that it has not reported written:
// grpc-js shows neither its HTTP/2 session nor its streams' buffers, so this is what bounds them
// (maxBufferedRequestBytes). A stream's message counts until its write callback, a unary or
// server-stream request, which grpc-js writes without one, until the answer's headers or status.
import { type RequestBufferFullError, refusal } from './request-bound.js';

/** A channel's count of unwritten request bytes, against its bound. */
export class HeldRequests {
  readonly #limit: number;
  #bytes = 0;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Request bytes held now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** A hold for one call's requests. */
  forCall(): CallHold {
    return new CallHold(this);
  }

  /** @internal Counts `bytes` more, or returns the refusal (nothing counted) beyond the bound. */
  take(bytes: number): RequestBufferFullError | undefined {
    const refused = refusal(this.#bytes, bytes, this.#limit);
    if (refused === undefined) this.#bytes += bytes;
    return refused;
  }

  /** @internal `bytes` were written, or their call ended. */
  release(bytes: number): void {
    this.#bytes -= bytes;
  }
}

/** What one call holds of its channel's count; ended, it holds nothing and takes nothing more. */
export class CallHold {
  readonly #held: HeldRequests;
  #bytes = 0;
  #ended = false;

  constructor(held: HeldRequests) {
    this.#held = held;
  }

  /** Counts a request of `bytes`, or returns the refusal beyond the bound. */
  take(bytes: number): RequestBufferFullError | undefined {
    if (this.#ended) return undefined;
    const refused = this.#held.take(bytes);
    if (refused === undefined) this.#bytes += bytes;
    return refused;
  }

  /** `bytes` of this call's requests were written. */
  written(bytes: number): void {
    if (this.#ended) return;
    this.#bytes -= bytes;
    this.#held.release(bytes);
  }

  /** The call has its answer or ended: nothing of it is held any longer. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#held.release(this.#bytes);
    this.#bytes = 0;
  }
}
