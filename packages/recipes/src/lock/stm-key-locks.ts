// The locks STM runs take on keys they keep conflicting on (stm/contention.ts): one queue per key
// in the layout of Go's Mutex, joined for every key in ONE txn and left by the commit itself, so a
// turn costs the commit's round trip, not a lock and an unlock per key. The queues and keys are
// watched live, the watches kept between a process's runs.

import {
  AbortedError,
  type AnyOpResponse,
  type Compare,
  cmp,
  type DeleteOp,
  op,
  type RangeOp,
  type WatchBatch,
  type Watcher,
} from '@etcdkit/client';
import { KeyedSlot, raceAbort, Slot } from '@etcdkit/client/internal';
import { recipeName } from '../recipe-name.js';
import type { Session } from '../session/session.js';
import type { StmKeyLocks, StmKeysHeld, StmSeenKey } from '../stm/contention.js';
import { type HeldKeys, StmQueue } from '../stm/local-queue.js';

/** The default prefix of {@link stmKeyLocks}. */
export const DEFAULT_STM_LOCK_PREFIX = 'stm-lock';

/**
 * Locks on STM keys for `runStm`'s `contention` option. The lock of key K is the {@link Mutex}
 * named `<prefix>/<K in lowercase hex>`: a run queues with `<name>/<lease id in hex>` on
 * `session`'s lease (hex, so no key's lock name is a prefix of another's), and the oldest key by
 * create revision holds it, as Go's `concurrency.NewMutex(s, prefix+"/"+hex.EncodeToString(K))`
 * (so a Go Mutex on one of these names takes its turn among the runs).
 *
 * A run joins the queues of all its keys in one txn, so every key orders the runs alike (no two
 * wait for each other); a program that takes several of these names one at a time, as
 * {@link MultiLock} does, could wait on a run that waits on it: leave these names to runStm. The
 * run's commit applies only while it is first in every queue and deletes its queue keys, so taking
 * the turn and releasing it ride on the commit. Waiting runs watch the keys too and start their
 * turn from the values the holder's commit left, without a read. The locks only order the runs:
 * one lost meanwhile (the session's lease expired) costs fairness, never correctness, since every
 * commit's compares still decide.
 */
export function stmKeyLocks(
  session: Session,
  prefix: string = DEFAULT_STM_LOCK_PREFIX,
): StmKeyLocks {
  const checked = recipeName('stmKeyLocks', 'prefix', prefix);
  // A Mutex named N queues its holder and waiters under N + '/'.
  const queueOf = (key: Uint8Array) => `${checked}/${Buffer.from(key).toString('hex')}/`;
  return {
    watched: (key) => session.slots.get(KEY_WATCHES).get(queueOf(key))?.latest,
    free: (keys) => keys.map((key) => cmp.missing({ prefix: queueOf(key) })),
    queued: (keys) => keys.map((key) => op.range({ prefix: queueOf(key), countOnly: true })),
    async lock(keys, signal) {
      // The session has one queue key per name: runs of this process on a key take turns first.
      const local = await localQueueOf(session, checked).take(keys, [], signal);
      const turn = new KeysTurn(
        session,
        keys.map((key) => ({ key, queue: queueOf(key) })),
        local,
      );
      try {
        await turn.join(signal);
        await turn.wait(signal);
      } catch (error) {
        await turn.release();
        throw error;
      }
      return turn;
    },
  };
}

const LOCAL_QUEUES = new KeyedSlot(() => new StmQueue());

/** The in-process turns on the queue keys of `session` under `prefix`. */
function localQueueOf(session: Session, prefix: string): StmQueue {
  return session.slots.keyed(LOCAL_QUEUES, prefix);
}

/** One key of a run: the STM key, and the queue of its lock. */
interface KeyQueue {
  readonly key: Uint8Array;
  /** The lock's queue prefix, `<name>/`. */
  readonly queue: string;
}

/** A key's place in its queue. */
interface Place {
  readonly queueKey: string;
  /** The create revision of this run's queue key. */
  createRevision: bigint;
  /** Queue keys ahead of this run's, by name. */
  readonly ahead: Set<string>;
}

/** A run's places in the queues of its keys, from the join to the commit that leaves them. */
class KeysTurn implements StmKeysHeld {
  readonly #session: Session;
  readonly #keys: readonly KeyQueue[];
  readonly #local: HeldKeys;
  readonly #places: Place[];
  readonly #watches: KeyWatches[] = [];
  // Batches that came before the join's reads were known: applied once they are.
  #early: Array<{ readonly index: number; readonly batch: WatchBatch }> | undefined = [];
  #joined = 0n;
  #seenRevision = 0n;
  readonly #seen = new Map<number, StmSeenKey>();
  // The revision each key's value is known at: its watch delivered every change up to there.
  readonly #known: bigint[];
  // The revision of the last queue delete that took a run from ahead of this one: the turn's
  // start, whose writes the keys must show before the turn commits.
  #turnAt = 0n;
  #lost = false;
  #ended = false;
  #waited = false;
  #onFirst: (() => void) | undefined;
  // Why a watch this turn relies on ended (the client closed, the watch failed for good).
  #failure: { readonly error: unknown } | undefined;
  #onFailure: ((error: unknown) => void) | undefined;

  constructor(session: Session, keys: readonly KeyQueue[], local: HeldKeys) {
    this.#session = session;
    this.#keys = keys;
    this.#local = local;
    const lease = session.leaseId.toString(16);
    this.#places = keys.map(({ queue }) => ({
      queueKey: `${queue}${lease}`,
      createRevision: 0n,
      ahead: new Set(),
    }));
    this.#known = keys.map(() => 0n);
  }

  get waited(): boolean {
    return this.#waited;
  }

  get seen(): { readonly revision: bigint; readonly keys: readonly StmSeenKey[] } {
    return { revision: this.#seenRevision, keys: [...this.#seen.values()] };
  }

  /**
   * Watches the queues and the keys from now, then joins every queue and reads every key in one
   * txn. Watching first, live: a watch from a past revision waits for etcd's catch-up loop (up to
   * 100 ms a wakeup), and the join's reads are at a revision the watches already cover.
   */
  async join(signal: AbortSignal | undefined): Promise<void> {
    const { etcd, leaseId } = this.#session;
    const count = this.#keys.length;
    this.#keys.forEach(({ key, queue }, index) => {
      const watches = keyWatchesOf(this.#session, key, queue);
      watches.attach(
        (onQueue, batch) => this.#onBatch(onQueue ? index : count + index, batch),
        (error) => this.#fail(error),
      );
      this.#watches.push(watches);
    });
    await abortable(Promise.all(this.#watches.map((watches) => watches.ready)), signal);
    const { places } = this;
    const result = await etcd
      .txn()
      .then(
        ...this.#keys.map(({ queue }) => op.range({ prefix: queue, keysOnly: true })),
        ...places.map(({ queueKey }) => op.put(queueKey, '', { lease: leaseId })),
        ...this.#keys.map(({ key }) => op.get(key)),
      )
      .commit({ signal });
    const joined = result.header.revision;
    this.#joined = joined;
    this.#seenRevision = joined;
    places.forEach((place, i) => {
      const queue = result.responses[i];
      const kvs = queue?.kind === 'range' ? queue.kvs : [];
      // A key this session left behind keeps its place (a put keeps the create revision).
      const mine = kvs.find((kv) => kv.keyText() === place.queueKey);
      place.createRevision = mine?.createRevision ?? joined;
      for (const kv of kvs) {
        if (kv.createRevision < place.createRevision) place.ahead.add(kv.keyText());
      }
      const read = result.responses[2 * count + i];
      const kv = read?.kind === 'range' ? read.kvs[0] : undefined;
      const seen = { key: this.#keys[i]?.key as Uint8Array, kv };
      this.#seen.set(i, seen);
      this.#watches[i]?.learn(seen, joined);
      this.#known[i] = joined;
    });
    this.#waited = places.some(({ ahead }) => ahead.size > 0);
    const early = this.#early ?? [];
    this.#early = undefined;
    for (const { index, batch } of early) this.#apply(index, batch);
  }

  get places(): readonly Place[] {
    return this.#places;
  }

  /**
   * Resolves once this run is first in every queue and {@link seen} shows every key as the runs
   * ahead left it. etcd orders events per watcher, not across watchers: the queue delete that
   * starts the turn at revision R can come before the key's own event at R, and a key the run
   * ahead left alone has no event at R at all. A key not yet known at R is read, so a turn's first
   * commit never runs on a value older than the turn.
   */
  async wait(signal: AbortSignal | undefined): Promise<void> {
    await this.#first(signal);
    const turnAt = this.#turnAt;
    const behind = this.#keys.flatMap((_, i) => ((this.#known[i] ?? 0n) < turnAt ? [i] : []));
    if (behind.length === 0 || this.#lost) return;
    const result = await this.#session.etcd
      .txn()
      .then(...behind.map((i) => op.get(this.#keys[i]?.key as Uint8Array)))
      .commit({ signal });
    const at = result.header.revision;
    behind.forEach((i, n) => {
      // An event newer than the read may have landed meanwhile.
      if ((this.#known[i] ?? 0n) >= at) return;
      const read = result.responses[n];
      const kv = read?.kind === 'range' ? read.kvs[0] : undefined;
      const seen = { key: this.#keys[i]?.key as Uint8Array, kv };
      this.#seen.set(i, seen);
      this.#watches[i]?.learn(seen, at);
      this.#known[i] = at;
    });
    if (at > this.#seenRevision) this.#seenRevision = at;
  }

  /** Resolves once this run is first in every queue. */
  #first(signal: AbortSignal | undefined): Promise<void> {
    if (this.#isFirst()) return Promise.resolve();
    if (this.#failure) return Promise.reject(this.#failure.error);
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.#onFirst = undefined;
        this.#onFailure = undefined;
        reject(new AbortedError({ cause: signal?.reason }));
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#onFailure = (error) => {
        signal?.removeEventListener('abort', onAbort);
        this.#onFirst = undefined;
        reject(error);
      };
      this.#onFirst = () => {
        signal?.removeEventListener('abort', onAbort);
        this.#onFailure = undefined;
        // Let the rest of the holder's batch (its writes, on the key watches) land first.
        setImmediate(resolve);
      };
    });
  }

  first(): Compare[] {
    if (this.#lost) return [];
    // Every key of the queue is this run's or newer: Go's holder is the oldest key.
    return this.#places.map(({ createRevision }, i) =>
      cmp.createRevision({ prefix: this.#keys[i]?.queue as string }, '>', createRevision - 1n),
    );
  }

  releasing(): DeleteOp[] {
    if (this.#lost) return [];
    return this.#places.map(({ queueKey }) => op.delete(queueKey));
  }

  ahead(): RangeOp[] {
    return this.#keys.map(({ queue }) => op.range({ prefix: queue, keysOnly: true }));
  }

  async turn(responses: readonly AnyOpResponse[], signal: AbortSignal | undefined): Promise<void> {
    this.#places.forEach((place, i) => {
      const queue = responses[i];
      if (queue?.kind !== 'range') return;
      const mine = queue.kvs.find((kv) => kv.keyText() === place.queueKey);
      // The queue key vanished (lease expired): go on unordered; the compares still decide.
      if (mine === undefined || mine.createRevision !== place.createRevision) this.#lost = true;
      place.ahead.clear();
      for (const kv of queue.kvs) {
        if (kv.createRevision < place.createRevision) place.ahead.add(kv.keyText());
      }
    });
    if (this.#lost) return;
    await this.wait(signal);
  }

  committed(): void {
    this.#end();
  }

  async release(): Promise<void> {
    if (this.#ended) return;
    this.#end();
    if (this.#joined === 0n || this.#lost) return;
    // Only this incarnation: never a queue key this session put later.
    const mine = this.#places.map(({ queueKey, createRevision }) =>
      cmp.createRevision(queueKey, '==', createRevision),
    );
    await this.#session.etcd
      .txn()
      .if(...mine)
      .then(...this.#places.map(({ queueKey }) => op.delete(queueKey)))
      .commit()
      .catch(() => {
        // Not deleted: the key goes with the session's lease at the latest.
      });
  }

  #end(): void {
    this.#ended = true;
    this.#onFirst = undefined;
    for (const watches of this.#watches) watches.detach();
    this.#local.release();
  }

  #fail(error: unknown): void {
    this.#failure ??= { error };
    const onFailure = this.#onFailure;
    this.#onFailure = undefined;
    onFailure?.(error);
  }

  #isFirst(): boolean {
    return this.#lost || this.#places.every(({ ahead }) => ahead.size === 0);
  }

  #onBatch(index: number, batch: WatchBatch): void {
    if (this.#early) this.#early.push({ index, batch });
    else this.#apply(index, batch);
  }

  /** A queue's deletes take runs out of the way; a key's changes update what the run has seen. */
  #apply(index: number, batch: WatchBatch): void {
    // The join's reads already show the store at its revision.
    if (batch.revision <= this.#joined) return;
    const count = this.#keys.length;
    if (index < count) {
      const { ahead } = this.#places[index] as Place;
      for (const event of batch.events) {
        if (ahead.delete(event.kv.keyText()) && batch.revision > this.#turnAt) {
          this.#turnAt = batch.revision;
        }
      }
      if (this.#isFirst()) this.#onFirst?.();
      return;
    }
    const i = index - count;
    const key = this.#keys[i]?.key as Uint8Array;
    for (const event of batch.events) {
      this.#seen.set(i, { key, kv: event.type === 'put' ? event.kv : undefined });
    }
    if (batch.revision > (this.#known[i] ?? 0n)) this.#known[i] = batch.revision;
    if (batch.revision > this.#seenRevision) this.#seenRevision = batch.revision;
  }
}

/**
 * How long the watches of a key stay open after the last run of this process queued on it left:
 * the next run on the key starts waiting at once, and the stream is spared a create and a cancel
 * per run.
 */
const KEEP_WATCHING_MS = 2_000;

/**
 * The watches of one key and of its queue, shared by the runs of a session that queue on it (one at
 * a time: they take turns in the session's local queue first), and kept open a while after.
 */
class KeyWatches {
  readonly ready: Promise<unknown>;
  // The key as the newest event or read showed it, and that revision: what a probe reads.
  #latest: StmSeenKey | undefined;
  #latestAt = 0n;
  #listener: ((onQueue: boolean, batch: WatchBatch) => void) | undefined;
  #onEnd: ((error: unknown) => void) | undefined;
  #error: unknown;
  #idle: NodeJS.Timeout | undefined;
  readonly #watchers: readonly Watcher[];

  constructor(
    session: Session,
    key: Uint8Array,
    queue: string,
    readonly forget: () => void,
  ) {
    const { etcd } = session;
    const queueWatch = etcd.watch({ prefix: queue, filters: ['noPut'] });
    queueWatch.on('batch', (batch) => this.#listener?.(true, batch));
    const keyWatch = etcd.watch({ key });
    keyWatch.on('batch', (batch) => {
      const event = batch.events.at(-1);
      if (event)
        this.learn({ key, kv: event.type === 'put' ? event.kv : undefined }, batch.revision);
      this.#listener?.(false, batch);
    });
    this.#watchers = [queueWatch, keyWatch];
    // A watcher that ended (client closed, compaction...) is not reused.
    for (const watcher of this.#watchers) {
      watcher.once('error', (error) => {
        this.#error = error;
      });
      watcher.once('end', () => {
        const onEnd = this.#onEnd;
        this.close();
        onEnd?.(this.#error ?? new Error(`the watch of STM key queue ${queue} ended`));
      });
    }
    this.ready = Promise.all(this.#watchers.map((watcher) => watcher.ready()));
    // A failed creation is the joining run's to report.
    this.ready.catch(() => {});
  }

  /** The key as last seen, while the watches are open. */
  get latest(): StmSeenKey | undefined {
    return this.#latest;
  }

  /** Records `seen`, the key at `revision`, unless something newer is known. */
  learn(seen: StmSeenKey, revision: bigint): void {
    if (revision < this.#latestAt) return;
    this.#latest = seen;
    this.#latestAt = revision;
  }

  /** Gives the watches' batches to `listener`, and their end, while attached, to `onEnd`. */
  attach(
    listener: (onQueue: boolean, batch: WatchBatch) => void,
    onEnd: (error: unknown) => void,
  ): void {
    clearTimeout(this.#idle);
    this.#listener = listener;
    this.#onEnd = onEnd;
  }

  detach(): void {
    this.#listener = undefined;
    this.#onEnd = undefined;
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => this.close(), KEEP_WATCHING_MS);
    this.#idle.unref();
  }

  close(): void {
    clearTimeout(this.#idle);
    this.forget();
    for (const watcher of this.#watchers) void watcher.close();
  }
}

const KEY_WATCHES = new Slot(() => new Map<string, KeyWatches>());

/** The watches of `key` and its `queue` for `session`'s runs: open ones, or new. */
function keyWatchesOf(session: Session, key: Uint8Array, queue: string): KeyWatches {
  const byQueue = session.slots.get(KEY_WATCHES);
  const open = byQueue.get(queue);
  if (open) return open;
  const watches: KeyWatches = new KeyWatches(session, key, queue, () => {
    if (byQueue.get(queue) === watches) byQueue.delete(queue);
  });
  byQueue.set(queue, watches);
  return watches;
}

/** `promise`, or AbortedError when `signal` aborts first (the client's raceAbort, in our error). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  return raceAbort(promise, signal).catch((error: unknown) => {
    throw signal.aborted && error === signal.reason
      ? new AbortedError({ cause: signal.reason })
      : error;
  });
}
