// User and role names as etcd orders them: its buckets are sorted by the names' UTF-8 bytes, and
// a user's roles are kept sorted the same way (Go compares strings byte by byte).

/** Byte order of the UTF-8 encodings of `a` and `b`. */
export function compareNames(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** A copy of the sorted `names` with `name` inserted in order. */
export function sortedInsert(names: readonly string[], name: string): string[] {
  return [...names, name].sort(compareNames);
}
