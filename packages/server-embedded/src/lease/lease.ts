// One lease: its granted TTL, when it expires on the server's clock, and the keys attached to it.
import { keyString } from '../bytes.js';

/** A granted lease. Times are in milliseconds of the server's Clock. */
export class Lease {
  readonly id: bigint;
  /** The TTL it was granted, in seconds, after raising it to the minimum. */
  readonly ttl: number;
  /** Grant order, which breaks ties between leases expiring at the same time. */
  readonly grantSequence: number;
  /** When the lease expires; Infinity for a lease that never does (one granted without a clock). */
  expiresAt: number;
  // Keys by their string form, which is how they are ordered (see bytes.ts).
  readonly #attached = new Map<string, Uint8Array>();

  constructor(id: bigint, ttl: number, grantSequence: number, expiresAt: number) {
    this.id = id;
    this.ttl = ttl;
    this.grantSequence = grantSequence;
    this.expiresAt = expiresAt;
  }

  /** Milliseconds until it expires; zero or negative once it has. */
  remainingMs(now: number): number {
    return this.expiresAt - now;
  }

  /** True once its time is up (etcd: remaining <= 0), whether or not it was revoked yet. */
  isExpired(now: number): boolean {
    return this.remainingMs(now) <= 0;
  }

  /** Number of keys attached. */
  get keyCount(): number {
    return this.#attached.size;
  }

  attach(key: Uint8Array): void {
    this.#attached.set(keyString(key), key);
  }

  detach(key: Uint8Array): void {
    this.#attached.delete(keyString(key));
  }

  /**
   * The attached keys in key order. etcd lists them in Go map order, which is arbitrary; key order
   * is one of its possible answers and the one a revoke deletes them in.
   */
  keys(): Uint8Array[] {
    return [...this.#attached.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, key]) => key);
  }
}
