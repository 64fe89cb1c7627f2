// One watch: the keys it watches, the revision it has reached, and the stream its responses go to.
// The watchable store moves it between its synced and unsynced groups; the watch stream owns it.
import type { MvccEvent } from '../mvcc/types.js';
import type { EncodedBatch } from './event-batch.js';

/**
 * The keys a watcher watches, as latin1 key strings (see bytes.ts): the single key `key`, or the
 * half-open range [key, end) where an undefined `end` reaches past every key.
 */
export interface WatchedKeys {
  readonly key: string;
  /** True for a single-key watch; `end` is then unused. */
  readonly single: boolean;
  readonly end: string | undefined;
}

/** What a watcher hands to its stream (etcd's mvcc WatchResponse). */
export interface WatcherResponse {
  /** The watch the response is for; -1n for a progress notification on behalf of a whole stream. */
  readonly watchId: bigint;
  /** Matching events in revision and op order; none for progress and compaction responses. */
  readonly events: readonly MvccEvent[];
  /**
   * History events already in wire form, in place of `events` (which is then empty); only for a
   * sink that writes bytes.
   */
  readonly encoded?: EncodedBatch;
  /**
   * The response header's revision: the events' revision for live delivery, the store's revision
   * for history batches and progress notifications, 0 for a compaction cancel (as etcd sends it).
   */
  readonly revision: number;
  /** Non-zero when the watcher is canceled because history it needs was compacted at this revision. */
  readonly compactRevision: number;
}

/** Where a watcher's responses go: its gRPC watch stream. */
export interface WatchSink {
  /**
   * Queues `response` for sending; false when the stream is congested and it was not queued. Never
   * blocks: the store calls it while committing a write.
   */
  send(watcher: Watcher, response: WatcherResponse): boolean;
  /** False while the stream is congested, so every send would fail. */
  readonly accepting: boolean;
  /**
   * True when the sink only writes responses to the wire: history batches may then come already
   * encoded (WatcherResponse.encoded, `events` empty). Other sinks (the server's own watches)
   * always get `events`.
   */
  readonly writesBytes?: boolean;
}

/** Where a watcher stands. */
export type WatcherState =
  /** Has seen every revision up to the store's: gets each new revision as it is committed. */
  | 'synced'
  /** Behind the store (a past start revision, or a congested stream): catches up from history. */
  | 'unsynced'
  /** Canceled by the store because history it needed was compacted; the stream still owns it. */
  | 'compacted'
  /** Removed from the store. */
  | 'canceled';

/** What a WatchCreateRequest asks for, once validated. */
export interface WatcherOptions {
  readonly keys: WatchedKeys;
  /** First revision wanted; 0 for "from the next revision". */
  readonly startRevision: number;
  /** Drop put events (filter NOPUT). */
  readonly noPut: boolean;
  /** Drop delete events (filter NODELETE). */
  readonly noDelete: boolean;
  /** Attach each event's previous key-value. */
  readonly prevKv: boolean;
  /** Split responses larger than the request limit into fragments. */
  readonly fragment: boolean;
  /** Send progress notifications when idle. */
  readonly progressNotify: boolean;
}

/** A watch registered in the watchable store. */
export class Watcher {
  readonly id: bigint;
  readonly keys: WatchedKeys;
  readonly startRevision: number;
  readonly options: WatcherOptions;
  readonly sink: WatchSink;
  /** The lowest revision whose events this watcher still has to receive. */
  minRevision: number;
  state: WatcherState = 'unsynced';

  constructor(id: bigint, options: WatcherOptions, sink: WatchSink, minRevision: number) {
    this.id = id;
    this.keys = options.keys;
    this.startRevision = options.startRevision;
    this.options = options;
    this.sink = sink;
    this.minRevision = minRevision;
  }

  /** Whether `key` (a latin1 key string) is one this watcher watches. */
  watches(key: string): boolean {
    const { keys } = this;
    if (keys.single) return key === keys.key;
    return key >= keys.key && (keys.end === undefined || key < keys.end);
  }

  /** `events` without the ones this watcher's filters drop. */
  filter(events: readonly MvccEvent[]): readonly MvccEvent[] {
    const { noPut, noDelete } = this.options;
    if (!noPut && !noDelete) return events;
    return events.filter((event) => (event.type === 'put' ? !noPut : !noDelete));
  }
}
