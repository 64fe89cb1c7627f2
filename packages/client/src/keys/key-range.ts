// Which keys a read, delete or compare applies to. etcd expresses every selection as a half-open
// interval [key, range_end) with two special ends: an empty end means the single key, and `\0`
// means "every key >= key". The public shapes below name the common selections instead.
import { type Bytes, prefixEnd, toBytes } from '../bytes.js';
import { InvalidArgumentError } from '../errors.js';
import { bytesArg } from '../validate.js';

/**
 * A selection of keys. Exactly one of these forms:
 * - `{ key }`: that one key; `{ key, end }`: every key in [key, end) (byte order; an end at or
 *   before the key selects nothing);
 * - `{ prefix }`: every key starting with prefix (an empty prefix selects every key);
 * - `{ fromKey }`: every key >= fromKey;
 * - `{ all: true }`: every key.
 *
 * Inside a namespace, every form is relative to the namespace and never selects a key outside it.
 */
export type KeyRange =
  | {
      readonly key: Bytes;
      readonly end?: Bytes;
      readonly prefix?: never;
      readonly fromKey?: never;
      readonly all?: never;
    }
  | {
      readonly prefix: Bytes;
      readonly key?: never;
      readonly end?: never;
      readonly fromKey?: never;
      readonly all?: never;
    }
  | {
      readonly fromKey: Bytes;
      readonly key?: never;
      readonly end?: never;
      readonly prefix?: never;
      readonly all?: never;
    }
  | {
      readonly all: true;
      readonly key?: never;
      readonly end?: never;
      readonly prefix?: never;
      readonly fromKey?: never;
    };

/** A single key, or a {@link KeyRange}. */
export type KeySelector = Bytes | KeyRange;

/**
 * A selection in etcd's own terms, before any namespace prefix is applied. `end` is empty for a
 * single key and {@link TO_END} for "every key >= key".
 */
export interface Interval {
  readonly key: Uint8Array;
  readonly end: Uint8Array;
}

/** The range end etcd reads as "no upper bound". */
export const TO_END: Uint8Array = new Uint8Array([0]);

const noEnd = new Uint8Array(0);

/** True when `end` is the "no upper bound" marker `\0`. */
export function isToEnd(end: Uint8Array): boolean {
  return end.length === 1 && end[0] === 0;
}

/** Validates a selection given by a caller and turns it into an interval. */
export function toInterval(selector: unknown, name = 'key'): Interval {
  if (typeof selector === 'string' || selector instanceof Uint8Array) {
    return { key: bytesArg(selector, name), end: noEnd };
  }
  if (typeof selector !== 'object' || selector === null) {
    throw new InvalidArgumentError(
      `${name} must be a string, a Uint8Array or a key range ({ key, end? } | { prefix } | { fromKey } | { all: true })`,
    );
  }
  // Read once, counted without an array, and the fields' names made only for an error: this runs
  // for every call that takes a range.
  const key: unknown = Reflect.get(selector, 'key');
  const prefix: unknown = Reflect.get(selector, 'prefix');
  const fromKey: unknown = Reflect.get(selector, 'fromKey');
  const all: unknown = Reflect.get(selector, 'all');
  const count =
    Number(key !== undefined) +
    Number(prefix !== undefined) +
    Number(fromKey !== undefined) +
    Number(all !== undefined);
  if (count !== 1) {
    const given = (['key', 'prefix', 'fromKey', 'all'] as const).filter(
      (field) => Reflect.get(selector, field) !== undefined,
    );
    throw new InvalidArgumentError(
      given.length === 0
        ? `${name} must give one of key, prefix, fromKey or all`
        : `${name} must give only one of key, prefix, fromKey or all, got ${given.join(' and ')}`,
    );
  }
  const end: unknown = Reflect.get(selector, 'end');
  if (key !== undefined) {
    return {
      key: fieldBytes(key, name, 'key'),
      end: end === undefined ? noEnd : fieldBytes(end, name, 'end'),
    };
  }
  const given = prefix !== undefined ? 'prefix' : fromKey !== undefined ? 'fromKey' : 'all';
  if (end !== undefined) {
    throw new InvalidArgumentError(`${name}: end can only be given with key, not with ${given}`);
  }
  if (prefix !== undefined) {
    const bytes = fieldBytes(prefix, name, 'prefix');
    // prefixEnd of an empty prefix is `\0`: with an empty key that is "every key".
    return { key: bytes, end: prefixEnd(bytes) };
  }
  if (fromKey !== undefined) return { key: fieldBytes(fromKey, name, 'fromKey'), end: TO_END };
  if (all !== true) throw new InvalidArgumentError(`${name}.all must be true when given`);
  return { key: noEnd, end: TO_END };
}

/** The bytes of the selector's `field`; its name (`<name>.<field>`) is made only for an error. */
function fieldBytes(value: unknown, name: string, field: string): Uint8Array {
  if (typeof value === 'string' || value instanceof Uint8Array) return toBytes(value);
  return bytesArg(value, `${name}.${field}`);
}
