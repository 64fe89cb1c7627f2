// Bytes received in chunks, taken from the front in pieces of any size: kept as they came and
// copied only when a piece spans chunks, so a large gRPC message costs one copy at most. Both
// ends' gRPC message readers (grpc-message.ts's MessageReader, on the client and the embedded server) use it.

/** A queue of received chunks read from the front. */
export class ChunkQueue {
  readonly #chunks: Buffer[] = [];
  #length = 0;

  /** Octets held. */
  get length(): number {
    return this.#length;
  }

  /** Appends a chunk (an empty one is ignored). */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#length += chunk.length;
  }

  /** Removes and returns the first `n` octets (n <= length): a view when one chunk holds them. */
  take(n: number): Buffer {
    if (n === 0) return Buffer.alloc(0);
    this.#length -= n;
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
