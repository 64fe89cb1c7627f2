// The ordered key space: one KeyIndex per key that still has history, in a B+ tree ordered by the
// key's bytes; the tree's key is the KeyIndex's own key, so a key is held once.
import { compareBytes } from '../bytes.js';
import { type BTree, newBytesTree } from './btree.js';
import { KeyIndex, KeyPosition, type KeyState } from './key-index.js';
import type { Revision } from './revision.js';

/**
 * A key range as the store reads it: `end` undefined selects the single key `key`; an empty `end`
 * selects every key >= `key`; otherwise the half-open range [key, end). An `end` at or below `key`
 * selects nothing.
 */
export interface KeyRange {
  readonly key: Uint8Array;
  readonly end?: Uint8Array | undefined;
}

/** Every key with history, ordered by its bytes. */
export class KeyIndexTree {
  readonly #tree: BTree<Uint8Array, KeyIndex> = newBytesTree();

  /** Number of keys that still have history (live or deleted but not yet compacted away). */
  get size(): number {
    return this.#tree.size;
  }

  /** The state of `key` at `atRevision`, or undefined when it did not exist then. */
  get(key: Uint8Array, atRevision: number): KeyState | undefined {
    return this.#tree.get(key)?.get(atRevision);
  }

  /** The history of `key`, if it has any; its `key` is the copy the store keeps. */
  find(key: Uint8Array): KeyIndex | undefined {
    return this.#tree.get(key);
  }

  /**
   * Records a put of `key` at `revision`; `found` is `find(key)` when the caller looked it up
   * already. A new key's history keeps `key` itself (not a copy). Returns the key's history.
   */
  put(key: Uint8Array, revision: Revision, found = this.#tree.get(key)): KeyIndex {
    let index = found;
    if (index === undefined) {
      index = new KeyIndex(key);
      this.#tree.set(key, index);
    }
    index.put(revision);
    return index;
  }

  /**
   * Restores a key from its oldest kept change (see KeyIndex.restore); later changes of the key
   * are then recorded with put and tombstone.
   */
  restore(
    key: Uint8Array,
    change: { created: Revision; modified: Revision; version: number; tombstone: boolean },
  ): KeyIndex {
    if (this.#tree.has(key)) throw new Error('key index: restoring a key that already has history');
    const index = new KeyIndex(key);
    index.restore(change.created, change.modified, change.version, change.tombstone);
    this.#tree.set(key, index);
    return index;
  }

  /** True when `key` has history (live, or deleted and not compacted away yet). */
  has(key: Uint8Array): boolean {
    return this.#tree.has(key);
  }

  /** Records a delete of `key` at `revision`; returns its history, or undefined (and records
   * nothing) when the key is not live. */
  tombstone(key: Uint8Array, revision: Revision): KeyIndex | undefined {
    const index = this.#tree.get(key);
    return index?.tombstone(revision) ? index : undefined;
  }

  /**
   * Calls `visit` for each key of `range` that exists at `atRevision`, in key order, with its
   * state filled in one KeyPosition (valid during the call only), until it returns false: a
   * range's walk without objects per key.
   */
  forEach(
    range: KeyRange,
    atRevision: number,
    visit: (index: KeyIndex, at: KeyPosition) => boolean,
  ): void {
    const at = new KeyPosition();
    this.#walk(range, (index) => !index.visible(atRevision, at) || visit(index, at));
  }

  /** Number of keys of `range` that exist at `atRevision`. */
  count(range: KeyRange, atRevision: number): number {
    let total = 0;
    const at = new KeyPosition();
    this.#walk(range, (index) => {
      if (index.visible(atRevision, at)) total++;
      return true;
    });
    return total;
  }

  /**
   * Applies a compaction at `atRevision` to every key (see KeyIndex.compact) and forgets keys with
   * nothing left. Each revision dropped from history is passed to `onDrop`.
   */
  compact(atRevision: number, onDrop: (revision: Revision) => void): void {
    const emptied: Uint8Array[] = [];
    for (const [id, index] of this.#tree.entries()) {
      index.compact(atRevision, onDrop);
      if (index.isEmpty) emptied.push(id);
    }
    for (const id of emptied) this.#tree.delete(id);
  }

  /**
   * Calls `onIndex` with the key indexes of `range`, in key order, until it returns false. The
   * tree's own range walk: no iterator, pair or generator step allocated per key, which the
   * prefix reads of lock and election recipes (every waiter's key, on every turn) pay per key.
   */
  #walk(range: KeyRange, onIndex: (index: KeyIndex) => boolean): void {
    const low = range.key;
    if (range.end === undefined) {
      const index = this.#tree.get(low);
      if (index !== undefined) onIndex(index);
      return;
    }
    // An empty end reads to the last key, that key included.
    const toLast = range.end.length === 0;
    const high = toLast ? this.#tree.maxKey() : range.end;
    if (high === undefined) return;
    const order = compareBytes(high, low);
    if (order < 0 || (order === 0 && !toLast)) return;
    this.#tree.forRange(low, high, toLast, (_, index) => (onIndex(index) ? undefined : STOP));
  }
}

/** What a forRange callback returns to end the walk (sorted-btree's `{ break }`). */
const STOP = { break: true } as const;
