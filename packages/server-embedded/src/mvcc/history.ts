// The revision-ordered history: every change still kept, addressed by (main, sub) revision. A
// change is a record in columns of typed arrays (its sub, value place and length, lease) beside an
// array of its key's KeyIndex, which holds the key's bytes anyway: a record costs about 32 bytes
// and no object, where a KeyValue and its value's view cost about 200 (issue 28.1). Its create
// revision and version are the KeyIndex's, asked when the change is read, and KeyValue objects
// are made only then. Records are appended in revision order; main revisions are dense, so
// `firsts` gives each main revision (from the oldest kept one) its first record, and its records
// run to the next one's first. A tombstone is a record without a value place (-1). Compaction
// marks records dropped (key undefined) and rewrites the pages once half of them are dropped.
import { EMPTY_BYTES } from '../bytes.js';
import { KeyPosition } from './key-index.js';
import { emptyKeyValueFields, type KeyValueFields } from './kv-encoding.js';
import type { Revision } from './revision.js';
import type { KeyValue, MvccEvent } from './types.js';
import { ValueChunks } from './value-chunks.js';

/** One change in history. */
export interface HistoryEntry {
  readonly revision: Revision;
  /** The key's value after the change; for a tombstone only key and modRevision are set. */
  readonly kv: KeyValue;
  /** True for a delete. */
  readonly tombstone: boolean;
}

/** A key as the history keeps it: its KeyIndex, which has its bytes and its states. */
export interface HistoryKey {
  readonly key: Uint8Array;
  /**
   * Fills `into` with the key's state right after its change at (main, sub), which it has for
   * every kept put; false when it has none.
   */
  locate(main: number, sub: number, into: KeyPosition): boolean;
}

/**
 * Receives kept changes field by field, with no object made per change (HashKV and a watch's
 * catch-up encode them straight from here).
 */
export interface ChangeVisitor {
  /**
   * The change of `key` at (kv.modRevision, sub). `kv` is one object reused for every call: a
   * put's fields, or for a tombstone the key and modRevision with the rest zero.
   */
  change(key: HistoryKey, sub: number, tombstone: boolean, kv: KeyValueFields): void;
}

/** Records per page: 4096 of about 32 bytes of columns, 180 KiB, allocated whole but the first. */
const PAGE_BITS = 12;
const PAGE_RECORDS = 1 << PAGE_BITS;
const IN_PAGE = PAGE_RECORDS - 1;
/** The first page starts this small and doubles until it is whole, for the many small stores. */
const FIRST_PAGE_RECORDS = 64;

/**
 * The columns of a page of records. Pages rather than one growing set of columns: growing would
 * copy every column and, until the copy is done, hold twice its memory, and leave up to half of the
 * new one unused.
 */
class RecordPage {
  readonly keys: (HistoryKey | undefined)[] = [];
  readonly subs: Uint32Array;
  /** -1 for a tombstone. */
  readonly places: Float64Array;
  readonly lengths: Uint32Array;
  readonly leases: BigInt64Array;

  constructor(capacity: number, from?: RecordPage) {
    this.subs = new Uint32Array(capacity);
    this.places = new Float64Array(capacity);
    this.lengths = new Uint32Array(capacity);
    this.leases = new BigInt64Array(capacity);
    if (from === undefined) return;
    this.keys = from.keys;
    this.subs.set(from.subs);
    this.places.set(from.places);
    this.lengths.set(from.lengths);
    this.leases.set(from.leases);
  }

  get capacity(): number {
    return this.subs.length;
  }

  /** Copies record `from` of `source` to record `to` of this page. */
  copy(source: RecordPage, from: number, to: number): void {
    this.keys[to] = source.keys[from];
    this.subs[to] = source.subs[from]!;
    this.places[to] = source.places[from]!;
    this.lengths[to] = source.lengths[from]!;
    this.leases[to] = source.leases[from]!;
  }
}

/** The changes of every revision still in history. */
export class RevisionHistory {
  readonly #values = new ValueChunks();
  #pages: RecordPage[] = [new RecordPage(FIRST_PAGE_RECORDS)];
  /** Records in the pages, dropped ones included. */
  #count = 0;
  #dropped = 0;
  /** The first record of each main revision from `base` on. */
  #firsts = new Uint32Array(FIRST_PAGE_RECORDS);
  /** Main revisions in `firsts`. */
  #mains = 0;
  /** Main revision of `firsts[0]`. */
  #base = 0;
  #size = 0;
  /** Where #kvOf has the key index put a change's state: one, reused, not one per read. */
  readonly #position = new KeyPosition();
  /** What #visit hands a visitor: one, reused, not one per change. */
  readonly #fields: KeyValueFields = emptyKeyValueFields();

  /** Approximate bytes the kept changes would take in etcd's backend. */
  get bytes(): number {
    return this.#size;
  }

  /**
   * Appends a put of a copy of `value` at `key`; changes arrive in ascending (main, sub) order.
   * Returns the copy kept, which the change's KeyValue may hold.
   */
  put(revision: Revision, key: HistoryKey, value: Uint8Array, lease: bigint): Uint8Array {
    const record = this.#append(revision, key);
    const page = this.#pages[record >>> PAGE_BITS]!;
    const at = record & IN_PAGE;
    const length = value.length;
    const place = length === 0 ? 0 : this.#values.add(value);
    page.places[at] = place;
    page.lengths[at] = length;
    page.leases[at] = lease;
    this.#size += sizeOf(key.key.length, length);
    return length === 0 ? EMPTY_BYTES : this.#values.view(place, length);
  }

  /** Appends a delete of `key`; changes arrive in ascending (main, sub) order. */
  tombstone(revision: Revision, key: HistoryKey): void {
    const record = this.#append(revision, key);
    const page = this.#pages[record >>> PAGE_BITS]!;
    const at = record & IN_PAGE;
    page.places[at] = -1;
    page.lengths[at] = 0;
    page.leases[at] = 0n;
    this.#size += sizeOf(key.key.length, 0);
  }

  /** The kv of the change at `revision`, if it is still kept. */
  get(revision: Revision): KeyValue | undefined {
    const record = this.#find(revision.main, revision.sub);
    return record === -1 ? undefined : this.#kvOf(record, revision.main);
  }

  /**
   * The kv of the put at `at`'s modified revision, with `at`'s create revision and version (the
   * key index's, read with it), if it is still kept: a range's read, asking the index nothing.
   */
  kvAt(at: KeyPosition): KeyValue | undefined {
    const record = this.#find(at.modifiedMain, at.modifiedSub);
    if (record === -1) return undefined;
    return this.#putKv(record, at.modifiedMain, at.createdMain, at.version);
  }

  /** The lease of the change at `revision` (0n for none, or when it is not kept). */
  leaseAt(revision: Revision): bigint {
    const record = this.#find(revision.main, revision.sub);
    return record === -1 ? 0n : this.#pages[record >>> PAGE_BITS]!.leases[record & IN_PAGE]!;
  }

  /** The kept changes of revision `main`, in op order. */
  changesAt(main: number): HistoryEntry[] {
    const entries: HistoryEntry[] = [];
    const at = main - this.#base;
    if (at < 0 || at >= this.#mains) return entries;
    for (let record = this.#firsts[at]!; record < this.#end(at); record++) {
      if (this.#keyOf(record) !== undefined) entries.push(this.#entryOf(record, main));
    }
    return entries;
  }

  /**
   * The kept changes of revision `main` as watch events, in op order: made straight from the
   * records, one kv and one event per change (a watcher's catch-up reads these).
   */
  eventsAt(main: number): MvccEvent[] {
    const events: MvccEvent[] = [];
    const at = main - this.#base;
    if (at < 0 || at >= this.#mains) return events;
    const end = this.#end(at);
    for (let record = this.#firsts[at]!; record < end; record++) {
      const page = this.#pages[record >>> PAGE_BITS]!;
      if (page.keys[record & IN_PAGE] === undefined) continue;
      const tombstone = page.places[record & IN_PAGE] === -1;
      events.push({ type: tombstone ? 'delete' : 'put', kv: this.#kvOf(record, main) });
    }
    return events;
  }

  /** Hands `visitor` the kept changes of revision `main`, in op order. */
  visitChangesAt(main: number, visitor: ChangeVisitor): void {
    const at = main - this.#base;
    if (at < 0 || at >= this.#mains) return;
    const end = this.#end(at);
    for (let record = this.#firsts[at]!; record < end; record++) this.#visit(record, main, visitor);
  }

  /** Hands `visitor` every kept change with main revision <= `main`, in revision order. */
  visitUpTo(main: number, visitor: ChangeVisitor): void {
    const last = Math.min(main - this.#base, this.#mains - 1);
    for (let at = 0; at <= last; at++) {
      const end = this.#end(at);
      const revision = this.#base + at;
      for (let record = this.#firsts[at]!; record < end; record++) {
        this.#visit(record, revision, visitor);
      }
    }
  }

  /** Forgets the given changes (a compaction dropping history). */
  remove(revisions: readonly Revision[]): void {
    for (const { main, sub } of revisions) {
      const record = this.#find(main, sub);
      if (record === -1) continue;
      const page = this.#pages[record >>> PAGE_BITS]!;
      const at = record & IN_PAGE;
      const length = page.lengths[at]!;
      this.#size -= sizeOf(page.keys[at]!.key.length, length);
      if (length > 0) this.#values.release(page.places[at]!);
      page.keys[at] = undefined;
      this.#dropped++;
    }
    if (this.#dropped * 2 >= this.#count && this.#dropped > 0) this.#rewrite();
  }

  /** Every kept change with main revision <= `main`, in revision order. */
  *upTo(main: number): Generator<HistoryEntry> {
    const last = Math.min(main - this.#base, this.#mains - 1);
    for (let at = 0; at <= last; at++) {
      const end = this.#end(at);
      for (let record = this.#firsts[at]!; record < end; record++) {
        if (this.#keyOf(record) !== undefined) yield this.#entryOf(record, this.#base + at);
      }
    }
  }

  /** Adds a record of `key` at `revision`, with room made as needed; returns its index. */
  #append(revision: Revision, key: HistoryKey): number {
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
    const record = this.#count++;
    const page = pageFor(this.#pages, record);
    page.keys[record & IN_PAGE] = key;
    page.subs[record & IN_PAGE] = sub;
    return record;
  }

  /** The record of (main, sub) if it is kept, or -1. */
  #find(main: number, sub: number): number {
    const at = main - this.#base;
    if (at < 0 || at >= this.#mains) return -1;
    let low = this.#firsts[at]!;
    let high = this.#end(at) - 1;
    // Subs ascend within a revision; until a compaction drops some, sub i is the i-th record.
    if (low + sub <= high && this.#subOf(low + sub) === sub) low = high = low + sub;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const found = this.#subOf(middle);
      if (found === sub) return this.#keyOf(middle) === undefined ? -1 : middle;
      if (found < sub) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }

  /** One past the last record of the main revision at `at`. */
  #end(at: number): number {
    return at + 1 < this.#mains ? this.#firsts[at + 1]! : this.#count;
  }

  #subOf(record: number): number {
    return this.#pages[record >>> PAGE_BITS]!.subs[record & IN_PAGE]!;
  }

  #keyOf(record: number): HistoryKey | undefined {
    return this.#pages[record >>> PAGE_BITS]!.keys[record & IN_PAGE];
  }

  /** The kv of `record`, a change at `main`: a put's create revision and version from its key. */
  #kvOf(record: number, main: number): KeyValue {
    const page = this.#pages[record >>> PAGE_BITS]!;
    const at = record & IN_PAGE;
    const owner = page.keys[at]!;
    if (page.places[at] === -1) {
      return {
        key: owner.key,
        value: EMPTY_BYTES,
        createRevision: 0,
        modRevision: main,
        version: 0,
        lease: 0n,
      };
    }
    const state = this.#position;
    if (!owner.locate(main, page.subs[at]!, state)) {
      throw new Error('history: a kept put the key index does not know');
    }
    return this.#putKv(record, main, state.createdMain, state.version);
  }

  /** The kv of `record`, a put at `main` with the create revision and version given. */
  #putKv(record: number, main: number, createRevision: number, version: number): KeyValue {
    const page = this.#pages[record >>> PAGE_BITS]!;
    const at = record & IN_PAGE;
    const length = page.lengths[at]!;
    return {
      key: page.keys[at]!.key,
      value: length === 0 ? EMPTY_BYTES : this.#values.view(page.places[at]!, length),
      createRevision,
      modRevision: main,
      version,
      lease: page.leases[at]!,
    };
  }

  /** Hands `visitor` `record`, a change at `main`, unless it was dropped. */
  #visit(record: number, main: number, visitor: ChangeVisitor): void {
    const page = this.#pages[record >>> PAGE_BITS]!;
    const at = record & IN_PAGE;
    const owner = page.keys[at];
    if (owner === undefined) return;
    const fields = this.#fields;
    const sub = page.subs[at]!;
    const place = page.places[at]!;
    fields.key = owner.key;
    fields.modRevision = main;
    if (place === -1) {
      fields.createRevision = 0;
      fields.version = 0;
      fields.valueLength = 0;
      fields.lease = 0n;
      visitor.change(owner, sub, true, fields);
      return;
    }
    const state = this.#position;
    if (!owner.locate(main, sub, state)) {
      throw new Error('history: a kept put the key index does not know');
    }
    const length = page.lengths[at]!;
    fields.createRevision = state.createdMain;
    fields.version = state.version;
    fields.valueLength = length;
    fields.values = length === 0 ? EMPTY_BYTES : this.#values.chunkOf(place);
    fields.valueOffset = length === 0 ? 0 : this.#values.offsetOf(place);
    fields.lease = page.leases[at]!;
    visitor.change(owner, sub, false, fields);
  }

  #entryOf(record: number, main: number): HistoryEntry {
    const kv = this.#kvOf(record, main);
    return { revision: { main, sub: this.#subOf(record) }, kv, tombstone: kv.version === 0 };
  }

  /** Rewrites the pages without the dropped records, from the oldest main revision kept on. */
  #rewrite(): void {
    const pages = [new RecordPage(FIRST_PAGE_RECORDS)];
    const firsts = new Uint32Array(Math.max(FIRST_PAGE_RECORDS, this.#mains));
    let mains = 0;
    let base = this.#base;
    let count = 0;
    for (let at = 0; at < this.#mains; at++) {
      const end = this.#end(at);
      if (count === 0) {
        let any = false;
        for (let record = this.#firsts[at]!; record < end && !any; record++) {
          any = this.#keyOf(record) !== undefined;
        }
        if (!any) continue;
        base = this.#base + at;
      }
      firsts[mains++] = count;
      for (let record = this.#firsts[at]!; record < end; record++) {
        if (this.#keyOf(record) === undefined) continue;
        const to = count++;
        pageFor(pages, to).copy(this.#pages[record >>> PAGE_BITS]!, record & IN_PAGE, to & IN_PAGE);
      }
    }
    this.#pages = pages;
    this.#firsts = firsts;
    this.#count = count;
    this.#dropped = 0;
    // Nothing kept: the next change starts the history again.
    this.#mains = count === 0 ? 0 : mains;
    this.#base = base;
  }
}

/** The page of `record`, the next one to append: a new page, or the first one grown. */
function pageFor(pages: RecordPage[], record: number): RecordPage {
  const index = record >>> PAGE_BITS;
  const page = pages[index];
  if (page === undefined) {
    const added = new RecordPage(PAGE_RECORDS);
    pages.push(added);
    return added;
  }
  if ((record & IN_PAGE) < page.capacity) return page;
  const larger = new RecordPage(page.capacity * 2, page);
  pages[index] = larger;
  return larger;
}

function grown(column: Uint32Array, capacity: number) {
  const next = new Uint32Array(Math.max(capacity, FIRST_PAGE_RECORDS));
  next.set(column);
  return next;
}

/** Backend key (17 bytes) plus a KeyValue encoding: key, value and about 20 bytes of varints. */
function sizeOf(keyLength: number, valueLength: number): number {
  return 17 + keyLength + valueLength + 20;
}
