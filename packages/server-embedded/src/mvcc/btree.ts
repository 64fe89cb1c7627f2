// sorted-btree is a CommonJS package whose class is its `default` export. Node's ESM loader hands an
// ESM importer the whole `module.exports` (class under `.default`), while a bundled CommonJS build
// may already unwrap it; accept both.
import sortedBtree from 'sorted-btree';
import { compareBytes } from '../bytes.js';

type BTreeClass = typeof sortedBtree.default;
const exported = sortedBtree as unknown as { default?: BTreeClass };
const BTreeConstructor: BTreeClass = exported.default ?? (sortedBtree as unknown as BTreeClass);

/** A sorted-btree B+ tree. */
export type BTree<K, V> = InstanceType<typeof sortedBtree.default<K, V>>;

/**
 * A new, empty tree of byte-string keys in byte order. Keyed by the bytes themselves, so that a
 * key costs no string beside its bytes and a lookup converts nothing.
 */
export function newBytesTree<V>(): BTree<Uint8Array, V> {
  return new BTreeConstructor<Uint8Array, V>(undefined, compareBytes);
}
