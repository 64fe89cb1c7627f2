// sorted-btree is a CommonJS package whose class is its `default` export. Node's ESM loader hands an
// ESM importer the whole `module.exports` (class under `.default`), while a bundled CommonJS build
// may already unwrap it; accept both.
import sortedBtree from 'sorted-btree';

type BTreeClass = typeof sortedBtree.default;
const exported = sortedBtree as unknown as { default?: BTreeClass };
const BTreeConstructor: BTreeClass = exported.default ?? (sortedBtree as unknown as BTreeClass);

/** A sorted-btree B+ tree. */
export type BTree<K, V> = InstanceType<typeof sortedBtree.default<K, V>>;

/** A new, empty tree of string keys in code-unit order (byte order for latin1 key strings). */
export function newStringTree<V>(): BTree<string, V> {
  return new BTreeConstructor<string, V>(undefined, (a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
