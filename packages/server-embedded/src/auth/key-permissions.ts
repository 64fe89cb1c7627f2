// What keys one user may read and write: the key permissions of all its roles, merged into two
// sets of key intervals (etcd's unifiedRangePermissions). A single-key request is allowed when one
// interval holds the key; a range request when the intervals it overlaps cover it without a gap,
// so permissions granted piecewise, even by different roles, add up.
import { compareBytes, isNullByte } from '../bytes.js';
import { type KeyPermission, PermissionType } from './types.js';

/** Keys [begin, end); `end` undefined: to the end of the key space. */
interface KeyInterval {
  readonly begin: Uint8Array;
  readonly end: Uint8Array | undefined;
}

/** Read or write access. */
export type Access = 'read' | 'write';

/** The read and write intervals of one user. */
export class KeyPermissions {
  readonly #read: KeyInterval[];
  readonly #write: KeyInterval[];

  /** Merges `permissions` (of every role of the user). */
  constructor(permissions: Iterable<KeyPermission>) {
    const read: KeyInterval[] = [];
    const write: KeyInterval[] = [];
    for (const permission of permissions) {
      const interval = permissionInterval(permission);
      // A type etcd does not know (the wire allows any number) grants nothing, as in etcd.
      const { type } = permission;
      if (type === PermissionType.READ || type === PermissionType.READWRITE) read.push(interval);
      if (type === PermissionType.WRITE || type === PermissionType.READWRITE) write.push(interval);
    }
    // Sorted by begin: coverage is checked left to right, as etcd's interval tree visits them.
    this.#read = read.sort((a, b) => compareBytes(a.begin, b.begin));
    this.#write = write.sort((a, b) => compareBytes(a.begin, b.begin));
  }

  /**
   * Whether `access` to the keys of a request is allowed: `rangeEnd` empty for the one key `key`,
   * `"\0"` for every key from `key` on, anything else [key, rangeEnd).
   */
  allows(access: Access, key: Uint8Array, rangeEnd: Uint8Array): boolean {
    const intervals = access === 'read' ? this.#read : this.#write;
    if (rangeEnd.length === 0) return intervals.some((i) => overlaps(pointInterval(key), i));
    const wanted: KeyInterval = { begin: key, end: isNullByte(rangeEnd) ? undefined : rangeEnd };
    return covers(intervals, wanted);
  }
}

/**
 * Whether a permission may be granted on `key` and `rangeEnd`: a key is needed, and a range end
 * must be empty (one key), "\0" (every key from `key` on) or above the key.
 */
export function isValidPermissionRange(key: Uint8Array, rangeEnd: Uint8Array): boolean {
  if (key.length === 0) return false;
  if (rangeEnd.length === 0 || isNullByte(rangeEnd)) return true;
  return compareBytes(key, rangeEnd) < 0;
}

/** The keys a permission names (etcd's rules: empty end one key, "\0" open-ended). */
function permissionInterval(permission: KeyPermission): KeyInterval {
  const { key, rangeEnd } = permission;
  if (rangeEnd.length === 0) return pointInterval(key);
  return { begin: key, end: isNullByte(rangeEnd) ? undefined : rangeEnd };
}

/** [key, key + "\0"): exactly the one key. */
function pointInterval(key: Uint8Array): KeyInterval {
  const end = new Uint8Array(key.length + 1);
  end.set(key);
  return { begin: key, end };
}

/** Interval ends ordered with "no end" above every key. */
function compareEnds(a: Uint8Array | undefined, b: Uint8Array | undefined): number {
  if (a === undefined) return b === undefined ? 0 : 1;
  if (b === undefined) return -1;
  return compareBytes(a, b);
}

/**
 * etcd's overlap test of a request interval with a permission interval. It is written, like
 * etcd's, to also answer for a request whose end is below its begin (a range that selects nothing,
 * which etcd's Range allows), so such requests are allowed or denied as etcd decides.
 */
function overlaps(wanted: KeyInterval, held: KeyInterval): boolean {
  const leftOf =
    compareBytes(wanted.begin, held.begin) < 0 && compareEnds(wanted.end, held.begin) <= 0;
  const rightOf = compareEnds(wanted.begin, held.end) >= 0;
  return !leftOf && !rightOf;
}

/** Whether the intervals overlapping `wanted` cover it from begin to end without a gap. */
function covers(sorted: readonly KeyInterval[], wanted: KeyInterval): boolean {
  let first: KeyInterval | undefined;
  let reach: Uint8Array | undefined;
  for (const interval of sorted) {
    if (!overlaps(wanted, interval)) continue;
    if (first === undefined) {
      first = interval;
      reach = interval.end;
      continue;
    }
    if (compareEnds(reach, interval.begin) < 0) return false;
    if (compareEnds(interval.end, reach) > 0) reach = interval.end;
  }
  return (
    first !== undefined &&
    compareBytes(first.begin, wanted.begin) <= 0 &&
    compareEnds(reach, wanted.end) >= 0
  );
}
