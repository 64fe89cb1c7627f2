// The events an unsynced watcher gets in one history response. etcd caps a response at a number of
// distinct revisions (1000), never splitting a revision, so a watcher far behind catches up in
// several responses and a txn's events always arrive together.
import type { MvccEvent } from '../mvcc/types.js';

/** etcd's cap on distinct revisions in one history response (watchBatchMaxRevs). */
export const MAX_BATCH_REVISIONS = 1000;

/** Events of consecutive revisions, up to a number of distinct revisions. */
export class EventBatch {
  readonly events: MvccEvent[] = [];
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

  /** Adds `event`, which is at or after the previous one; ignored once the batch is full. */
  add(event: MvccEvent): void {
    if (this.full) return;
    const revision = event.kv.modRevision;
    if (revision !== this.#lastRevision) {
      if (this.#revisions === this.#maxRevisions) {
        this.moreRevision = revision;
        return;
      }
      this.#revisions++;
      this.#lastRevision = revision;
    }
    this.events.push(event);
  }
}
