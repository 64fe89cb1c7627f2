// The revision-ordered history: every change still kept, addressed by (main, sub) revision. A
// change is a record in columns of typed arrays (its sub, value place and length, create revision,
// version, lease) beside an array of its key, whose bytes the key index holds anyway: a record
// costs about 50 bytes and no object, where a KeyValue and its value's view cost about 200
// (issue 28.1). KeyValue objects are made only when a change is read. Records are appended in
// revision order; main revisions are dense, so `firsts` gives each main revision (from the oldest
// kept one) its first record, and its records run to the next one's first. A tombstone is a record
// of version 0 (a put's is at least 1). Compaction marks records dropped (key undefined) and
// rewrites the columns once half of them are dropped.
import { EMPTY_BYTES } from '../bytes.js';
import type { Revision } from './revision.js';
import type { KeyValue } from './types.js';
import { ValueChunks } from './value-chunks.js';

/** One change in history. */
export interface HistoryEntry {
  readonly revision: Revision;
  /** The key's value after the change; for a tombstone only key and modRevision are set. */
  readonly kv: KeyValue;
  /** True for a delete. */
  readonly tombstone: boolean;
}

const INITIAL_CAPACITY = 64;

/** The columns of the records. */
class Records {
  keys: (Uint8Array | undefined)[] = [];
  subs: Uint32Array;
  places: Float64Array;
  lengths: Uint32Array;
  creates: Float64Array;
  /** 0 for a tombstone. */
  versions: Float64Array;
  leases: BigInt64Array;

  constructor(capacity: number) {
    this.subs = new Uint32Array(capacity);
    this.places = new Float64Array(capacity);
    this.lengths = new Uint32Array(capacity);
    this.creates = new Float64Array(capacity);
    this.versions = new Float64Array(capacity);
    this.leases = new BigInt64Array(capacity);
  }

  get capacity(): number {
    return this.subs.length;
  }

  /** Copies record `from` of `source` to record `to` of this. */
  copy(source: Records, from: number, to: number): void {
    this.keys[to] = source.keys[from];
    this.subs[to] = source.subs[from]!;
    this.places[to] = source.places[from]!;
    this.lengths[to] = source.lengths[from]!;
    this.creates[to] = source.creates[from]!;
    this.versions[to] = source.versions[from]!;
    this.leases[to] = source.leases[from]!;
  }
}

/** The changes of every revision still in history. */
export class RevisionHistory {
  readonly #values = new ValueChunks();
  #records = new Records(INITIAL_CAPACITY);
  /** Records in the columns, dropped ones included. */
  #count = 0;
  #dropped = 0;
  /** The first record of each main revision from `base` on. */
  #firsts = new Uint32Array(INITIAL_CAPACITY);
  /** Main revisions in `firsts`. */
  #mains = 0;
  /** Main revision of `firsts[0]`. */
  #base = 0;
  #size = 0;

  /** Approximate bytes the kept changes would take in etcd's backend. */
  get bytes(): number {
    return this.#size;
  }

  /**
   * Appends a put of a copy of `value` at `key`; changes arrive in ascending (main, sub) order.
   * Returns the copy kept, which the change's KeyValue may hold.
   */
  put(
    revision: Revision,
    key: Uint8Array,
    value: Uint8Array,
    createRevision: number,
    version: number,
    lease: bigint,
  ): Uint8Array {
    const record = this.#append(revision, key);
    const records = this.#records;
    const length = value.length;
    const place = length === 0 ? 0 : this.#values.add(value);
    records.places[record] = place;
    records.lengths[record] = length;
    records.creates[record] = createRevision;
    records.versions[record] = version;
    records.leases[record] = lease;
    this.#size += sizeOf(key.length, length);
    return length === 0 ? EMPTY_BYTES : this.#values.view(place, length);
  }

  /** Appends a delete of `key`; changes arrive in ascending (main, sub) order. */
  tombstone(revision: Revision, key: Uint8Array): void {
    const record = this.#append(revision, key);
    const records = this.#records;
    records.lengths[record] = 0;
    records.creates[record] = 0;
    records.versions[record] = 0;
    records.leases[record] = 0n;
    this.#size += sizeOf(key.length, 0);
  }

  /** The kv of the change at `revision`, if it is still kept. */
  get(revision: Revision): KeyValue | undefined {
    const record = this.#find(revision.main, revision.sub);
    return record === -1 ? undefined : this.#kvOf(record, revision.main);
  }

  /** The lease of the change at `revision` (0n for none, or when it is not kept). */
  leaseAt(revision: Revision): bigint {
    const record = this.#find(revision.main, revision.sub);
    return record === -1 ? 0n : this.#records.leases[record]!;
  }

  /** The kept changes of revision `main`, in op order. */
  changesAt(main: number): HistoryEntry[] {
    const entries: HistoryEntry[] = [];
    const at = main - this.#base;
    if (at < 0 || at >= this.#mains) return entries;
    for (let record = this.#firsts[at]!; record < this.#end(at); record++) {
      if (this.#records.keys[record] !== undefined) entries.push(this.#entryOf(record, main));
    }
    return entries;
  }

  /** Forgets the given changes (a compaction dropping history). */
  remove(revisions: readonly Revision[]): void {
    const records = this.#records;
    for (const { main, sub } of revisions) {
      const record = this.#find(main, sub);
      if (record === -1) continue;
      const length = records.lengths[record]!;
      this.#size -= sizeOf(records.keys[record]!.length, length);
      if (length > 0) this.#values.release(records.places[record]!);
      records.keys[record] = undefined;
      this.#dropped++;
    }
    if (this.#dropped * 2 >= this.#count && this.#dropped > 0) this.#rewrite();
  }

  /** Every kept change with main revision <= `main`, in revision order. */
  *upTo(main: number): Generator<HistoryEntry> {
    const last = Math.min(main - this.#base, this.#mains - 1);
    for (let at = 0; at <= last; at++) yield* this.changesAt(this.#base + at);
  }

  /** Adds a record of `key` at `revision`, growing the columns as needed; returns its index. */
  #append(revision: Revision, key: Uint8Array): number {
    const { main, sub } = revision;
    if (this.#mains === 0) this.#base = main;
    const at = main - this.#base;
    if (at < this.#mains - 1 || at < 0) {
      throw new Error(`history: change at ${main}.${sub} is below the latest revision`);
    }
    // Revisions with nothing kept (a restored, compacted history) get no records.
    while (this.#mains <= at) {
      if (this.#mains === this.#firsts.length) this.#firsts = grown(this.#firsts, this.#mains * 2);
      this.#firsts[this.#mains++] = this.#count;
    }
    if (this.#count === this.#records.capacity) this.#resize(this.#count * 2);
    const record = this.#count++;
    this.#records.keys[record] = key;
    this.#records.subs[record] = sub;
    return record;
  }

  /** The record of (main, sub) if it is kept, or -1. */
  #find(main: number, sub: number): number {
    const at = main - this.#base;
    if (at < 0 || at >= this.#mains) return -1;
    const subs = this.#records.subs;
    let low = this.#firsts[at]!;
    let high = this.#end(at) - 1;
    // Subs ascend within a revision; until a compaction drops some, sub i is the i-th record.
    if (low + sub <= high && subs[low + sub] === sub) low = high = low + sub;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const found = subs[middle]!;
      if (found === sub) return this.#records.keys[middle] === undefined ? -1 : middle;
      if (found < sub) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }

  /** One past the last record of the main revision at `at`. */
  #end(at: number): number {
    return at + 1 < this.#mains ? this.#firsts[at + 1]! : this.#count;
  }

  #kvOf(record: number, main: number): KeyValue {
    const records = this.#records;
    const key = records.keys[record]!;
    const version = records.versions[record]!;
    if (version === 0) {
      return { key, value: EMPTY_BYTES, createRevision: 0, modRevision: main, version, lease: 0n };
    }
    const length = records.lengths[record]!;
    return {
      key,
      value: length === 0 ? EMPTY_BYTES : this.#values.view(records.places[record]!, length),
      createRevision: records.creates[record]!,
      modRevision: main,
      version,
      lease: records.leases[record]!,
    };
  }

  #entryOf(record: number, main: number): HistoryEntry {
    const kv = this.#kvOf(record, main);
    return {
      revision: { main, sub: this.#records.subs[record]! },
      kv,
      tombstone: kv.version === 0,
    };
  }

  #resize(capacity: number): void {
    const next = new Records(capacity);
    next.keys = this.#records.keys;
    next.subs.set(this.#records.subs.subarray(0, this.#count));
    next.places.set(this.#records.places.subarray(0, this.#count));
    next.lengths.set(this.#records.lengths.subarray(0, this.#count));
    next.creates.set(this.#records.creates.subarray(0, this.#count));
    next.versions.set(this.#records.versions.subarray(0, this.#count));
    next.leases.set(this.#records.leases.subarray(0, this.#count));
    this.#records = next;
  }

  /** Rewrites the columns without the dropped records, from the oldest main revision kept on. */
  #rewrite(): void {
    const kept = this.#count - this.#dropped;
    const source = this.#records;
    const records = new Records(Math.max(INITIAL_CAPACITY, Math.ceil(kept * 1.25)));
    const firsts = new Uint32Array(Math.max(INITIAL_CAPACITY, this.#mains));
    let mains = 0;
    let base = this.#base;
    let count = 0;
    for (let at = 0; at < this.#mains; at++) {
      const end = this.#end(at);
      if (count === 0) {
        let any = false;
        for (let record = this.#firsts[at]!; record < end && !any; record++) {
          any = source.keys[record] !== undefined;
        }
        if (!any) continue;
        base = this.#base + at;
      }
      firsts[mains++] = count;
      for (let record = this.#firsts[at]!; record < end; record++) {
        if (source.keys[record] !== undefined) records.copy(source, record, count++);
      }
    }
    this.#records = records;
    this.#firsts = firsts;
    this.#count = count;
    this.#dropped = 0;
    // Nothing kept: the next change starts the history again.
    this.#mains = count === 0 ? 0 : mains;
    this.#base = base;
  }
}

function grown(column: Uint32Array, capacity: number) {
  const next = new Uint32Array(Math.max(capacity, INITIAL_CAPACITY));
  next.set(column);
  return next;
}

/** Backend key (17 bytes) plus a KeyValue encoding: key, value and about 20 bytes of varints. */
function sizeOf(keyLength: number, valueLength: number): number {
  return 17 + keyLength + valueLength + 20;
}
