// A minimal in-memory lessor: leases are granted and revoked explicitly, with no TTL. Revoking
// deletes every attached key in one store revision, in key order, as etcd's lessor does.
import { keyString } from '../bytes.js';
import type { MvccStore } from '../mvcc/store.js';
import type { Lessor } from './lessor.js';

/** Leases by id, each with the keys attached to it. */
export class LeaseTable implements Lessor {
  private readonly leases = new Map<bigint, Map<string, Uint8Array>>();

  /** Creates a lease; false when the id is already in use. */
  grant(leaseId: bigint): boolean {
    if (this.leases.has(leaseId)) return false;
    this.leases.set(leaseId, new Map());
    return true;
  }

  has(leaseId: bigint): boolean {
    return this.leases.has(leaseId);
  }

  attach(leaseId: bigint, key: Uint8Array): void {
    this.leases.get(leaseId)?.set(keyString(key), key);
  }

  detach(leaseId: bigint, key: Uint8Array): void {
    this.leases.get(leaseId)?.delete(keyString(key));
  }

  /** The keys attached to a lease, in key order. */
  keys(leaseId: bigint): Uint8Array[] {
    const keys = this.leases.get(leaseId);
    if (keys === undefined) return [];
    return [...keys.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, key]) => key);
  }

  /**
   * Ends a lease and deletes its keys in one revision of `store` (none when it has no keys).
   * False when the lease does not exist.
   */
  revoke(leaseId: bigint, store: MvccStore): boolean {
    if (!this.leases.has(leaseId)) return false;
    const keys = this.keys(leaseId);
    if (keys.length > 0) {
      const write = store.write();
      for (const key of keys) write.deleteRange({ key });
      write.end();
    }
    this.leases.delete(leaseId);
    return true;
  }
}
