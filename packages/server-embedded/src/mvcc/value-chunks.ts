// The values the history keeps, packed into shared 16 KiB chunks and addressed by a number, their
// place (chunk id * CHUNK_BYTES + offset), so that a kept value costs its bytes and no object: a
// Uint8Array view costs about 100 bytes of heap, made only when a value is read (issue 28.1).
// Each chunk counts the values still kept in it and is dropped when the last one goes, so
// compacted history returns its memory chunk by chunk; ids of dropped chunks are reused.

// Chunk size and the largest packed value are the key slab's (byte-slab.ts); values larger get
// a chunk of their own.
import { CHUNK_BYTES, LARGEST_PACKED } from './byte-slab.js';

/** Packed copies of values, each addressed by its place and length. */
export class ValueChunks {
  readonly #chunks: (Uint8Array | undefined)[] = [];
  /** Each chunk's buffer (a chunk has one to itself), for views. */
  readonly #buffers: (ArrayBuffer | undefined)[] = [];
  /** Values kept in each chunk. */
  readonly #kept: number[] = [];
  /** Ids of dropped chunks, to reuse. */
  readonly #free: number[] = [];
  /** The chunk new small values go to; -1 before the first. */
  #current = -1;
  #used = CHUNK_BYTES;

  /** Keeps a copy of `bytes` (not empty) and returns its place. */
  add(bytes: Uint8Array): number {
    const length = bytes.length;
    if (length > LARGEST_PACKED) {
      const id = this.#newChunk(new Uint8Array(bytes));
      this.#kept[id] = 1;
      return id * CHUNK_BYTES;
    }
    if (this.#used + length > CHUNK_BYTES) {
      const previous = this.#current;
      this.#current = this.#newChunk(new Uint8Array(CHUNK_BYTES));
      this.#used = 0;
      if (previous !== -1 && this.#kept[previous] === 0) this.#drop(previous);
    }
    const offset = this.#used;
    this.#chunks[this.#current]!.set(bytes, offset);
    this.#used += length;
    this.#kept[this.#current]!++;
    return this.#current * CHUNK_BYTES + offset;
  }

  /** A view of the value kept at `place`, `length` bytes long. */
  view(place: number, length: number): Uint8Array {
    // Every read of history makes one: no floating-point remainder, no buffer getter, and the
    // constructor rather than subarray (which looks up a species constructor).
    const id = Math.floor(place / CHUNK_BYTES);
    return new Uint8Array(this.#buffers[id]!, place - id * CHUNK_BYTES, length);
  }

  /** The chunk holding the value kept at `place` (it starts at offsetOf(place)): read, no view made. */
  chunkOf(place: number): Uint8Array {
    return this.#chunks[Math.floor(place / CHUNK_BYTES)]!;
  }

  /** Where in its chunk the value kept at `place` starts. */
  offsetOf(place: number): number {
    return place - Math.floor(place / CHUNK_BYTES) * CHUNK_BYTES;
  }

  /** Forgets the value kept at `place`; its chunk goes with its last value. */
  release(place: number): void {
    const id = Math.floor(place / CHUNK_BYTES);
    const kept = --this.#kept[id]!;
    if (kept === 0 && id !== this.#current) this.#drop(id);
  }

  #newChunk(chunk: Uint8Array): number {
    const id = this.#free.pop() ?? this.#chunks.length;
    this.#chunks[id] = chunk;
    this.#buffers[id] = chunk.buffer as ArrayBuffer;
    this.#kept[id] = 0;
    return id;
  }

  #drop(id: number): void {
    this.#chunks[id] = undefined;
    this.#buffers[id] = undefined;
    this.#free.push(id);
  }
}
