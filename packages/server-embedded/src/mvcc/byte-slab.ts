// Copies of the bytes the store keeps, packed into shared chunks. A Uint8Array with its own
// ArrayBuffer costs about 400 bytes beyond its data (the buffer object, its backing store record
// and a malloc block); a view into a shared chunk costs only the view (issue 28.1). A chunk is
// freed once no kept view points into it, so compacted history returns its memory chunk by chunk;
// chunks are small so that a few long-lived values do not pin much.
import { EMPTY_BYTES } from '../bytes.js';

/** Bytes per chunk (the history's ValueChunks packs values in the same size). */
export const CHUNK_BYTES = 16 * 1024;
/** Copies larger than this get their own buffer: they would waste a chunk's tail. */
export const LARGEST_PACKED = 1024;

/** Packs copies of byte strings into shared chunks. */
export class ByteSlab {
  #chunk = new Uint8Array(0);
  #used = 0;

  /** A copy of `bytes` that shares no memory with them. */
  copy(bytes: Uint8Array): Uint8Array {
    const length = bytes.length;
    if (length === 0) return EMPTY_BYTES;
    if (length > LARGEST_PACKED) return new Uint8Array(bytes);
    if (this.#used + length > this.#chunk.length) {
      this.#chunk = new Uint8Array(CHUNK_BYTES);
      this.#used = 0;
    }
    const copy = this.#chunk.subarray(this.#used, this.#used + length);
    copy.set(bytes);
    this.#used += length;
    return copy;
  }
}
