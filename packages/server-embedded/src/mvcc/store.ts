// The MVCC store: a key index over a revision-ordered history. A fresh store is at revision 1 with
// no compaction (-1). Every write request goes through one StoreWrite, which applies its changes at
// the next revision and bumps the current revision once, at its end, if anything changed. All of
// this is synchronous, so no reader can observe a half-applied write.
import { EtcdServerError } from '../errors.js';
import { ByteSlab } from './byte-slab.js';
import { HistoryHasher } from './hash.js';
import { type ChangeVisitor, type HistoryEntry, RevisionHistory } from './history.js';
import { KeyIndexTree, type KeyRange } from './index.js';
import { type KeyIndex, KeyPosition } from './key-index.js';
import type { Lessor } from './lessor.js';
import type { RangeOptions, RangeResult, RangeSelection, ReadView } from './read-view.js';
import { StoreWrite } from './store-write.js';
import type { CommittedRevision, KeyValue, MvccEvent } from './types.js';

export type { RangeOptions, RangeResult, ReadView } from './read-view.js';

/** HashKV's answer. */
export interface KvHash {
  /** CRC-32C of the history kept at or below `hashRevision` (see hash.ts). */
  readonly hash: number;
  readonly compactRevision: number;
  /** The revision the hash covers. */
  readonly hashRevision: number;
  /** The store's current revision. */
  readonly revision: number;
}

/** Receives every committed revision, in revision order, right after it is committed. */
export type CommitListener = (committed: CommittedRevision) => void;

/** Receives the revision of every compaction, right after it took effect. */
export type CompactionListener = (revision: number) => void;

/** A store's whole state, as a snapshot holds it (see {@link MvccStore.restore}). */
export interface StoreState {
  /** The store's current revision. */
  readonly revision: number;
  /** The last compaction revision; -1 if never compacted. */
  readonly compactRevision: number;
  /** Every kept change, in revision order; a tombstone's kv holds only key and modRevision. */
  readonly changes: Iterable<HistoryEntry>;
}

/** How many compaction hashes etcd keeps (hashStorageMaxSize). */
const KEPT_COMPACTION_HASHES = 10;

/** The multi-version key-value store. */
export class MvccStore implements ReadView {
  /** @internal */ readonly index = new KeyIndexTree();
  /** @internal */ readonly history = new RevisionHistory();
  /** @internal */ readonly lessor: Lessor | undefined;
  /** @internal */ readonly keyBytes = new ByteSlab();
  #current = 1;
  #compacted = -1;
  /** The hashes of the last compactions, as etcd 3.5+ keeps them (see {@link compactionHash}). */
  #compactionHashes: Omit<KvHash, 'revision'>[] = [];
  #writing: StoreWrite | undefined;
  readonly #listeners = new Set<CommitListener>();
  readonly #compactionListeners = new Set<CompactionListener>();

  /** `lessor` is told about every attach and detach of a key to a lease. */
  constructor(options?: { lessor?: Lessor }) {
    this.lessor = options?.lessor;
  }

  get revision(): number {
    return this.#current;
  }

  get compactRevision(): number {
    return this.#compacted;
  }

  /** Approximate size of the kept history in etcd's backend, for Status' dbSize. */
  get historyBytes(): number {
    return this.history.bytes;
  }

  range(range: KeyRange, options?: RangeOptions): RangeResult {
    return this.rangeAt(this.#current, range, options);
  }

  /**
   * Reads `range` for a view whose revision is `current` (the store's, or a write's including its
   * own changes): future and compacted revisions are errors; reading exactly at the compaction
   * revision is fine.
   * @internal
   */
  rangeAt(current: number, range: KeyRange, options: RangeOptions = {}): RangeResult {
    let revision = options.revision ?? 0;
    if (revision > current) throw new EtcdServerError('FUTURE_REVISION');
    if (revision <= 0) revision = current;
    if (revision < this.#compacted) throw new EtcdServerError('COMPACTED');
    if (options.countOnly) {
      return { kvs: [], count: this.index.count(range, revision), revision: current };
    }
    if (options.select !== undefined)
      return this.#selectAt(current, revision, range, options.select);
    const limit = options.limit !== undefined && options.limit > 0 ? options.limit : Infinity;
    const withTotalCount = options.withTotalCount ?? true;
    const kvs: KeyValue[] = [];
    let count = 0;
    this.index.forEach(range, revision, (_, at) => {
      if (kvs.length < limit) {
        const kv = this.history.kvAt(at);
        if (kv === undefined) throw new Error('mvcc: index points at a revision not in history');
        kvs.push(kv);
      } else if (!withTotalCount) {
        return false;
      }
      count++;
      return true;
    });
    return { kvs, count, revision: current };
  }

  /**
   * A read with a selection (RangeOptions.select): every key is counted, and key-values are made
   * only for the first `keep` passing the filters in the selection's order; equal values keep key
   * order, as the stable sort of the whole range would.
   */
  #selectAt(
    current: number,
    revision: number,
    range: KeyRange,
    select: RangeSelection,
  ): RangeResult {
    const { by, descend, keep } = select;
    const chosen: KeyPosition[] = [];
    const values: number[] = [];
    let count = 0;
    this.index.forEach(range, revision, (_, at) => {
      count++;
      if (
        (select.maxModRevision !== 0 && at.modifiedMain > select.maxModRevision) ||
        (select.minModRevision !== 0 && at.modifiedMain < select.minModRevision) ||
        (select.maxCreateRevision !== 0 && at.createdMain > select.maxCreateRevision) ||
        (select.minCreateRevision !== 0 && at.createdMain < select.minCreateRevision)
      ) {
        return true;
      }
      const value = by === 'create' ? at.createdMain : by === 'mod' ? at.modifiedMain : at.version;
      let place = chosen.length;
      while (place > 0 && (descend ? values[place - 1]! < value : values[place - 1]! > value)) {
        place--;
      }
      if (place >= keep) return true;
      // `at` is reused for every key: the kept ones are copied, into the position that falls off
      // the end when the selection is full (no object and no splice per key passed over).
      const kept = chosen.length < keep ? new KeyPosition() : chosen[chosen.length - 1]!;
      let last = chosen.length < keep ? chosen.length : chosen.length - 1;
      for (; last > place; last--) {
        chosen[last] = chosen[last - 1]!;
        values[last] = values[last - 1]!;
      }
      kept.modifiedMain = at.modifiedMain;
      kept.modifiedSub = at.modifiedSub;
      kept.createdMain = at.createdMain;
      kept.createdSub = at.createdSub;
      kept.version = at.version;
      chosen[place] = kept;
      values[place] = value;
      return true;
    });
    const kvs = chosen.map((at) => {
      const kv = this.history.kvAt(at);
      if (kv === undefined) throw new Error('mvcc: index points at a revision not in history');
      return kv;
    });
    return { kvs, count, revision: current };
  }

  /**
   * Starts the write of one request. Its changes share the next revision; `end()` commits them.
   * Only one write may be open at a time.
   */
  write(): StoreWrite {
    if (this.#writing !== undefined) throw new Error('mvcc: a write is already in progress');
    this.#writing = new StoreWrite(this, this.#current);
    return this.#writing;
  }

  /** Called by StoreWrite.end(). @internal */
  commit(write: StoreWrite, events: readonly MvccEvent[]): CommittedRevision | undefined {
    if (this.#writing !== write) throw new Error('mvcc: ending a write that is not open');
    this.#writing = undefined;
    if (events.length === 0) return undefined;
    this.#current++;
    const committed: CommittedRevision = { revision: this.#current, events };
    for (const listener of this.#listeners) {
      try {
        listener(committed);
      } catch (error) {
        // A failing listener must neither undo the commit nor starve the other listeners.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    return committed;
  }

  /** Calls `listener` with every revision committed from now on. Returns an unsubscribe function. */
  subscribe(listener: CommitListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Calls `listener` after every compaction from now on. Returns an unsubscribe function. */
  subscribeCompactions(listener: CompactionListener): () => void {
    this.#compactionListeners.add(listener);
    return () => this.#compactionListeners.delete(listener);
  }

  /**
   * Loads a state read back from a snapshot into this store, which must be fresh (revision 1,
   * nothing written). The index is rebuilt as etcd rebuilds it from its backend: a key's oldest
   * kept change restores its generation (create revision, version), later ones replay. Nothing is
   * told to the commit listeners or the lessor: this is not a write.
   * @internal
   */
  restore(state: StoreState): void {
    if (this.#current !== 1 || this.history.bytes > 0 || this.#writing !== undefined) {
      throw new Error('mvcc: only a fresh store can be restored');
    }
    for (const entry of state.changes) {
      // Own copies, as a write makes them: snapshot bytes may be views of a whole file.
      const found = this.index.find(entry.kv.key);
      const key = found?.key ?? this.keyBytes.copy(entry.kv.key);
      const { createRevision, version } = entry.kv;
      let keyIndex: KeyIndex | undefined;
      if (found === undefined) {
        keyIndex = this.index.restore(key, {
          created: { main: createRevision, sub: 0 },
          modified: entry.revision,
          // The history tells a tombstone by its version 0, as etcd stores one.
          version: entry.tombstone ? 0 : version,
          tombstone: entry.tombstone,
        });
      } else if (entry.tombstone) {
        keyIndex = this.index.tombstone(key, entry.revision);
      } else {
        keyIndex = this.index.put(key, entry.revision, found);
      }
      if (keyIndex === undefined) {
        throw new Error('mvcc: a restored tombstone of a key that is not live');
      }
      if (entry.tombstone) this.history.tombstone(entry.revision, keyIndex);
      else this.history.put(entry.revision, keyIndex, entry.kv.value, entry.kv.lease);
    }
    this.#current = state.revision;
    this.#compacted = state.compactRevision;
    // etcd keeps its compaction hashes in memory only: a restored store has none.
    this.#compactionHashes = [];
  }

  /**
   * The changes of `revision`, in op order. Revisions from the compaction revision on keep every
   * change; revision 1 (the empty store) has none.
   */
  changesAt(revision: number): CommittedRevision {
    if (revision > this.#current) throw new EtcdServerError('FUTURE_REVISION');
    if (revision < this.#compacted) throw new EtcdServerError('COMPACTED');
    return { revision, events: this.history.eventsAt(revision) };
  }

  /** Hands `visitor` the changes of `revision`, in op order, as changesAt would list them. */
  visitChangesAt(revision: number, visitor: ChangeVisitor): void {
    if (revision > this.#current) throw new EtcdServerError('FUTURE_REVISION');
    if (revision < this.#compacted) throw new EtcdServerError('COMPACTED');
    this.history.visitChangesAt(revision, visitor);
  }

  /**
   * The value `key` had just before `revision` (a watch event's prev_kv), or undefined when it
   * did not exist or that history is compacted.
   */
  previousValue(key: Uint8Array, revision: number): KeyValue | undefined {
    if (revision - 1 < this.#compacted || revision - 1 < 1) return undefined;
    return this.range({ key }, { revision: revision - 1 }).kvs[0];
  }

  /**
   * Logically compacts history at `revision`: reads below it fail from now on, and only the
   * latest change at or below it of each key is kept. Compacting at or below the last compaction
   * is an error (compacted), as is compacting a future revision; the current revision is fine.
   */
  compact(revision: number): void {
    if (revision <= this.#compacted) throw new EtcdServerError('COMPACTED');
    if (revision > this.#current) throw new EtcdServerError('FUTURE_REVISION');
    this.#keepCompactionHash(revision);
    this.#compacted = revision;
    const dropped: { main: number; sub: number }[] = [];
    this.index.compact(revision, (dropRevision) => dropped.push(dropRevision));
    this.history.remove(dropped);
    for (const listener of this.#compactionListeners) {
      try {
        listener(revision);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }

  /**
   * The hash etcd 3.5+ took when it compacted at `revision` (of the history from the previous
   * compaction up to it), which its HashKV answers for that revision instead of hashing again
   * (hashStorage.HashByRev), even when `revision` is 0 after a compaction at 0; undefined when no
   * kept compaction was at `revision`. etcd keeps the last 10.
   */
  compactionHash(revision: number): KvHash | undefined {
    const kept = this.#compactionHashes.find((hash) => hash.hashRevision === revision);
    return kept === undefined ? undefined : { ...kept, revision: this.#current };
  }

  #keepCompactionHash(revision: number): void {
    // Revision 0 hashes nothing: no change is at or below it.
    const hash = revision === 0 ? new HistoryHasher().digest() : this.hashKV(revision).hash;
    this.#compactionHashes.push({ hash, compactRevision: this.#compacted, hashRevision: revision });
    if (this.#compactionHashes.length > KEPT_COMPACTION_HASHES) this.#compactionHashes.shift();
  }

  /**
   * Hash of the history kept at or below `revision` (0 for the current one), as etcd computes it,
   * so that two stores with equal histories, or this store and a real etcd, agree.
   */
  hashKV(revision: number): KvHash {
    const compactRevision = this.#compacted;
    if (revision > 0 && revision < compactRevision) throw new EtcdServerError('COMPACTED');
    if (revision > 0 && revision > this.#current) throw new EtcdServerError('FUTURE_REVISION');
    const hashRevision = revision === 0 ? this.#current : revision;
    const hasher = new HistoryHasher();
    // etcd keeps a change at or below the compaction revision in the hash only if it is still the
    // visible value of its key at the hashed revision, unless no key is live then at all.
    let anyLive: boolean | undefined;
    this.history.visitUpTo(hashRevision, {
      change: (_key, sub, tombstone, kv) => {
        const main = kv.modRevision;
        if (main <= compactRevision) {
          if (tombstone && main === compactRevision) return;
          anyLive ??=
            this.index.count({ key: new Uint8Array(0), end: new Uint8Array(0) }, hashRevision) > 0;
          const visible = this.index.get(kv.key, hashRevision)?.modified;
          const isVisible = visible !== undefined && visible.main === main && visible.sub === sub;
          if (anyLive && !isVisible) return;
        }
        hasher.add(sub, tombstone, kv);
      },
    });
    return { hash: hasher.digest(), compactRevision, hashRevision, revision: this.#current };
  }
}
