// What Status reports as the database size, and what the backend quota is checked against. etcd
// reports its bbolt file: it grows as history is written, never shrinks on its own (deleted and
// compacted pages become free pages inside the file), and shrinks back to what is in use when
// defragmented. The embedded server has no file, so it estimates: an empty etcd's sizes plus the
// kept history and the leases, in whole 4 KiB pages, with the file size as the high-water mark of
// that estimate until a defragment.
import type { LeaseTable } from '../lease/lease-table.js';
import type { MvccStore } from '../mvcc/store.js';

/** Size of a fresh etcd's bbolt file, and how much of it is in use (measured on etcd 3.4). */
const EMPTY_DB_SIZE = 20_480;
const EMPTY_DB_SIZE_IN_USE = 16_384;
/** etcd's own estimate of what one lease costs its backend (its quota's leaseOverhead). */
const LEASE_BYTES = 64;
const PAGE_SIZE = 4096;

/** Estimated database size, in bytes. */
export class BackendSize {
  readonly #store: MvccStore;
  readonly #leases: LeaseTable;
  /** The most data ever held since the last defragment, in bytes. */
  #highWater = 0;

  constructor(store: MvccStore, leases: LeaseTable) {
    this.#store = store;
    this.#leases = leases;
    // Every commit may grow the data; between commits only lease grants do, which `size` sees.
    store.subscribe(() => this.#observe());
  }

  /** The database file's size (Status' dbSize), which the quota applies to. */
  get size(): number {
    this.#observe();
    return EMPTY_DB_SIZE + pages(this.#highWater);
  }

  /** The bytes of it in use (Status' dbSizeInUse); the rest is what a defragment gives back. */
  get sizeInUse(): number {
    return EMPTY_DB_SIZE_IN_USE + pages(this.#dataBytes());
  }

  /** Gives the free pages back: the file shrinks to what is in use. */
  defragment(): void {
    this.#highWater = this.#dataBytes();
  }

  #observe(): void {
    this.#highWater = Math.max(this.#highWater, this.#dataBytes());
  }

  #dataBytes(): number {
    return this.#store.historyBytes + this.#leases.size * LEASE_BYTES;
  }
}

function pages(bytes: number): number {
  return Math.ceil(bytes / PAGE_SIZE) * PAGE_SIZE;
}
