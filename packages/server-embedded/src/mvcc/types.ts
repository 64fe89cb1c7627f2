// The store's view of keys, values and changes. Revisions, versions and counts are numbers (see
// revision.ts); lease ids are bigint because etcd's are full 64-bit values.

/** A key's value at some revision, as Range returns it. */
export interface KeyValue {
  readonly key: Uint8Array;
  readonly value: Uint8Array;
  /** Revision of the put that created the key's current generation. */
  readonly createRevision: number;
  /** Revision of the key's latest change. */
  readonly modRevision: number;
  /** Puts since the key was created, starting at 1. */
  readonly version: number;
  /** Lease the key is attached to; 0n for none. */
  readonly lease: bigint;
}

/**
 * One change of a committed revision. For a delete, `kv` holds only the key and the revision of the
 * delete (`modRevision`); its other fields are zero, as in etcd's watch events.
 */
export interface MvccEvent {
  readonly type: 'put' | 'delete';
  readonly kv: KeyValue;
}

/** Every change one write request made, in op order, all sharing one revision. */
export interface CommittedRevision {
  readonly revision: number;
  readonly events: readonly MvccEvent[];
}
