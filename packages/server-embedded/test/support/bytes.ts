// Small helpers to write keys and values as text in tests.
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** UTF-8 bytes of `text`. */
export function b(text: string): Uint8Array {
  return encoder.encode(text);
}

/** `bytes` as text. */
export function text(bytes: Uint8Array | null | undefined): string {
  return decoder.decode(bytes ?? new Uint8Array(0));
}
