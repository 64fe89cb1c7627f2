// What the store and the KV applier need from leases: whether one exists, and to be told which keys
// are attached to which lease. LeaseTable implements it; the LeaseApplier grants, renews and
// revokes the leases in it.

/** The lease bookkeeping the store relies on. */
export interface Lessor {
  /**
   * True when the lease exists: granted and not revoked yet. As in etcd, a lease whose time is up
   * exists until the expiry check revokes it, and a put may still attach keys to it meanwhile.
   */
  has(leaseId: bigint): boolean;
  /** Called inside the write that puts `key` with `leaseId`. */
  attach(leaseId: bigint, key: Uint8Array): void;
  /** Called inside the write that deletes `key`, or puts it with another lease or none. */
  detach(leaseId: bigint, key: Uint8Array): void;
}
