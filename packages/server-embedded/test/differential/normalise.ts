// Responses as plain, comparable values. Every field a server sends is kept, except what two
// correct servers may answer differently:
// - headers keep only the revision (cluster and member ids, raft term differ per server);
// - lease ids the server picked become `picked#n` (n-th pick of the sequence);
// - fields at their protobuf default are left out (the wire cannot tell them from absent);
// - TimeToLive keys are sorted (etcd lists them in Go map order, which varies);
// - HashKV's hash is not compared once a server picked a lease id (the kvs it hashes hold them).

/** A plain, JSON-like value. */
export type Plain = null | boolean | number | string | Plain[] | { [field: string]: Plain };

/** How to write the lease ids of one server. */
export interface NormaliseOptions {
  /** Lease ids the server picked, in grant order. */
  readonly picked: readonly bigint[];
}

/** What HashKV's hash becomes when the servers picked lease ids, which the hashed kvs hold. */
export const HASH_WITH_PICKED_LEASES =
  'not compared: the hashed kvs may hold server-picked lease ids';

const decoder = new TextDecoder();

/** Fields holding a lease id, in KeyValue and the Lease responses. */
const LEASE_ID_FIELDS = new Set(['lease', 'ID']);

/** A decoded message (or any value in it) as a plain value. */
export function normalise(value: unknown, options: NormaliseOptions, field = ''): Plain {
  if (typeof value === 'bigint') {
    if (LEASE_ID_FIELDS.has(field)) return leaseLabel(value, options.picked);
    return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  }
  if (value instanceof Uint8Array) return decoder.decode(value);
  if (Array.isArray(value)) {
    const items = value.map((item) => normalise(item, options));
    return field === 'keys' ? items.sort() : items;
  }
  if (typeof value === 'object' && value !== null) {
    const out: { [field: string]: Plain } = {};
    for (const [name, item] of Object.entries(value)) {
      if (name === '$unknowns' || isDefault(item)) continue;
      if (name === 'hash' && options.picked.length > 0) {
        out[name] = HASH_WITH_PICKED_LEASES;
        continue;
      }
      out[name] = name === 'header' ? headerRevision(item) : normalise(item, options, name);
    }
    return out;
  }
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    return value;
  }
  return null;
}

function leaseLabel(id: bigint, picked: readonly bigint[]): string {
  const index = picked.indexOf(id);
  return index === -1 ? id.toString() : `picked#${index}`;
}

function headerRevision(header: unknown): Plain {
  const revision = (header as { revision?: unknown }).revision;
  return { revision: typeof revision === 'bigint' ? Number(revision) : 0 };
}

function isDefault(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === '') return true;
  if (value === 0 || value === 0n) return true;
  if (Array.isArray(value) || value instanceof Uint8Array) return value.length === 0;
  return false;
}

/**
 * TimeToLive's remaining seconds are read at two instants, a few milliseconds apart, one on each
 * server: across a second boundary they differ by one. That much is taken as equal.
 */
export function reconcileRemainingTtl(embedded: Plain, etcd: Plain): void {
  if (!isRecord(embedded) || !isRecord(etcd)) return;
  const a = embedded.TTL;
  const b = etcd.TTL;
  if (typeof a !== 'number' || typeof b !== 'number' || Math.abs(a - b) !== 1) return;
  if (embedded.grantedTTL === undefined || embedded.grantedTTL !== etcd.grantedTTL) return;
  const lower = Math.min(a, b);
  embedded.TTL = lower;
  etcd.TTL = lower;
}

function isRecord(value: Plain): value is { [field: string]: Plain } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The path of the first difference between two plain values, or undefined when equal. */
export function firstDifference(a: Plain, b: Plain, path = '$'): string | undefined {
  if (Object.is(a, b)) return undefined;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const found = firstDifference(a[i] ?? null, b[i] ?? null, `${path}[${i}]`);
      if (found) return found;
    }
    return a.length === b.length ? undefined : `${path}.length`;
  }
  if (isRecord(a) && isRecord(b)) {
    const names = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    for (const name of names) {
      if (!(name in a) || !(name in b)) return `${path}.${name}`;
      const found = firstDifference(a[name]!, b[name]!, `${path}.${name}`);
      if (found) return found;
    }
    return undefined;
  }
  return path;
}
