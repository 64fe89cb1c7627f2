// The events an unsynced watcher gets in one history response. etcd caps a response at a number of
// distinct revisions (1000), never splitting a revision, so a watcher far behind catches up in
// several responses and a txn's events always arrive together.

import type { ProtoWriter } from '../mvcc/kv-encoding.js';
import type { MvccEvent } from '../mvcc/types.js';

/** etcd's cap on distinct revisions in one history response (watchBatchMaxRevs). */
export const MAX_BATCH_REVISIONS = 1000;

/** Counts the distinct revisions of a batch's events, up to its cap. */
class RevisionCap {
  /** First revision left out because the batch was full; 0 while nothing was. */
  moreRevision = 0;
  readonly #maxRevisions: number;
  #revisions = 0;
  #lastRevision = 0;

  constructor(maxRevisions = MAX_BATCH_REVISIONS) {
    this.#maxRevisions = maxRevisions;
  }

  /** True once an event had to be left out: later revisions belong to the next batch. */
  get full(): boolean {
    return this.moreRevision !== 0;
  }

  /**
   * Whether an event of `revision` (at or after the previous one's) still belongs to the batch;
   * the first that does not makes it full. A filter may drop an event admitted: its revision
   * still counts, as in etcd, which filters after batching.
   */
  admits(revision: number): boolean {
    if (this.full) return false;
    if (revision !== this.#lastRevision) {
      if (this.#revisions === this.#maxRevisions) {
        this.moreRevision = revision;
        return false;
      }
      this.#revisions++;
      this.#lastRevision = revision;
    }
    return true;
  }
}

/** Events of consecutive revisions, up to a number of distinct revisions. */
export class EventBatch extends RevisionCap {
  readonly events: MvccEvent[] = [];

  /** Adds `event`, which is at or after the previous one; ignored once the batch is full. */
  add(event: MvccEvent): void {
    if (this.admits(event.kv.modRevision)) this.events.push(event);
  }
}

/**
 * Events of consecutive revisions already encoded as WatchResponse `events` fields, in a buffer
 * shared with the other watchers of a catch-up pass (each event is encoded once, however many
 * watchers get it). Admit each event's revision first.
 */
export class EncodedBatch extends RevisionCap {
  /** The buffer the events are in; read up to the last range's end. */
  readonly arena: ProtoWriter;
  /** [start, end) pairs of the events' fields in `arena.bytes`; adjacent events share a pair. */
  readonly ranges: number[] = [];
  /** Events in the batch. */
  count = 0;
  /** Bytes of the events' fields. */
  byteLength = 0;

  constructor(arena: ProtoWriter, maxRevisions = MAX_BATCH_REVISIONS) {
    super(maxRevisions);
    this.arena = arena;
  }

  /** Adds the event whose field is at [start, end) of the arena. */
  push(start: number, end: number): void {
    const ranges = this.ranges;
    const last = ranges.length - 1;
    if (last > 0 && ranges[last] === start) ranges[last] = end;
    else ranges.push(start, end);
    this.count++;
    this.byteLength += end - start;
  }
}
