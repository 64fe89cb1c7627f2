// The revision-ordered history: every change still kept, addressed by (main, sub) revision. The
// map is filled in ascending main order and JavaScript maps iterate in insertion order, so walking
// it from the start walks history in revision order.
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

/** The changes of every revision still in history. */
export class RevisionHistory {
  private readonly byMain = new Map<number, HistoryEntry[]>();
  private size = 0;

  /** Approximate bytes the kept changes would take in etcd's backend. */
  get bytes(): number {
    return this.size;
  }

  /** Appends a change; changes arrive in ascending (main, sub) order. */
  add(entry: HistoryEntry): void {
    this.size += sizeOf(entry);
    const entries = this.byMain.get(entry.revision.main);
    if (entries === undefined) this.byMain.set(entry.revision.main, [entry]);
    else entries.push(entry);
  }

  /** The change at `revision`, if it is still kept. */
  get(revision: Revision): HistoryEntry | undefined {
    const entries = this.byMain.get(revision.main);
    if (entries === undefined) return undefined;
    // Entries are dense until a compaction removes some, so the sub is usually the position.
    const direct = entries[revision.sub];
    if (direct !== undefined && direct.revision.sub === revision.sub) return direct;
    let low = 0;
    let high = entries.length - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      const sub = entries[mid]!.revision.sub;
      if (sub === revision.sub) return entries[mid];
      if (sub < revision.sub) low = mid + 1;
      else high = mid - 1;
    }
    return undefined;
  }

  /** The kept changes of revision `main`, in op order. */
  changesAt(main: number): readonly HistoryEntry[] {
    return this.byMain.get(main) ?? [];
  }

  /** Forgets the given changes (a compaction dropping history). */
  remove(revisions: readonly Revision[]): void {
    const byMain = new Map<number, Set<number>>();
    for (const { main, sub } of revisions) {
      const subs = byMain.get(main);
      if (subs === undefined) byMain.set(main, new Set([sub]));
      else subs.add(sub);
    }
    for (const [main, subs] of byMain) {
      const entries = this.byMain.get(main);
      if (entries === undefined) continue;
      const kept = entries.filter((entry) => {
        if (!subs.has(entry.revision.sub)) return true;
        this.size -= sizeOf(entry);
        return false;
      });
      if (kept.length === 0) this.byMain.delete(main);
      else this.byMain.set(main, kept);
    }
  }

  /** Every kept change with main revision <= `main`, in revision order. */
  *upTo(main: number): Generator<HistoryEntry> {
    for (const [revision, entries] of this.byMain) {
      if (revision > main) return;
      yield* entries;
    }
  }
}

/** Backend key (17 bytes) plus a KeyValue encoding: key, value and about 20 bytes of varints. */
function sizeOf(entry: HistoryEntry): number {
  return 17 + entry.kv.key.length + entry.kv.value.length + 20;
}
