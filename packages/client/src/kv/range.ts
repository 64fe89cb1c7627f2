// Reads: the options of a Range request, their validation, and the shape of the result.
import type { etcdserverpb } from '../generated/protocol.js';
import { type ResponseHeader, toResponseHeader } from '../header.js';
import { jsonReady } from '../json.js';
import { type KeyValue, toKeyValue } from '../key-value.js';
import { type Interval, type KeyRange, toInterval } from '../keys/key-range.js';
import type { KeyPrefix } from '../keys/namespace.js';
import { choiceArg, countArg, flagArg, objectArg, revisionArg } from '../validate.js';

/** What a range is sorted by: the key, or one of its revisions, its version or its value. */
export type SortTarget = 'key' | 'version' | 'create' | 'mod' | 'value';

/** Sort direction. `'none'` is ascending: by key for target `'key'`, else by the target. */
export type SortOrder = 'none' | 'ascend' | 'descend';

/** How to sort a range. Equal sort values keep key order. */
export interface RangeSort {
  /** Default `'key'`. */
  readonly target?: SortTarget;
  /** Default `'none'` (ascending). */
  readonly order?: SortOrder;
}

/** Options of a read of one key. */
export interface GetOptions {
  /**
   * Read the store as it was at this revision; absent or 0n reads the current revision. Below the
   * last compaction revision the read fails with CompactedError (reading exactly at it works);
   * above the current revision with FutureRevisionError.
   */
  readonly revision?: bigint;
  /**
   * Answer from the member's local state without a quorum round trip: faster, but may be stale
   * (it can miss writes acknowledged by other members). Default false (linearizable).
   */
  readonly serializable?: boolean;
  /** Return keys and their revisions but no values (values come back empty). Default false. */
  readonly keysOnly?: boolean;
}

/** Options of a read of a range of keys. */
export interface RangeOptions extends GetOptions {
  /**
   * Return at most this many keys; 0 or absent means no limit. `more` then tells whether more keys
   * matched, and `count` still counts all of them.
   */
  readonly limit?: number | bigint;
  /**
   * Sort before the limit applies. Default: ascending by key (the store's own order). Sorting by
   * anything else makes the server read every matching key before applying the limit.
   */
  readonly sort?: RangeSort;
  /** Return only `count`: no kvs, and `more` is false even with a limit. Default false. */
  readonly countOnly?: boolean;
  /** Keep only keys last modified at or after this revision. `count` is not affected. */
  readonly minModRevision?: bigint;
  /** Keep only keys last modified at or before this revision. `count` is not affected. */
  readonly maxModRevision?: bigint;
  /** Keep only keys created at or after this revision. `count` is not affected. */
  readonly minCreateRevision?: bigint;
  /** Keep only keys created at or before this revision. `count` is not affected. */
  readonly maxCreateRevision?: bigint;
}

/** A read of a range of keys: which keys ({@link KeyRange}) and how ({@link RangeOptions}). */
export type RangeRequest = KeyRange & RangeOptions;

/** The keys a range read returned. */
export interface RangeResponseBody {
  /** The matching keys, in the requested order, at most `limit` of them. */
  readonly kvs: KeyValue[];
  /** True when `limit` cut the result short. Always false for `countOnly`. */
  readonly more: boolean;
  /** How many keys are in the range at the read revision, ignoring `limit` and the filters. */
  readonly count: bigint;
}

/** The result of {@link KV.range}. */
export interface RangeResult extends RangeResponseBody {
  /** `header.revision` is the current store revision, even for a read at an older revision. */
  readonly header: ResponseHeader;
}

/** A validated range read, independent of any namespace. */
export interface RangeSpec {
  readonly interval: Interval;
  readonly fields: Omit<etcdserverpb.RangeRequest.$Properties, 'key' | 'rangeEnd'>;
}

const sortTargets = ['key', 'version', 'create', 'mod', 'value'] as const;
const sortOrders = ['none', 'ascend', 'descend'] as const;
// Enum values of etcdserverpb.RangeRequest.SortTarget / SortOrder.
const sortTargetCode = { key: 0, version: 1, create: 2, mod: 3, value: 4 } as const;
const sortOrderCode = { none: 0, ascend: 1, descend: 2 } as const;

/** Validates the options of a read of one key. */
export function getSpec(key: unknown, options: GetOptions | undefined): RangeSpec {
  const o = objectArg(options, 'options');
  return {
    interval: toInterval(key),
    fields: {
      revision: revisionArg(o.revision, 'revision'),
      serializable: flagArg(o.serializable, 'serializable'),
      keysOnly: flagArg(o.keysOnly, 'keysOnly'),
    },
  };
}

/** Validates a range read. */
export function rangeSpec(request: RangeRequest): RangeSpec {
  const o: Partial<RangeOptions> = objectArg<RangeOptions>(request, 'request');
  const sort = objectArg(o.sort, 'sort');
  const target = choiceArg(sort.target, sortTargets, 'key', 'sort.target');
  let order = choiceArg(sort.order, sortOrders, 'none', 'sort.order');
  // NONE with another target is sent as ASCEND (some versions limited before such a sort); ASCEND
  // by key, the store's order, as NONE (else the server reads every key first).
  if (target !== 'key' && order === 'none') order = 'ascend';
  if (target === 'key' && order === 'ascend') order = 'none';
  return {
    interval: toInterval(request, 'request'),
    fields: {
      limit: countArg(o.limit, 'limit'),
      revision: revisionArg(o.revision, 'revision'),
      sortTarget: sortTargetCode[target],
      sortOrder: sortOrderCode[order],
      serializable: flagArg(o.serializable, 'serializable'),
      keysOnly: flagArg(o.keysOnly, 'keysOnly'),
      countOnly: flagArg(o.countOnly, 'countOnly'),
      minModRevision: revisionArg(o.minModRevision, 'minModRevision'),
      maxModRevision: revisionArg(o.maxModRevision, 'maxModRevision'),
      minCreateRevision: revisionArg(o.minCreateRevision, 'minCreateRevision'),
      maxCreateRevision: revisionArg(o.maxCreateRevision, 'maxCreateRevision'),
    },
  };
}

/** The Range request for `spec` inside namespace `ns`. */
export function encodeRange(spec: RangeSpec, ns: KeyPrefix): etcdserverpb.RangeRequest.$Properties {
  const { key, rangeEnd } = ns.interval(spec.interval);
  const f = spec.fields;
  // Spelled out: two spreads cost more than the rest of the encoding (absent fields stay undefined).
  return {
    key,
    rangeEnd,
    limit: f.limit,
    revision: f.revision,
    sortOrder: f.sortOrder,
    sortTarget: f.sortTarget,
    serializable: f.serializable,
    keysOnly: f.keysOnly,
    countOnly: f.countOnly,
    minModRevision: f.minModRevision,
    maxModRevision: f.maxModRevision,
    minCreateRevision: f.minCreateRevision,
    maxCreateRevision: f.maxCreateRevision,
  };
}

/** The body of a Range response, keys relative to `ns`. */
export function decodeRangeBody(
  response: etcdserverpb.RangeResponse.$Properties,
  ns: KeyPrefix,
): RangeResponseBody {
  return {
    kvs: (response.kvs ?? []).map((kv) => toKeyValue(kv, (key) => ns.strip(key))),
    more: response.more ?? false,
    count: response.count ?? 0n,
  };
}

/** A Range response, keys relative to `ns`. */
export function decodeRange(
  response: etcdserverpb.RangeResponse.$Properties,
  ns: KeyPrefix,
): RangeResult {
  const body = decodeRangeBody(response, ns);
  return jsonReady({
    header: toResponseHeader(response.header),
    kvs: body.kvs,
    more: body.more,
    count: body.count,
  });
}
