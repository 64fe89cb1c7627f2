// Key intervals that a point (an event's key) can be stabbed with: the range watchers of a watcher
// group. A treap ordered by (start, end), each node also holding the largest end of its subtree, so
// a stab visits only subtrees that can contain the point: O(log n + matches) instead of a scan of
// every range watcher for every event, which matters with thousands of prefix watchers.
//
// Keys are latin1 key strings (see bytes.ts), whose code-unit order is the keys' byte order. An
// interval is half-open, [start, end); an undefined end reaches past every key.

interface TreeNode<V> {
  readonly start: string;
  readonly end: string | undefined;
  readonly value: V;
  readonly priority: number;
  left: TreeNode<V> | undefined;
  right: TreeNode<V> | undefined;
  /** Largest end in this subtree; undefined when some interval in it is unbounded. */
  maxEnd: string | undefined;
}

/** Orders ends, an undefined (unbounded) end being the largest. */
function compareEnds(a: string | undefined, b: string | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return 1;
  if (b === undefined) return -1;
  return a < b ? -1 : 1;
}

function compareIntervals<V>(node: TreeNode<V>, start: string, end: string | undefined): number {
  if (node.start !== start) return node.start < start ? -1 : 1;
  return compareEnds(node.end, end);
}

function update<V>(node: TreeNode<V>): TreeNode<V> {
  let maxEnd = node.end;
  if (node.left !== undefined && compareEnds(node.left.maxEnd, maxEnd) > 0) {
    maxEnd = node.left.maxEnd;
  }
  if (node.right !== undefined && compareEnds(node.right.maxEnd, maxEnd) > 0) {
    maxEnd = node.right.maxEnd;
  }
  node.maxEnd = maxEnd;
  return node;
}

/** Joins two treaps, every interval of `left` ordering before every interval of `right`. */
function merge<V>(
  left: TreeNode<V> | undefined,
  right: TreeNode<V> | undefined,
): TreeNode<V> | undefined {
  if (left === undefined) return right;
  if (right === undefined) return left;
  if (left.priority > right.priority) {
    left.right = merge(left.right, right);
    return update(left);
  }
  right.left = merge(left, right.left);
  return update(right);
}

/** Splits a treap into the intervals for which `goesLeft` holds (a prefix of the order) and the rest. */
function split<V>(
  node: TreeNode<V> | undefined,
  goesLeft: (node: TreeNode<V>) => boolean,
): [TreeNode<V> | undefined, TreeNode<V> | undefined] {
  if (node === undefined) return [undefined, undefined];
  if (goesLeft(node)) {
    const [middle, right] = split(node.right, goesLeft);
    node.right = middle;
    return [update(node), right];
  }
  const [left, middle] = split(node.left, goesLeft);
  node.left = middle;
  return [left, update(node)];
}

/** A map from key intervals to values, answering "which intervals contain this key". */
export class IntervalTree<V> {
  #root: TreeNode<V> | undefined;
  #count = 0;

  /** Number of intervals. */
  get size(): number {
    return this.#count;
  }

  /** The value stored for exactly [start, end). */
  get(start: string, end: string | undefined): V | undefined {
    let node = this.#root;
    while (node !== undefined) {
      const order = compareIntervals(node, start, end);
      if (order === 0) return node.value;
      node = order < 0 ? node.right : node.left;
    }
    return undefined;
  }

  /** Stores `value` for [start, end), which must not be in the tree yet. */
  insert(start: string, end: string | undefined, value: V): void {
    const node: TreeNode<V> = {
      start,
      end,
      value,
      priority: Math.random(),
      left: undefined,
      right: undefined,
      maxEnd: end,
    };
    const [left, right] = split(this.#root, (n) => compareIntervals(n, start, end) < 0);
    this.#root = merge(merge(left, node), right);
    this.#count++;
  }

  /** Removes [start, end); false when it was not there. */
  delete(start: string, end: string | undefined): boolean {
    const [left, rest] = split(this.#root, (n) => compareIntervals(n, start, end) < 0);
    const [found, right] = split(rest, (n) => compareIntervals(n, start, end) === 0);
    this.#root = merge(left, right);
    if (found === undefined) return false;
    this.#count--;
    return true;
  }

  /** Calls `visit` with the value of every interval that contains `point`. */
  stab(point: string, visit: (value: V) => void): void {
    // A method, not a closure made per stab: every replayed or live event stabs.
    this.#stab(this.#root, point, visit);
  }

  #stab(node: TreeNode<V> | undefined, point: string, visit: (value: V) => void): void {
    // Nothing in a subtree whose ends all lie at or below the point can contain it.
    if (node === undefined || (node.maxEnd !== undefined && node.maxEnd <= point)) return;
    this.#stab(node.left, point, visit);
    // Intervals to the right start at or after this one: past the point, none can contain it.
    if (node.start > point) return;
    if (node.end === undefined || point < node.end) visit(node.value);
    this.#stab(node.right, point, visit);
  }
}
