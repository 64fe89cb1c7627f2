// A catch-up pass's read of history for watchers that want events as they are (no prev_kv, no
// fragments): each change a watcher of the pass watches is encoded once, straight from the
// history's record into the pass's buffer as a WatchResponse `events` field, and every such watcher's
// batch takes the bytes' place. No KeyValue, value view or wire object is made per event: those
// were most of a replayed event's cost (issue 28.1).
import { keyString } from '../bytes.js';
import type { ChangeVisitor, HistoryKey } from '../mvcc/history.js';
import {
  eventFieldSize,
  type KeyValueFields,
  keyValueSize,
  ProtoWriter,
  writeEventField,
} from '../mvcc/kv-encoding.js';
import type { MvccStore } from '../mvcc/store.js';
import { EncodedBatch } from './event-batch.js';
import type { Watcher } from './watcher.js';
import type { WatcherGroup } from './watcher-group.js';

/** Reads history for the watchers of one pass into encoded batches. */
export class HistoryEncoder implements ChangeVisitor {
  readonly batches = new Map<Watcher, EncodedBatch>();
  readonly #arena = new ProtoWriter(16 * 1024);
  readonly #group: WatcherGroup;
  readonly #maxBatchRevisions: number;
  /** A tombstone at this revision is not replayed (see WatchableStore); -1 for none. */
  readonly #skipDeleteAt: number;
  /** Watchers whose batch is not full yet. */
  #open: number;
  // The change being read, and where it was encoded (-1: not yet, no watcher wanted it so far).
  #tombstone = false;
  #fields: KeyValueFields | undefined;
  #start = -1;
  #end = -1;
  readonly #visitWatcher = (watcher: Watcher): void => this.#offer(watcher);

  constructor(group: WatcherGroup, maxBatchRevisions: number, skipDeleteAt: number) {
    this.#group = group;
    this.#open = group.size;
    this.#maxBatchRevisions = maxBatchRevisions;
    this.#skipDeleteAt = skipDeleteAt;
  }

  /** Reads revisions `from` to `to` of `source`, stopping once every batch is full. */
  read(source: MvccStore, from: number, to: number): void {
    for (let revision = from; revision <= to && this.#open > 0; revision++) {
      source.visitChangesAt(revision, this);
    }
  }

  change(key: HistoryKey, _sub: number, tombstone: boolean, kv: KeyValueFields): void {
    if (tombstone && kv.modRevision === this.#skipDeleteAt) return;
    this.#tombstone = tombstone;
    this.#fields = kv;
    this.#start = -1;
    this.#group.forEachWatching(keyString(key.key), this.#visitWatcher);
  }

  #offer(watcher: Watcher): void {
    const revision = this.#fields!.modRevision;
    if (revision < watcher.minRevision) return;
    let batch = this.batches.get(watcher);
    if (batch === undefined) {
      batch = new EncodedBatch(this.#arena, this.#maxBatchRevisions);
      this.batches.set(watcher, batch);
    }
    if (batch.full) return;
    if (!batch.admits(revision)) {
      // Once every watcher's batch is full, later history is not needed in this pass.
      this.#open--;
      return;
    }
    const { noPut, noDelete } = watcher.options;
    if (this.#tombstone ? noDelete : noPut) return;
    if (this.#start === -1) this.#encode();
    batch.push(this.#start, this.#end);
  }

  /** Encodes the change being read as an `events` field, after the pass's earlier ones. */
  #encode(): void {
    const kv = this.#fields!;
    const out = this.#arena;
    const kvSize = keyValueSize(kv);
    out.reserve(eventFieldSize(this.#tombstone, kvSize));
    this.#start = out.length;
    writeEventField(out, this.#tombstone, kv, kvSize);
    this.#end = out.length;
  }
}
