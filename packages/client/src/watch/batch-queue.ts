// The batches a watcher holds for its iterator, counted in events for the backpressure bound.
import type { WatchBatch } from './types.js';

/** A FIFO of batches that knows how many events it holds. */
export class BatchQueue {
  #items: WatchBatch[] = [];
  #head = 0;
  #events = 0;

  /** Events held, over all batches. */
  get events(): number {
    return this.#events;
  }

  /** Batches held. */
  get length(): number {
    return this.#items.length - this.#head;
  }

  push(batch: WatchBatch): void {
    this.#items.push(batch);
    this.#events += batch.events.length;
  }

  shift(): WatchBatch | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const batch = this.#items[this.#head]!;
    this.#items[this.#head++] = undefined as unknown as WatchBatch;
    this.#events -= batch.events.length;
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return batch;
  }

  clear(): void {
    this.#items = [];
    this.#head = 0;
    this.#events = 0;
  }
}
