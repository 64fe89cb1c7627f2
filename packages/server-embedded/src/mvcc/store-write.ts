// One write request against the store (etcd's storeTxnWrite). Changes are applied to the index
// and history at once, at revision begin+1 with increasing sub revisions, so reads inside the same
// request see them; the store's current revision moves only when the write ends.
import { EMPTY_BYTES } from '../bytes.js';
import type { ByteSlab } from './byte-slab.js';
import type { RevisionHistory } from './history.js';
import type { KeyIndexTree, KeyRange } from './index.js';
import type { Lessor } from './lessor.js';
import type { RangeOptions, RangeResult, ReadView } from './read-view.js';
import type { CommittedRevision, KeyValue, MvccEvent } from './types.js';

/** What a write changes: the MvccStore, named by its parts so neither file imports the other. */
export interface WritableStore {
  readonly compactRevision: number;
  readonly index: KeyIndexTree;
  readonly history: RevisionHistory;
  readonly lessor: Lessor | undefined;
  /** Where the store keeps its copies of keys (the history keeps values). */
  readonly keyBytes: ByteSlab;
  rangeAt(current: number, range: KeyRange, options?: RangeOptions): RangeResult;
  commit(write: StoreWrite, events: readonly MvccEvent[]): CommittedRevision | undefined;
}

/** An open write: reads see its own changes; `end()` commits them as one revision. */
export class StoreWrite implements ReadView {
  /** The store's revision when the write began; its changes get `beginRevision + 1`. */
  readonly beginRevision: number;
  readonly #store: WritableStore;
  readonly #events: MvccEvent[] = [];
  #ended = false;

  constructor(store: WritableStore, beginRevision: number) {
    this.#store = store;
    this.beginRevision = beginRevision;
  }

  /** The revision reads in this write see: the next one once something changed. */
  get revision(): number {
    return this.#events.length > 0 ? this.beginRevision + 1 : this.beginRevision;
  }

  get compactRevision(): number {
    return this.#store.compactRevision;
  }

  /** The changes made so far, in op order. */
  get changes(): readonly MvccEvent[] {
    return this.#events;
  }

  range(range: KeyRange, options?: RangeOptions): RangeResult {
    this.#assertOpen();
    return this.#store.rangeAt(this.revision, range, options);
  }

  /** Puts `value` at `key` with `lease` (0n for none). Returns the revision of the change. */
  put(key: Uint8Array, value: Uint8Array, lease: bigint): number {
    this.#assertOpen();
    const main = this.beginRevision + 1;
    const revision = { main, sub: this.#events.length };
    const found = this.#store.index.find(key);
    const previous = found?.get(main);
    const previousLease =
      previous === undefined ? 0n : this.#store.history.leaseAt(previous.modified);
    // Own copies: request bytes are views into gRPC receive buffers, which must not be retained.
    // A key with history is kept once, by its KeyIndex; the history copies the value.
    const storedKey = found?.key ?? this.#store.keyBytes.copy(key);
    const createRevision = previous === undefined ? main : previous.created.main;
    const version = (previous?.version ?? 0) + 1;
    const keyIndex = this.#store.index.put(storedKey, revision, found);
    const storedValue = this.#store.history.put(revision, keyIndex, value, lease);
    const kv: KeyValue = {
      key: storedKey,
      value: storedValue,
      createRevision,
      modRevision: main,
      version,
      lease,
    };
    this.#events.push({ type: 'put', kv });
    if (previousLease !== lease) {
      if (previousLease !== 0n) this.#store.lessor?.detach(previousLease, storedKey);
      if (lease !== 0n) this.#store.lessor?.attach(lease, storedKey);
    }
    return main;
  }

  /** Deletes every key of `range` that exists; returns how many were deleted. */
  deleteRange(range: KeyRange): number {
    this.#assertOpen();
    const doomed: KeyValue[] = [];
    this.#store.index.forEach(range, this.revision, (_, at) => {
      const kv = this.#store.history.kvAt(at);
      if (kv !== undefined) doomed.push(kv);
      return true;
    });
    const main = this.beginRevision + 1;
    for (const victim of doomed) {
      const revision = { main, sub: this.#events.length };
      const kv: KeyValue = {
        key: victim.key,
        value: EMPTY_BYTES,
        createRevision: 0,
        modRevision: main,
        version: 0,
        lease: 0n,
      };
      const keyIndex = this.#store.index.tombstone(victim.key, revision);
      if (keyIndex !== undefined) this.#store.history.tombstone(revision, keyIndex);
      this.#events.push({ type: 'delete', kv });
      if (victim.lease !== 0n) this.#store.lessor?.detach(victim.lease, victim.key);
    }
    return doomed.length;
  }

  /** Commits the changes as one revision (none if nothing changed) and tells the listeners. */
  end(): CommittedRevision | undefined {
    this.#assertOpen();
    this.#ended = true;
    return this.#store.commit(this, this.#events);
  }

  #assertOpen(): void {
    if (this.#ended) throw new Error('mvcc: the write has ended');
  }
}
