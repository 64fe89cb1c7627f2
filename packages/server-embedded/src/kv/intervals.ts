// The duplicate-key rules of a txn (etcd's checkIntervals). Within one list of ops, no key may be
// put twice and no key may be put inside a deleted range, counting the puts and deletes of nested
// txns. A nested txn's success and failure lists exclude each other, so the same key may be put in
// both. Overlapping deletes are fine. Two quirks of etcd are kept on purpose, because clients can
// observe them: a delete whose range_end is "\0" (every key from `key` on) conflicts with no put,
// and a nested txn's deletes only conflict with puts of the txns after it, not before it.

import { bytesOf, operationOf, type RequestOp } from '../api/requests.js';
import { keyString } from '../bytes.js';
import { EtcdServerError } from '../errors.js';

/** A deleted range [begin, end) of latin1 key strings. */
interface Interval {
  readonly begin: string;
  readonly end: string;
}

/** A union of deleted ranges, answering "is this key deleted" by binary search. */
class DeletedRanges {
  readonly #intervals: Interval[] = [];
  #merged: Interval[] | undefined;

  add(interval: Interval): void {
    // An empty or inverted range (end <= begin, which includes an end of "\0") holds no key.
    if (interval.end <= interval.begin) return;
    this.#intervals.push(interval);
    this.#merged = undefined;
  }

  addAll(other: DeletedRanges): void {
    for (const interval of other.#intervals) this.add(interval);
  }

  contains(key: string): boolean {
    if (this.#intervals.length === 0) return false;
    this.#merged ??= merge(this.#intervals);
    let low = 0;
    let high = this.#merged.length - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      const interval = this.#merged[mid]!;
      if (key < interval.begin) high = mid - 1;
      else if (key >= interval.end) low = mid + 1;
      else return true;
    }
    return false;
  }
}

function merge(intervals: readonly Interval[]): Interval[] {
  const sorted = [...intervals].sort((a, b) =>
    a.begin < b.begin ? -1 : a.begin > b.begin ? 1 : 0,
  );
  const merged: Interval[] = [];
  for (const interval of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && interval.begin <= last.end) {
      if (interval.end > last.end)
        merged[merged.length - 1] = { begin: last.begin, end: interval.end };
    } else {
      merged.push(interval);
    }
  }
  return merged;
}

/** Throws "duplicate key given in txn request" when `ops` break the duplicate-key rules. */
export function checkIntervals(ops: readonly RequestOp[]): void {
  // One put at most and no delete or nested txn (a lock's or an STM commit's lists): nothing can
  // be put twice or inside a deleted range, so no key string, set or range list is made for it.
  // An op is what operationOf takes it for: the first of range, put, delete and txn it carries.
  let puts = 0;
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i];
    if (op == null || op.requestRange) continue;
    if (op.requestPut) {
      if (++puts > 1) break;
      continue;
    }
    if (op.requestDeleteRange || op.requestTxn) {
      puts = 2;
      break;
    }
  }
  if (puts > 1) collect(ops);
}

function collect(ops: readonly RequestOp[]): { puts: Set<string>; deletes: DeletedRanges } {
  const deletes = new DeletedRanges();
  for (const op of ops) {
    const operation = operationOf(op);
    if (operation?.kind !== 'delete') continue;
    const begin = keyString(bytesOf(operation.request.key));
    const end = bytesOf(operation.request.rangeEnd);
    deletes.add({ begin, end: end.length === 0 ? `${begin}\0` : keyString(end) });
  }
  const puts = new Set<string>();
  for (const op of ops) {
    const operation = operationOf(op);
    if (operation?.kind !== 'txn') continue;
    const success = collect(operation.request.success ?? []);
    const failure = collect(operation.request.failure ?? []);
    for (const key of success.puts) {
      if (puts.has(key) || deletes.contains(key)) throw new EtcdServerError('DUPLICATE_KEY');
      puts.add(key);
    }
    for (const key of failure.puts) {
      // Put in both branches of the same nested txn: only one branch runs.
      if (puts.has(key) && !success.puts.has(key)) throw new EtcdServerError('DUPLICATE_KEY');
      if (deletes.contains(key)) throw new EtcdServerError('DUPLICATE_KEY');
      puts.add(key);
    }
    deletes.addAll(success.deletes);
    deletes.addAll(failure.deletes);
  }
  for (const op of ops) {
    const operation = operationOf(op);
    if (operation?.kind !== 'put') continue;
    const key = keyString(bytesOf(operation.request.key));
    if (puts.has(key) || deletes.contains(key)) throw new EtcdServerError('DUPLICATE_KEY');
    puts.add(key);
  }
  return { puts, deletes };
}
