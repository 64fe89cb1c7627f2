// The leases ordered by expiry, so that each expiry check looks only at the leases that are due
// (etcd's LeaseExpiredNotifier). A min-heap on (expiry, grant order) with lazy removal: a renewed or
// revoked lease leaves its old entry behind, which is skipped when it surfaces.
import type { Lease } from './lease.js';

interface Entry {
  readonly lease: Lease;
  /** When to look at the lease: its expiry, or later for a revoke to be retried. */
  readonly at: number;
  /** The expiry the entry was queued for; stale once the lease's expiry moved. */
  readonly expiresAt: number;
}

/** Leases by expiry time. */
export class ExpiryQueue {
  readonly #heap: Entry[] = [];
  /** When each lease was last queued for, so that queuing it again for the same time is a no-op. */
  readonly #queued = new WeakMap<Lease, number>();

  /**
   * Queues `lease` to be looked at `at` (default: its expiry). Call again after every change of
   * its expiry; the entries for the old one are then ignored.
   */
  push(lease: Lease, at = lease.expiresAt): void {
    if (!Number.isFinite(at) || this.#queued.get(lease) === at) return;
    this.#queued.set(lease, at);
    this.#heap.push({ lease, at, expiresAt: lease.expiresAt });
    this.#up(this.#heap.length - 1);
  }

  /**
   * Removes and returns the earliest lease due at or before `now`, skipping entries that
   * `isCurrent` rejects (revoked leases) and those for an expiry that has moved since.
   */
  popDue(now: number, isCurrent: (lease: Lease) => boolean): Lease | undefined {
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined) return undefined;
      const stale = top.lease.expiresAt !== top.expiresAt || !isCurrent(top.lease);
      if (!stale && top.at > now) return undefined;
      this.#pop();
      if (stale) continue;
      this.#queued.delete(top.lease);
      return top.lease;
    }
  }

  /** Number of entries, stale ones included. */
  get size(): number {
    return this.#heap.length;
  }

  #pop(): void {
    const last = this.#heap.pop();
    if (last === undefined || this.#heap.length === 0) return;
    this.#heap[0] = last;
    this.#down(0);
  }

  #before(a: Entry, b: Entry): boolean {
    if (a.at !== b.at) return a.at < b.at;
    return a.lease.grantSequence < b.lease.grantSequence;
  }

  #up(index: number): void {
    const heap = this.#heap;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!this.#before(heap[index]!, heap[parent]!)) return;
      [heap[index], heap[parent]] = [heap[parent]!, heap[index]!];
      index = parent;
    }
  }

  #down(index: number): void {
    const heap = this.#heap;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      if (left < heap.length && this.#before(heap[left]!, heap[smallest]!)) smallest = left;
      if (right < heap.length && this.#before(heap[right]!, heap[smallest]!)) smallest = right;
      if (smallest === index) return;
      [heap[index], heap[smallest]] = [heap[smallest]!, heap[index]!];
      index = smallest;
    }
  }
}
