// Decoders hand out Node Buffers. The public type is Uint8Array, and a Buffer is not equal to a
// Uint8Array under deep equality, so results present the same memory as a plain Uint8Array.

/** The same bytes as a plain Uint8Array, without copying; absent bytes become empty. */
export function plainBytes(bytes: Uint8Array | null | undefined): Uint8Array {
  if (!bytes) return new Uint8Array(0);
  if (Object.getPrototypeOf(bytes) === Uint8Array.prototype) return bytes;
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
