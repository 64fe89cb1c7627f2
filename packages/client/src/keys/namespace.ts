// Namespaces: a view in which keys are relative to a prefix and every selection is clamped to it,
// so nothing done through one touches a key outside. Revisions and leases stay store-wide.
import { concatBytes, hasPrefix, prefixEnd } from '../bytes.js';
import { EmptyKeyError } from '../errors.js';
import { type Interval, isToEnd, TO_END } from './key-range.js';

/** An interval as sent to the server: `key` and `rangeEnd` of a Range, DeleteRange or Compare. */
export interface WireInterval {
  readonly key: Uint8Array;
  readonly rangeEnd: Uint8Array;
}

/** Maps keys and intervals between a namespace and the store. The root maps nothing. */
export class KeyPrefix {
  /** The whole store. */
  static readonly root: KeyPrefix = new KeyPrefix(new Uint8Array(0));

  private constructor(
    /** Bytes every key of the namespace starts with; empty at the root. */
    readonly prefix: Uint8Array,
  ) {}

  /** The namespace `prefix` inside this one. */
  child(prefix: Uint8Array): KeyPrefix {
    return prefix.length === 0 ? this : new KeyPrefix(concatBytes(this.prefix, prefix));
  }

  /** The stored key of a single key in this namespace. */
  key(key: Uint8Array): Uint8Array {
    if (this.prefix.length === 0) return key;
    // The empty key would silently become the namespace prefix itself; etcd rejects empty keys, so
    // reject it here too, with the same error the root gives.
    if (key.length === 0) throw new EmptyKeyError();
    return concatBytes(this.prefix, key);
  }

  /** The interval as the server must see it. */
  interval({ key, end }: Interval): WireInterval {
    const toEnd = isToEnd(end);
    if (this.prefix.length === 0) {
      // "Every key >= the empty key" is every key; etcd wants `\0` as the key for that.
      return { key: key.length === 0 && toEnd ? TO_END : key, rangeEnd: end };
    }
    if (key.length === 0 && !toEnd) throw new EmptyKeyError();
    return {
      // The prefix itself is outside the namespace (keys are prefix + non-empty k), so a range
      // from "the start" begins just after it: a directory marker at the prefix stays outside.
      key: concatBytes(this.prefix, key.length === 0 ? TO_END : key),
      // "No upper bound" inside a namespace is the end of the namespace, never the store's end.
      rangeEnd: toEnd
        ? prefixEnd(this.prefix)
        : end.length === 0
          ? end
          : concatBytes(this.prefix, end),
    };
  }

  /** The key as seen inside this namespace. */
  strip(stored: Uint8Array): Uint8Array {
    if (this.prefix.length === 0 || !hasPrefix(stored, this.prefix)) return stored;
    return stored.subarray(this.prefix.length);
  }
}
