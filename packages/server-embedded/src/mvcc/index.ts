// The ordered key space: one KeyIndex per key that still has history, in a B+ tree ordered by the
// key's bytes (through its latin1 string form, see bytes.ts).
import { keyString } from '../bytes.js';
import { type BTree, newStringTree } from './btree.js';
import { KeyIndex, type KeyState } from './key-index.js';
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

/** A key and its state at the revision it was read at. */
export interface IndexedKey extends KeyState {
  readonly key: Uint8Array;
}

/** Every key with history, ordered by its bytes. */
export class KeyIndexTree {
  private readonly tree: BTree<string, KeyIndex> = newStringTree();

  /** Number of keys that still have history (live or deleted but not yet compacted away). */
  get size(): number {
    return this.tree.size;
  }

  /** The state of `key` at `atRevision`, or undefined when it did not exist then. */
  get(key: Uint8Array, atRevision: number): KeyState | undefined {
    return this.tree.get(keyString(key))?.get(atRevision);
  }

  /** Records a put of `key` at `revision`. */
  put(key: Uint8Array, revision: Revision): void {
    const id = keyString(key);
    let index = this.tree.get(id);
    if (index === undefined) {
      index = new KeyIndex(key);
      this.tree.set(id, index);
    }
    index.put(revision);
  }

  /**
   * Restores a key from its oldest kept change (see KeyIndex.restore); later changes of the key
   * are then recorded with put and tombstone.
   */
  restore(
    key: Uint8Array,
    change: { created: Revision; modified: Revision; version: number; tombstone: boolean },
  ): void {
    const id = keyString(key);
    if (this.tree.has(id)) throw new Error('key index: restoring a key that already has history');
    const index = new KeyIndex(key);
    index.restore(change.created, change.modified, change.version, change.tombstone);
    this.tree.set(id, index);
  }

  /** True when `key` has history (live, or deleted and not compacted away yet). */
  has(key: Uint8Array): boolean {
    return this.tree.has(keyString(key));
  }

  /** Records a delete of `key` at `revision`; false when the key is not live. */
  tombstone(key: Uint8Array, revision: Revision): boolean {
    return this.tree.get(keyString(key))?.tombstone(revision) ?? false;
  }

  /**
   * Calls `visit` for each key of `range` that exists at `atRevision`, in key order, until it
   * returns false.
   */
  forEach(range: KeyRange, atRevision: number, visit: (key: IndexedKey) => boolean): void {
    for (const index of this.indexes(range)) {
      const state = index.get(atRevision);
      if (state !== undefined && !visit({ key: index.key, ...state })) return;
    }
  }

  /** Number of keys of `range` that exist at `atRevision`. */
  count(range: KeyRange, atRevision: number): number {
    let total = 0;
    for (const index of this.indexes(range)) {
      if (index.get(atRevision) !== undefined) total++;
    }
    return total;
  }

  /**
   * Applies a compaction at `atRevision` to every key (see KeyIndex.compact) and forgets keys with
   * nothing left. Each revision dropped from history is passed to `onDrop`.
   */
  compact(atRevision: number, onDrop: (revision: Revision) => void): void {
    const emptied: string[] = [];
    for (const [id, index] of this.tree.entries()) {
      index.compact(atRevision, onDrop);
      if (index.isEmpty) emptied.push(id);
    }
    for (const id of emptied) this.tree.delete(id);
  }

  /** The key indexes of `range`, in key order. */
  private *indexes(range: KeyRange): Generator<KeyIndex> {
    const low = keyString(range.key);
    if (range.end === undefined) {
      const index = this.tree.get(low);
      if (index !== undefined) yield index;
      return;
    }
    const high = range.end.length === 0 ? undefined : keyString(range.end);
    if (high !== undefined && high <= low) return;
    for (const [id, index] of this.tree.entries(low)) {
      if (high !== undefined && id >= high) return;
      yield index;
    }
  }
}
