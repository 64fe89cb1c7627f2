// The typed end of a watcher whose resume point was compacted away.
import { CompactedError, type EtcdErrorInit } from '../errors.js';

/**
 * The revision a watcher needed next was compacted: the history between its last delivered
 * revision and `compactRevision` is gone, so the watcher cannot go on without losing events. It is
 * a {@link CompactedError} (code `COMPACTED`). Re-read the current state and watch again from the
 * read's revision + 1 (the informer does exactly that).
 */
export class WatchCompactedError extends CompactedError {
  /** The store's compaction revision: the oldest revision a new watch may start at. */
  readonly compactRevision: bigint;
  /** The revision the watcher asked to start (or resume) from. */
  readonly startRevision: bigint;

  constructor(compactRevision: bigint, startRevision: bigint, init?: EtcdErrorInit) {
    super({
      message: `${CompactedError.etcdMessage} (watch from revision ${startRevision}, compacted at ${compactRevision})`,
      ...init,
    });
    this.compactRevision = compactRevision;
    this.startRevision = startRevision;
  }
}
