// What `apply` sees of the store inside runStm: its own file, so the attempt that implements it
// and the run (stm.ts) that drives attempts both import it without importing each other.
import type { Bytes, LeaseRef } from '@etcdkit/client';

/** Options of {@link Stm.put}. */
export interface StmPutOptions {
  /** Attach the key to this lease (an id or a granted lease) when the transaction commits. */
  readonly lease?: LeaseRef;
}

/**
 * The view `apply` gets of the store inside {@link runStm}. Reads go to etcd (or to values
 * prefetched for this attempt) and are remembered: reading a key twice in one attempt returns the
 * same value. Writes are buffered and sent together at commit, where they apply only if the
 * isolation level's checks pass. A key written in this attempt reads back as written
 * (read-your-writes; such reads are not validated).
 *
 * The object belongs to one attempt: once `apply` has returned, using it throws
 * InvalidArgumentError.
 */
export interface Stm {
  /** The value of `key` as UTF-8, or `undefined` when it does not exist. */
  get(key: Bytes): Promise<string | undefined>;
  /** The value of `key` as bytes, or `undefined` when it does not exist. */
  getBytes(key: Bytes): Promise<Uint8Array | undefined>;
  /**
   * The mod revision of `key` as this attempt reads the store (0n when it does not exist). It is a
   * read (the key joins the keys validated at commit); writes buffered in this attempt do not
   * change it.
   */
  rev(key: Bytes): Promise<bigint>;
  /** Buffers a write of `key`; it replaces any earlier write or delete of `key` in this attempt. */
  put(key: Bytes, value: Bytes, options?: StmPutOptions): void;
  /** Buffers a delete of `key`; it replaces any earlier write of `key` in this attempt. */
  del(key: Bytes): void;
}
