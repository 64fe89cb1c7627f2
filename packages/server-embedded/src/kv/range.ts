// Range (etcd's txn/range.go): reads a key range at a revision, then applies the revision filters,
// the sort and the limit. With the default order (by key, ascending) and no filter, the store can
// stop after limit+1 keys (the extra one tells whether there are more); otherwise every match is
// read, filtered, sorted, and only then cut to the limit. `count` is always the number of keys in
// the range at that revision, before filters and limit.

import {
  bytesOf,
  numberOf,
  type RangeRequest,
  type RangeResponse,
  revisionHeader,
  toWireKeyValue,
} from '../api/requests.js';
import { compareBytes, isNullByte } from '../bytes.js';
import type { KeyRange } from '../mvcc/index.js';
import type { RangeSelection } from '../mvcc/read-view.js';
import type { RangeResult, ReadView } from '../mvcc/store.js';
import type { KeyValue } from '../mvcc/types.js';

/** RangeRequest.SortOrder */
const SortOrder = { NONE: 0, ASCEND: 1, DESCEND: 2 } as const;
/** RangeRequest.SortTarget */
const SortTarget = { KEY: 0, VERSION: 1, CREATE: 2, MOD: 3, VALUE: 4 } as const;

/**
 * The store range of a request's key and range_end: no range_end = the key alone; an empty one
 * sent on the wire or "\0" = every key from `key` on; anything else = [key, end). etcd reads only a
 * nil end as one key (v3.5.30 server/mvcc/index.go line 110), and gogo decodes a zero-length
 * range_end as an empty non-nil slice; the generated decoders keep it as an own property.
 */
export function keyRangeOf(request: {
  readonly key?: Uint8Array | null;
  readonly rangeEnd?: Uint8Array | null;
}): KeyRange {
  const key = bytesOf(request.key);
  const rangeEnd = request.rangeEnd;
  if (rangeEnd == null || !Object.hasOwn(request, 'rangeEnd')) return { key };
  return { key, end: rangeEnd.length === 0 || isNullByte(rangeEnd) ? new Uint8Array(0) : rangeEnd };
}

/** True for the order the store reads in anyway: by key ascending, or no order at all. */
export function isDefaultOrdering(r: RangeRequest): boolean {
  const order = r.sortOrder ?? SortOrder.NONE;
  const target = r.sortTarget ?? SortTarget.KEY;
  return order === SortOrder.NONE || (target === SortTarget.KEY && order === SortOrder.ASCEND);
}

/** True when any min/max mod/create revision filter is set. */
export function hasRevisionFilters(r: RangeRequest): boolean {
  return (
    numberOf(r.minModRevision) !== 0 ||
    numberOf(r.maxModRevision) !== 0 ||
    numberOf(r.minCreateRevision) !== 0 ||
    numberOf(r.maxCreateRevision) !== 0
  );
}

/**
 * Runs a range request against `view`. The response header carries only the view's revision;
 * `withTotalCount` false lets the store stop counting at the limit (RangeStream counts apart).
 */
export function executeRange(
  view: ReadView,
  r: RangeRequest,
  withTotalCount = true,
): RangeResponse {
  const limit = numberOf(r.limit);
  const result = view.range(keyRangeOf(r), {
    revision: numberOf(r.revision),
    limit: storeLimit(r, limit),
    countOnly: r.countOnly ?? false,
    withTotalCount,
    select: selectionOf(r, limit),
  });
  const kvs = sortKeyValues(filterKeyValues(result, r), r);
  const more = limit > 0 && kvs.length > limit;
  const kept = more ? kvs.slice(0, limit) : kvs;
  const keysOnly = r.keysOnly ?? false;
  return {
    header: revisionHeader(result.revision),
    kvs: kept.map((kv) => toWireKeyValue(kv, keysOnly)),
    more,
    count: BigInt(result.count),
  };
}

/**
 * The store's selection hint for a limited range sorted by a revision or the version: the store
 * then makes key-values only for the limit (and one more, to tell `more`) instead of every key.
 */
function selectionOf(r: RangeRequest, limit: number): RangeSelection | undefined {
  if (limit <= 0 || limit >= Number.MAX_SAFE_INTEGER || r.countOnly) return undefined;
  // A target without an order: etcd reads the first limit + 1 keys in key order and sorts those
  // alone (its read limit looks at the order as sent), so there is no whole range to select from.
  if ((r.sortOrder ?? SortOrder.NONE) === SortOrder.NONE) return undefined;
  const target = r.sortTarget ?? SortTarget.KEY;
  const by =
    target === SortTarget.CREATE
      ? 'create'
      : target === SortTarget.MOD
        ? 'mod'
        : target === SortTarget.VERSION
          ? 'version'
          : undefined;
  if (by === undefined) return undefined;
  return {
    by,
    // A sort target without an order means ascending by that target (see sortKeyValues).
    descend: (r.sortOrder ?? SortOrder.NONE) === SortOrder.DESCEND,
    keep: limit + 1,
    minModRevision: numberOf(r.minModRevision),
    maxModRevision: numberOf(r.maxModRevision),
    minCreateRevision: numberOf(r.minCreateRevision),
    maxCreateRevision: numberOf(r.maxCreateRevision),
  };
}

function storeLimit(r: RangeRequest, limit: number): number {
  if (!isDefaultOrdering(r) || hasRevisionFilters(r)) return 0;
  // One more than asked, to learn whether more keys match.
  return limit > 0 && limit < Number.MAX_SAFE_INTEGER ? limit + 1 : limit;
}

function filterKeyValues(result: RangeResult, r: RangeRequest): KeyValue[] {
  const maxMod = numberOf(r.maxModRevision);
  const minMod = numberOf(r.minModRevision);
  const maxCreate = numberOf(r.maxCreateRevision);
  const minCreate = numberOf(r.minCreateRevision);
  if (maxMod === 0 && minMod === 0 && maxCreate === 0 && minCreate === 0) return result.kvs;
  return result.kvs.filter(
    (kv) =>
      (maxMod === 0 || kv.modRevision <= maxMod) &&
      (minMod === 0 || kv.modRevision >= minMod) &&
      (maxCreate === 0 || kv.createRevision <= maxCreate) &&
      (minCreate === 0 || kv.createRevision >= minCreate),
  );
}

const comparators: Record<number, (a: KeyValue, b: KeyValue) => number> = {
  [SortTarget.KEY]: (a, b) => compareBytes(a.key, b.key),
  [SortTarget.VERSION]: (a, b) => a.version - b.version,
  [SortTarget.CREATE]: (a, b) => a.createRevision - b.createRevision,
  [SortTarget.MOD]: (a, b) => a.modRevision - b.modRevision,
  [SortTarget.VALUE]: (a, b) => compareBytes(a.value, b.value),
};

/** Sorts `kvs` (in key order) as `r` asks. @internal exported for tests */
export function sortKeyValues(kvs: KeyValue[], r: RangeRequest): KeyValue[] {
  const target = r.sortTarget ?? SortTarget.KEY;
  let order = r.sortOrder ?? SortOrder.NONE;
  // A sort target without an order means ascending by that target.
  if (target !== SortTarget.KEY && order === SortOrder.NONE) order = SortOrder.ASCEND;
  if (order === SortOrder.NONE || (target === SortTarget.KEY && order === SortOrder.ASCEND)) {
    return kvs;
  }
  const compare = comparators[target];
  if (compare === undefined) return kvs;
  const descend = order === SortOrder.DESCEND;
  // A store selection (a lock's limited reads) leaves a key or two: sorted in place, without the
  // copy Array.prototype.sort makes.
  if (kvs.length <= SHORT) return insertionSort(kvs, compare, descend);
  // Array.prototype.sort is stable: equal sort values keep key order, in both directions.
  return descend ? kvs.sort((a, b) => compare(b, a)) : kvs.sort(compare);
}

/** Longest list sortKeyValues sorts by insertion. */
const SHORT = 8;

/** A stable sort of `kvs` in place: equal sort values keep key order, in both directions. */
function insertionSort(
  kvs: KeyValue[],
  compare: (a: KeyValue, b: KeyValue) => number,
  descend: boolean,
): KeyValue[] {
  for (let i = 1; i < kvs.length; i++) {
    const kv = kvs[i]!;
    let j = i;
    while (j > 0 && (descend ? compare(kvs[j - 1]!, kv) < 0 : compare(kvs[j - 1]!, kv) > 0)) {
      kvs[j] = kvs[j - 1]!;
      j--;
    }
    kvs[j] = kv;
  }
  return kvs;
}
