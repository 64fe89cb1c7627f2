// What the store and the KV applier need from leases. The lease service (grant, keep-alive,
// expiry on a Clock) will implement this interface; until then LeaseTable is enough to validate and
// attach leases and to revoke them.

/** The lease bookkeeping the store relies on. */
export interface Lessor {
  /** True when the lease exists now (granted, not revoked, not expired). */
  has(leaseId: bigint): boolean;
  /** Called inside the write that puts `key` with `leaseId`. */
  attach(leaseId: bigint, key: Uint8Array): void;
  /** Called inside the write that deletes `key`, or puts it with another lease or none. */
  detach(leaseId: bigint, key: Uint8Array): void;
}
