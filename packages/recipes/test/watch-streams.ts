// Counting a client's open watch streams, to check that a recipe leaves no watch behind.
import { expect } from 'vitest';

/**
 * Pass `hooks` as a client's watch hooks, with `idleStreamMs: 0`: `open` counts its watch streams.
 * The client then closes its one stream when no watcher is left, so 0 means every watcher closed.
 */
export class StreamCounter {
  open = 0;
  readonly hooks = {
    onStreamOpen: () => {
      this.open++;
    },
    onStreamClose: () => {
      this.open--;
    },
  };

  /** Asserts that every watch stream closes within 2 s. */
  async expectAllClosed(): Promise<void> {
    await expect.poll(() => this.open, { timeout: 2_000 }).toBe(0);
  }
}
