// A set of watchers indexed by what they watch, so that an event finds its watchers without a scan:
// single-key watchers by key, range watchers in an interval tree (watchers of the same range share
// one node).
import { IntervalTree } from './interval-tree.js';
import type { Watcher } from './watcher.js';

export class WatcherGroup {
  readonly #all = new Set<Watcher>();
  readonly #byKey = new Map<string, Set<Watcher>>();
  readonly #ranges = new IntervalTree<Set<Watcher>>();
  /** The visitor of the forEachWatching under way, for #visitSet (made once, not per call). */
  #visit: ((watcher: Watcher) => void) | undefined;
  readonly #visitSet = (set: Set<Watcher>): void => {
    const visit = this.#visit!;
    for (const watcher of set) visit(watcher);
  };

  /** Number of watchers in the group. */
  get size(): number {
    return this.#all.size;
  }

  has(watcher: Watcher): boolean {
    return this.#all.has(watcher);
  }

  /** Every watcher of the group, in the order they were added. */
  watchers(): IterableIterator<Watcher> {
    return this.#all.values();
  }

  add(watcher: Watcher): void {
    if (this.#all.has(watcher)) return;
    this.#all.add(watcher);
    const { key, single, end } = watcher.keys;
    if (single) {
      const set = this.#byKey.get(key);
      if (set === undefined) this.#byKey.set(key, new Set([watcher]));
      else set.add(watcher);
      return;
    }
    const set = this.#ranges.get(key, end);
    if (set === undefined) this.#ranges.insert(key, end, new Set([watcher]));
    else set.add(watcher);
  }

  /** Removes `watcher`; false when it was not in the group. */
  delete(watcher: Watcher): boolean {
    if (!this.#all.delete(watcher)) return false;
    const { key, single, end } = watcher.keys;
    if (single) {
      const set = this.#byKey.get(key);
      set?.delete(watcher);
      if (set?.size === 0) this.#byKey.delete(key);
      return true;
    }
    const set = this.#ranges.get(key, end);
    set?.delete(watcher);
    if (set?.size === 0) this.#ranges.delete(key, end);
    return true;
  }

  /** Calls `visit` for every watcher of the group that watches `key` (a latin1 key string). */
  forEachWatching(key: string, visit: (watcher: Watcher) => void): void {
    const single = this.#byKey.get(key);
    if (single !== undefined) for (const watcher of single) visit(watcher);
    if (this.#ranges.size === 0) return;
    // Saved and restored: a visitor may itself look up watchers.
    const outer = this.#visit;
    this.#visit = visit;
    try {
      this.#ranges.stab(key, this.#visitSet);
    } finally {
      this.#visit = outer;
    }
  }
}
