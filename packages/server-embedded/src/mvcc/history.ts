// The revision-ordered history: every change still kept, addressed by (main, sub) revision. Main
// revisions are dense, so the changes sit in an array indexed by main revision (from the oldest
// kept one): one slot per revision, holding its one change (a revision of one change at sub 0, the
// usual put) or an array indexed by sub. No per-change record beside the KeyValue itself: a change
// is a tombstone when its version is 0 (a put's is at least 1), and HistoryEntry objects are made
// only for the callers that walk history (issue 28.1).
import type { Revision } from './revision.js';
import type { KeyValue } from './types.js';

/** One change in history. */
export interface HistoryEntry {
  readonly revision: Revision;
  /** The key's value after the change; for a tombstone only key and modRevision are set. */
  readonly kv: KeyValue;
  /** True for a delete. */
  readonly tombstone: boolean;
}

/** The changes of one main revision: its only change at sub 0, or its changes by sub. */
type Slot = KeyValue | (KeyValue | undefined)[] | undefined;

/** The changes of every revision still in history. */
export class RevisionHistory {
  #slots: Slot[] = [];
  /** Main revision of `slots[0]`. */
  #base = 0;
  #size = 0;

  /** Approximate bytes the kept changes would take in etcd's backend. */
  get bytes(): number {
    return this.#size;
  }

  /**
   * Appends a change; changes arrive in ascending (main, sub) order. A tombstone's kv must have
   * version 0, as etcd's does.
   */
  add(revision: Revision, kv: KeyValue): void {
    const { main, sub } = revision;
    if (this.#slots.length === 0) this.#base = main;
    const at = main - this.#base;
    if (at < this.#slots.length - 1 || at < 0) {
      throw new Error(`history: change at ${main}.${sub} is below the latest revision`);
    }
    this.#size += sizeOf(kv);
    // Revisions with nothing kept (a restored, compacted history) stay empty slots.
    while (this.#slots.length < at) this.#slots.push(undefined);
    if (at === this.#slots.length) {
      if (sub === 0) {
        this.#slots.push(kv);
      } else {
        const changes: (KeyValue | undefined)[] = [];
        changes[sub] = kv;
        this.#slots.push(changes);
      }
      return;
    }
    const slot = this.#slots[at];
    if (Array.isArray(slot)) slot[sub] = kv;
    else {
      const changes: (KeyValue | undefined)[] = [slot];
      changes[sub] = kv;
      this.#slots[at] = changes;
    }
  }

  /** The kv of the change at `revision`, if it is still kept. */
  get(revision: Revision): KeyValue | undefined {
    const slot = this.#slots[revision.main - this.#base];
    if (slot === undefined) return undefined;
    if (Array.isArray(slot)) return slot[revision.sub];
    return revision.sub === 0 ? slot : undefined;
  }

  /** The kept changes of revision `main`, in op order. */
  changesAt(main: number): HistoryEntry[] {
    const entries: HistoryEntry[] = [];
    this.#forEachAt(main, (entry) => entries.push(entry));
    return entries;
  }

  /** Forgets the given changes (a compaction dropping history). */
  remove(revisions: readonly Revision[]): void {
    for (const { main, sub } of revisions) {
      const at = main - this.#base;
      const slot = this.#slots[at];
      if (slot === undefined) continue;
      if (!Array.isArray(slot)) {
        if (sub !== 0) continue;
        this.#size -= sizeOf(slot);
        this.#slots[at] = undefined;
        continue;
      }
      const kv = slot[sub];
      if (kv === undefined) continue;
      this.#size -= sizeOf(kv);
      slot[sub] = undefined;
      if (slot.every((change) => change === undefined)) this.#slots[at] = undefined;
    }
    let empty = 0;
    while (empty < this.#slots.length && this.#slots[empty] === undefined) empty++;
    if (empty > 0) {
      this.#slots = this.#slots.slice(empty);
      this.#base += empty;
    }
  }

  /** Every kept change with main revision <= `main`, in revision order. */
  *upTo(main: number): Generator<HistoryEntry> {
    const last = Math.min(main - this.#base, this.#slots.length - 1);
    for (let at = 0; at <= last; at++) {
      const entries: HistoryEntry[] = [];
      this.#forEachAt(this.#base + at, (entry) => entries.push(entry));
      yield* entries;
    }
  }

  #forEachAt(main: number, visit: (entry: HistoryEntry) => void): void {
    const slot = this.#slots[main - this.#base];
    if (slot === undefined) return;
    if (!Array.isArray(slot)) {
      visit(entryOf(main, 0, slot));
      return;
    }
    slot.forEach((kv, sub) => {
      if (kv !== undefined) visit(entryOf(main, sub, kv));
    });
  }
}

function entryOf(main: number, sub: number, kv: KeyValue): HistoryEntry {
  return { revision: { main, sub }, kv, tombstone: kv.version === 0 };
}

/** Backend key (17 bytes) plus a KeyValue encoding: key, value and about 20 bytes of varints. */
function sizeOf(kv: KeyValue): number {
  return 17 + kv.key.length + kv.value.length + 20;
}
