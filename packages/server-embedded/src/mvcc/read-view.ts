// What a read of the store asks and gets: StoreWrite serves the same reads as the store, so both
// implement ReadView without either importing the other.
import type { KeyRange } from './index.js';
import type { KeyValue } from './types.js';

/** Options of a read. */
export interface RangeOptions {
  /** Revision to read at; 0 or negative reads the current one. */
  readonly revision?: number;
  /** Most keys to return; 0 or negative for no limit. */
  readonly limit?: number;
  /** Count matching keys without returning them. */
  readonly countOnly?: boolean;
  /** Count every matching key even past the limit (default true); false stops at the limit. */
  readonly withTotalCount?: boolean;
  /**
   * A hint: of the keys passing its revision filters, only the first `keep` in its order are
   * wanted. The caller filters, sorts and cuts the result anyway, so a view may ignore it; the
   * store uses it to make key-values for those keys alone (a contended lock's reads of the oldest
   * or the next older waiter among many).
   */
  readonly select?: RangeSelection;
}

/** What {@link RangeOptions.select} keeps: revision filters are 0 when unset. */
export interface RangeSelection {
  readonly by: 'create' | 'mod' | 'version';
  readonly descend: boolean;
  readonly keep: number;
  readonly minModRevision: number;
  readonly maxModRevision: number;
  readonly minCreateRevision: number;
  readonly maxCreateRevision: number;
}

/** What a read found. */
export interface RangeResult {
  /** Matching keys in key order (none with countOnly). */
  readonly kvs: KeyValue[];
  /** Number of keys in the range at the revision read, ignoring the limit. */
  readonly count: number;
  /** The revision of the store (or of the write in progress) when it was read. */
  readonly revision: number;
}

/** A consistent view of the store to read from. */
export interface ReadView {
  /** The revision reads see by default. */
  readonly revision: number;
  /** The last compaction revision; -1 before the first compaction. */
  readonly compactRevision: number;
  range(range: KeyRange, options?: RangeOptions): RangeResult;
}
