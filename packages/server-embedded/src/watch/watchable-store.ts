// The watchable store (etcd's watchableStore): watchers in two groups over the MVCC store.
//
// - Synced watchers have seen every revision up to the store's. Each commit is handed to them right
//   away, one response per revision, from inside the commit: a send only queues a response on the
//   watcher's stream and never waits, so writers never wait for watchers.
// - Unsynced watchers are behind: a past start revision, or a stream that stopped draining (its
//   queue refused a response). They catch up from history in batches of up to 1000 revisions, in
//   sync passes scheduled off the commit path, one pass after another while there is work and
//   their streams take it; then they join the synced group. A watcher that falls behind the
//   compaction revision is canceled with it instead.
// - Held (a member of a simulated cluster cut off from its leader): the member applies nothing, so
//   its watchers are served from what it had applied, exactly as etcd's watchable store goes on
//   serving from a store that no commit reaches: catch-up from that history, progress at that
//   revision, nothing live. Released, every watcher catches up with the cluster from history.
import { keyString } from '../bytes.js';
import type { MvccStore } from '../mvcc/store.js';
import type { CommittedRevision, MvccEvent } from '../mvcc/types.js';
import { type EncodedBatch, EventBatch, MAX_BATCH_REVISIONS } from './event-batch.js';
import { HistoryEncoder } from './history-encoder.js';
import { Watcher, type WatcherOptions, type WatchSink } from './watcher.js';
import { WatcherGroup } from './watcher-group.js';

/** The watch id of a progress notification sent on behalf of every watcher of a stream. */
export const STREAM_PROGRESS_WATCH_ID = -1n;

/**
 * What a member cut off from its cluster's leader had applied (a MemberAppliedState): the revision
 * and the store its watchers are served from while held. `store` is read only when a watcher needs
 * history or a previous value, so it may be built on first use.
 */
export interface AppliedHistory {
  readonly revision: number;
  readonly store: MvccStore;
}

/** Tuning of {@link WatchableStore}; the defaults are etcd's. */
export interface WatchableStoreOptions {
  /** Most distinct revisions in one history response. Default 1000. */
  readonly maxBatchRevisions?: number;
  /** Most unsynced watchers one sync pass serves, so one pass stays short. Default 512. */
  readonly maxWatchersPerSync?: number;
  /**
   * A watch from the compaction revision replays the delete recorded at it, as etcd 3.5 on does;
   * default false, etcd 3.4's way (the tombstone is gone from what it replays).
   */
  readonly replaysCompactionDelete?: boolean;
}

/** Watchers over an MVCC store: live delivery for synced ones, history catch-up for the others. */
export class WatchableStore {
  readonly store: MvccStore;
  readonly #synced = new WatcherGroup();
  readonly #unsynced = new WatcherGroup();
  readonly #maxBatchRevisions: number;
  readonly #maxWatchersPerSync: number;
  readonly #unsubscribe: () => void;
  #syncPass: NodeJS.Immediate | undefined;
  #closed = false;
  /** What the member had applied, while held (see hold()); undefined when up to date. */
  #applied: AppliedHistory | undefined;

  readonly #replaysCompactionDelete: boolean;

  constructor(store: MvccStore, options: WatchableStoreOptions = {}) {
    this.store = store;
    this.#maxBatchRevisions = options.maxBatchRevisions ?? MAX_BATCH_REVISIONS;
    this.#maxWatchersPerSync = options.maxWatchersPerSync ?? 512;
    this.#replaysCompactionDelete = options.replaysCompactionDelete === true;
    this.#unsubscribe = store.subscribe((committed) => this.#notify(committed));
  }

  /** The store's current revision; while held, the revision the member had applied. */
  get revision(): number {
    return this.#applied?.revision ?? this.store.revision;
  }

  /**
   * The store as this member has applied it: the shared store, or while held the one it had when
   * cut off. Previous values (prev_kv) are read from it when a response is sent, as etcd reads
   * them from its own store then.
   */
  get appliedStore(): MvccStore {
    return this.#applied?.store ?? this.store;
  }

  /** True between {@link hold} and {@link release}. */
  get held(): boolean {
    return this.#applied !== undefined;
  }

  /**
   * Serves the watchers from `applied` until {@link release}, as a member cut off from its
   * cluster's leader does: it applies nothing more, and its watchable store goes on serving from
   * the store it has (etcd 3.4's watchableStore knows nothing of leaders). So synced watchers stay
   * synced and get nothing new; unsynced ones, and watches created meanwhile with a start revision
   * at or below `applied.revision`, catch up from its history at once; a later start waits;
   * progress notifications carry `applied.revision`. The shared store's commits are not delivered.
   * `applied.revision` must be the shared store's revision now: nothing was missed before it.
   */
  hold(applied: AppliedHistory): void {
    if (this.#applied !== undefined || this.#closed) return;
    this.#applied = applied;
  }

  /**
   * Ends a {@link hold}: the member rejoins and learns what the cluster committed meanwhile. Every
   * watcher becomes unsynced and catches up from the shared store's history, in order, from the
   * revision it had reached: nothing is missed or sent twice. One whose next revision the cluster
   * compacted meanwhile is canceled with the compaction revision. On etcd that is a matter of
   * timing (a member that is sent a snapshot restores its store and cancels every such watcher;
   * one that replays the log delivers to its synced watchers as it applies, and only a watcher
   * that fell behind is canceled); here the history is gone, so the cancel is the only answer,
   * and a watcher must handle it anyway.
   */
  release(): void {
    if (this.#applied === undefined) return;
    this.#applied = undefined;
    // etcd's watchableStore.Restore does the same with its synced watchers after a snapshot.
    for (const watcher of [...this.#synced.watchers()]) {
      this.#synced.delete(watcher);
      this.#unsynced.add(watcher);
      watcher.state = 'unsynced';
    }
    if (this.#unsynced.size > 0) this.#scheduleSync();
  }

  /** Watchers in the store (synced and unsynced); compacted and canceled ones are not counted. */
  get size(): number {
    return this.#synced.size + this.#unsynced.size;
  }

  /** Unsynced watchers: those catching up from history. */
  get unsyncedSize(): number {
    return this.#unsynced.size;
  }

  /**
   * Registers a watcher. Start revision 0, or one past the current revision (held: the applied
   * one), makes it synced (from the next revision, or from that future one); any other start makes
   * it catch up from history.
   */
  watch(id: bigint, options: WatcherOptions, sink: WatchSink): Watcher {
    const current = this.revision;
    const { startRevision } = options;
    if (startRevision === 0 || startRevision > current) {
      const watcher = new Watcher(id, options, sink, Math.max(current + 1, startRevision));
      watcher.state = 'synced';
      this.#synced.add(watcher);
      return watcher;
    }
    const watcher = new Watcher(id, options, sink, startRevision);
    this.#unsynced.add(watcher);
    this.#scheduleSync();
    return watcher;
  }

  /** Removes `watcher` from the store; nothing is sent for it afterwards. */
  cancel(watcher: Watcher): void {
    this.#synced.delete(watcher);
    this.#unsynced.delete(watcher);
    watcher.state = 'canceled';
  }

  /**
   * Sends a progress notification (no events, the current revision) for `watchers` through the
   * first one's stream, as `responseWatchId`, but only when every one of them is synced and has
   * reached its start revision: only then does the revision promise that nothing older is still
   * to come. Returns false when some watcher is not there yet. A congested stream drops it.
   */
  progress(watchers: Iterable<Watcher>, responseWatchId: bigint): boolean {
    // Held, the member's own revision: the one it promises, whatever the cluster has committed.
    const current = this.revision;
    let first: Watcher | undefined;
    for (const watcher of watchers) {
      if (!this.#synced.has(watcher) || current < watcher.startRevision) return false;
      first ??= watcher;
    }
    first?.sink.send(first, {
      watchId: responseWatchId,
      events: [],
      revision: current,
      compactRevision: 0,
    });
    return true;
  }

  /** A stream that refused responses can take them again: let its watchers catch up. */
  resume(): void {
    if (this.#unsynced.size > 0) this.#scheduleSync();
  }

  /** Stops watching the store and forgets every watcher. */
  close(): void {
    this.#closed = true;
    this.#unsubscribe();
    if (this.#syncPass !== undefined) clearImmediate(this.#syncPass);
    this.#syncPass = undefined;
    for (const group of [this.#synced, this.#unsynced]) {
      for (const watcher of [...group.watchers()]) this.cancel(watcher);
    }
  }

  /** Delivers a committed revision to the synced watchers it concerns. */
  #notify({ revision, events }: CommittedRevision): void {
    // Held, the member applies nothing: the cluster's commits reach it only once released.
    if (this.#synced.size === 0 || this.#applied !== undefined) return;
    if (events.length === 1) {
      this.#notifyOne(revision, events);
      return;
    }
    const matches = new Map<Watcher, MvccEvent[]>();
    for (const event of events) {
      this.#synced.forEachWatching(keyString(event.kv.key), (watcher) => {
        // A watcher with a future start revision sits in the synced group until the store gets there.
        if (revision < watcher.minRevision) return;
        const list = matches.get(watcher);
        if (list === undefined) matches.set(watcher, [event]);
        else list.push(event);
      });
    }
    for (const [watcher, matched] of matches) this.#sendLive(watcher, matched, revision);
  }

  /**
   * #notify for a commit of one event (a lock's put or delete): each watcher is visited once for
   * one key (it sits in one set of the group), so its events are that one list, shared, and no
   * map of lists is made.
   */
  #notifyOne(revision: number, events: readonly MvccEvent[]): void {
    const watchers: Watcher[] = [];
    this.#synced.forEachWatching(keyString(events[0]!.kv.key), (watcher) => {
      // A watcher with a future start revision sits in the synced group until the store gets there.
      if (revision >= watcher.minRevision) watchers.push(watcher);
    });
    for (const watcher of watchers) this.#sendLive(watcher, events, revision);
  }

  /** Sends a synced watcher the events of `revision` it matched (those its filters keep). */
  #sendLive(watcher: Watcher, matched: readonly MvccEvent[], revision: number): void {
    watcher.minRevision = revision + 1;
    const visible = watcher.filter(matched);
    // Nothing is sent when the filters drop every event of the revision.
    if (visible.length === 0) return;
    const response = { watchId: watcher.id, events: visible, revision, compactRevision: 0 };
    if (!watcher.sink.send(watcher, response)) {
      // The stream is not draining: this revision and later ones will come from history once it
      // does (the stream calls resume()), so the writer never waits for a slow reader.
      watcher.minRevision = revision;
      this.#synced.delete(watcher);
      this.#unsynced.add(watcher);
      watcher.state = 'unsynced';
    }
  }

  #scheduleSync(): void {
    if (this.#syncPass !== undefined || this.#closed) return;
    this.#syncPass = setImmediate(() => {
      this.#syncPass = undefined;
      this.#syncUnsynced();
    });
  }

  /**
   * One catch-up pass: each chosen unsynced watcher whose stream takes responses gets its next
   * batch of history, or its compaction cancel, and joins the synced group once it has everything.
   */
  #syncUnsynced(): void {
    if (this.#closed) return;
    // Held, from the member's own history: up to the revision it had, compacted where it was.
    const source = this.appliedStore;
    const current = this.revision;
    const compactRevision = source.compactRevision;
    let progressed = false;
    // Watchers that want events as they are, on a sink that writes bytes, get them encoded
    // straight from history; prev_kv (read when sent), fragments and the server's own watches
    // need the events as objects.
    const chosen = new WatcherGroup();
    const plain = new WatcherGroup();
    let minRevision = Number.POSITIVE_INFINITY;
    let minPlainRevision = Number.POSITIVE_INFINITY;
    const order: Watcher[] = [];
    for (const watcher of [...this.#unsynced.watchers()]) {
      if (order.length >= this.#maxWatchersPerSync) break;
      // Work for a stream that would refuse it is wasted; its drain schedules another pass.
      if (!watcher.sink.accepting) continue;
      if (watcher.minRevision < compactRevision) {
        const response = { watchId: watcher.id, events: [], revision: 0, compactRevision };
        if (watcher.sink.send(watcher, response)) {
          this.#unsynced.delete(watcher);
          watcher.state = 'compacted';
          progressed = true;
        }
        continue;
      }
      order.push(watcher);
      if (watcher.options.prevKv || watcher.options.fragment || !watcher.sink.writesBytes) {
        chosen.add(watcher);
        minRevision = Math.min(minRevision, watcher.minRevision);
      } else {
        plain.add(watcher);
        minPlainRevision = Math.min(minPlainRevision, watcher.minRevision);
      }
    }

    const batches = this.#readHistory(source, chosen, minRevision, current, compactRevision);
    const encoder = new HistoryEncoder(
      plain,
      this.#maxBatchRevisions,
      this.#replaysCompactionDelete ? -1 : compactRevision,
    );
    if (plain.size > 0) encoder.read(source, minPlainRevision, current);
    for (const watcher of order) {
      const batch: EventBatch | EncodedBatch | undefined =
        batches.get(watcher) ?? encoder.batches.get(watcher);
      if (batch !== undefined) {
        const sent =
          batch instanceof EventBatch
            ? this.#sendEvents(watcher, watcher.filter(batch.events), current)
            : batch.count === 0 ||
              watcher.sink.send(watcher, {
                watchId: watcher.id,
                events: [],
                encoded: batch,
                revision: current,
                compactRevision: 0,
              });
        // Retried on a later pass, from the same revision, when the stream refuses it.
        if (!sent) continue;
      }
      progressed = true;
      if (batch?.full) {
        watcher.minRevision = batch.moreRevision;
        continue;
      }
      // A watcher that starts in the future (unsynced by a release while it waited) keeps waiting.
      watcher.minRevision = Math.max(watcher.minRevision, current + 1);
      this.#unsynced.delete(watcher);
      this.#synced.add(watcher);
      watcher.state = 'synced';
    }
    if (progressed && this.#unsynced.size > 0) this.#scheduleSync();
  }

  /** Sends a history batch's `events` (none: nothing to send); false when the stream refused it. */
  #sendEvents(watcher: Watcher, events: readonly MvccEvent[], current: number): boolean {
    if (events.length === 0) return true;
    return watcher.sink.send(watcher, {
      watchId: watcher.id,
      events,
      revision: current,
      compactRevision: 0,
    });
  }

  /** The next history batch of each watcher of `group` in `source`, from `minRevision` to `current`. */
  #readHistory(
    source: MvccStore,
    group: WatcherGroup,
    minRevision: number,
    current: number,
    compactRevision: number,
  ): Map<Watcher, EventBatch> {
    const batches = new Map<Watcher, EventBatch>();
    let open = group.size;
    if (open === 0) return batches;
    for (let revision = minRevision; revision <= current && open > 0; revision++) {
      for (const event of source.changesAt(revision).events) {
        // etcd 3.4's compaction removes a tombstone at the compaction revision, so it never
        // replays that delete; this store keeps it (reads need it), so it is skipped there.
        const boundary = event.type === 'delete' && revision === compactRevision;
        if (boundary && !this.#replaysCompactionDelete) continue;
        this.#group(group, event, revision, batches, () => open--);
      }
    }
    return batches;
  }

  #group(
    group: WatcherGroup,
    event: MvccEvent,
    revision: number,
    batches: Map<Watcher, EventBatch>,
    onFull: () => void,
  ): void {
    group.forEachWatching(keyString(event.kv.key), (watcher) => {
      if (revision < watcher.minRevision) return;
      let batch = batches.get(watcher);
      if (batch === undefined) {
        batch = new EventBatch(this.#maxBatchRevisions);
        batches.set(watcher, batch);
      }
      if (batch.full) return;
      batch.add(event);
      // Once every watcher's batch is full, later history is not needed in this pass.
      if (batch.full) onFull();
    });
  }
}
