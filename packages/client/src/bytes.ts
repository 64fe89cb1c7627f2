// Keys and values cross the API as `string | Uint8Array`; on the wire they are always bytes.

/** A key or value: a string (encoded as UTF-8) or raw bytes. */
export type Bytes = string | Uint8Array;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const zero = new Uint8Array([0]);

/**
 * Strings up to this length that are all ASCII are copied by {@link toBytes} itself: a typed array
 * this small lives on V8's heap, where TextEncoder's result is a native call and a backing store.
 */
const SHORT_ASCII = 64;

/** Encodes a key or value to bytes. Uint8Arrays are passed through without copying. */
export function toBytes(value: Bytes): Uint8Array {
  if (typeof value !== 'string') return value;
  const length = value.length;
  if (length > SHORT_ASCII) return encoder.encode(value);
  // Keys and values of a call are mostly short ASCII: 4-5x cheaper per string than encode().
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) {
    const code = value.charCodeAt(i);
    if (code > 0x7f) return encoder.encode(value);
    bytes[i] = code;
  }
  return bytes;
}

/**
 * The same bytes as a plain Uint8Array, without copying; absent bytes become empty. Decoders hand
 * out Node Buffers, and a Buffer is not equal to a Uint8Array under deep equality, so results
 * present their memory under the public type.
 */
export function plainBytes(bytes: Uint8Array | null | undefined): Uint8Array {
  if (!bytes) return new Uint8Array(0);
  if (Object.getPrototypeOf(bytes) === Uint8Array.prototype) return bytes;
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Decodes UTF-8 bytes to a string. */
export function toText(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}

/**
 * The range end that selects every key starting with `prefix`: the prefix with its last byte below
 * 0xff incremented and the rest dropped. A prefix of only 0xff bytes (or an empty one) gives `\0`,
 * which etcd reads as "every key >= key".
 */
export function prefixEnd(prefix: Uint8Array): Uint8Array {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const byte = prefix[i]!;
    if (byte < 0xff) {
      const end = prefix.slice(0, i + 1);
      end[i] = byte + 1;
      return end;
    }
  }
  return zero;
}

/** Byte-wise lexicographic comparison, the order etcd keeps keys in. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/** Concatenates byte arrays. */
export function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** True when `bytes` starts with `prefix`. */
export function hasPrefix(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (bytes.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix[i]) return false;
  return true;
}
