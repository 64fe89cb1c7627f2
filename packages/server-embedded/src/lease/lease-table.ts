// The lease bookkeeping: leases by id, the keys attached to each, and their expiry order. It knows
// nothing of requests, raft or time; the LeaseApplier decides when leases are granted, renewed and
// revoked. Revoking deletes every attached key in one store revision, in key order, as etcd does
// (its lessor sorts the keys so that every member writes the same revision).

import type { Lessor } from '../mvcc/lessor.js';
import type { MvccStore } from '../mvcc/store.js';
import { ExpiryQueue } from './expiry-queue.js';
import { Lease } from './lease.js';

/**
 * A lease coming or going: what a data dir logs (expiries and keep-alives are not changes: a
 * restarted member gives every lease its full TTL again).
 */
export type LeaseChange =
  | { readonly type: 'grant'; readonly leaseId: bigint; readonly ttl: number }
  | { readonly type: 'revoke'; readonly leaseId: bigint };

/** Leases by id, each with the keys attached to it. */
export class LeaseTable implements Lessor {
  readonly #leases = new Map<bigint, Lease>();
  readonly #expiries = new ExpiryQueue();
  #grants = 0;
  readonly #changeListeners = new Set<(change: LeaseChange) => void>();

  /**
   * Calls `listener` after every grant and revoke from now on (a revoke after its keys were
   * deleted). Returns an unsubscribe function.
   */
  subscribe(listener: (change: LeaseChange) => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  /**
   * Creates a lease of `ttl` seconds expiring at `expiresAt` (default: never). False when the id
   * is already in use.
   */
  grant(leaseId: bigint, ttl = 0, expiresAt = Number.POSITIVE_INFINITY): boolean {
    if (this.#leases.has(leaseId)) return false;
    const lease = new Lease(leaseId, ttl, this.#grants++, expiresAt);
    this.#leases.set(leaseId, lease);
    this.#expiries.push(lease);
    this.#changed({ type: 'grant', leaseId, ttl });
    return true;
  }

  /** The lease with this id, if it exists (expired leases exist until they are revoked). */
  get(leaseId: bigint): Lease | undefined {
    return this.#leases.get(leaseId);
  }

  has(leaseId: bigint): boolean {
    return this.#leases.has(leaseId);
  }

  /** Number of leases. */
  get size(): number {
    return this.#leases.size;
  }

  /**
   * The expiry queue, read for its size: entries include renewed leases' stale ones until they
   * reach the front. Exposed for the memory bench (bench/memory-server.ts), which counts them.
   */
  get expiries(): { readonly size: number } {
    return this.#expiries;
  }

  /** Every lease, in grant order. */
  all(): Lease[] {
    return [...this.#leases.values()];
  }

  attach(leaseId: bigint, key: Uint8Array): void {
    this.#leases.get(leaseId)?.attach(key);
  }

  detach(leaseId: bigint, key: Uint8Array): void {
    this.#leases.get(leaseId)?.detach(key);
  }

  /** The keys attached to a lease, in key order. */
  keys(leaseId: bigint): Uint8Array[] {
    return this.#leases.get(leaseId)?.keys() ?? [];
  }

  /** Moves a lease's expiry (a keep-alive, or a test expiring it now). */
  setExpiry(lease: Lease, expiresAt: number): void {
    lease.expiresAt = expiresAt;
    this.#expiries.push(lease);
  }

  /** Looks at `lease` again at `at`, without moving its expiry (a revoke that must be retried). */
  retryExpiry(lease: Lease, at: number): void {
    this.#expiries.push(lease, at);
  }

  /** Removes and returns the earliest lease due at `now`, if any, in expiry then grant order. */
  nextExpired(now: number): Lease | undefined {
    return this.#expiries.popDue(now, (lease) => this.#leases.get(lease.id) === lease);
  }

  /**
   * Ends a lease and deletes its keys in one revision of `store` (none when it has no keys).
   * False when the lease does not exist.
   */
  revoke(leaseId: bigint, store: MvccStore): boolean {
    const lease = this.#leases.get(leaseId);
    if (lease === undefined) return false;
    const keys = lease.keys();
    if (keys.length > 0) {
      const write = store.write();
      try {
        for (const key of keys) write.deleteRange({ key });
      } finally {
        write.end();
      }
    }
    this.#leases.delete(leaseId);
    this.#changed({ type: 'revoke', leaseId });
    return true;
  }

  #changed(change: LeaseChange): void {
    for (const listener of this.#changeListeners) listener(change);
  }
}
