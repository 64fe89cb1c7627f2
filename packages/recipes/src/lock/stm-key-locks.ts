// The locks STM runs take on keys they keep conflicting on (stm/contention.ts): one queue per key
// in the layout of Go's Mutex, joined for every key in ONE txn and left by the commit itself, so a
// turn costs the commit's round trip, not a lock and an unlock per key. The queues are watched
// live (one watch per session, kept between its runs); the keys are not: a process waiting for
// its turn is not woken by every commit of the others, and reads the keys when its turn comes.

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
import type { StmKeyLocks, StmKeysHeld, StmKeysState, StmSeenKey } from '../stm/contention.js';
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
 * the turn and releasing it ride on the commit. Waiting runs follow the queues through one watch
 * of the deletes under `prefix` per session and read their keys when their turn comes; a turn
 * passes in-process to the next run of the session waiting for exactly its keys (a group turn,
 * up to 8 runs), which starts from what the commit left. The locks only
 * order the runs:
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
    watched: (key) => session.slots.get(KEYS_SEEN).get(queueOf(key))?.latest,
    free: (keys) => keys.map((key) => cmp.missing({ prefix: queueOf(key) })),
    queued: (keys) => keys.map((key) => op.range({ prefix: queueOf(key), countOnly: true })),
    async lock(keys, signal) {
      // The session has one queue key per name: runs of this process on a key take turns first.
      const local = await localQueueOf(session, checked).take(keys, [], signal);
      // The local run ahead held the turn on these very keys and passed it on with them.
      if (local.baton) return local.baton.inherit(local);
      const turn = new KeysTurn(
        session,
        keys.map((key) => ({ key, queue: queueOf(key) })),
        local,
        lockWatchOf(session, `${checked}/`),
      );
      try {
        await turn.join(signal);
        await turn.wait(signal);
        turn.began();
      } catch (error) {
        await turn.release();
        throw error;
      }
      return turn;
    },
  };
}

const LOCAL_QUEUES = new KeyedSlot(() => new StmQueue<KeysTurn>());

/**
 * The most runs of a session one turn serves: the runs after the first take it in-process, one
 * commit each, while other processes wait (at most this many commits per process ahead of them).
 */
export const MAX_GROUP_TURN = 8;

/** The in-process turns on the queue keys of `session` under `prefix`. */
function localQueueOf(session: Session, prefix: string): StmQueue<KeysTurn> {
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

/**
 * A turn's places in the queues of its keys, from the join to the commit that leaves them. The
 * turn is a group's: a commit that leaves a run of the same session waiting for exactly these keys
 * keeps the places and passes the turn on to it, up to {@link began}'s bound.
 */
class KeysTurn implements StmKeysHeld {
  readonly #session: Session;
  readonly #keys: readonly KeyQueue[];
  #local: HeldKeys<KeysTurn>;
  // The runs this turn served (the current one included), and how many it may serve.
  #served = 1;
  #limit = 1;
  // The last releasing() kept the places for a local run.
  #passing = false;
  readonly #places: Place[];
  readonly #lockWatch: LockWatch;
  readonly #memories: KeySeen[];
  // Batches that came before the join's reads were known: applied once they are.
  #early: WatchBatch[] | undefined = [];
  #joined = 0n;
  #seenRevision = 0n;
  readonly #seen = new Map<number, StmSeenKey>();
  // The revision each key's value is known at (read, or left by this turn's commit).
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

  constructor(
    session: Session,
    keys: readonly KeyQueue[],
    local: HeldKeys<KeysTurn>,
    lockWatch: LockWatch,
  ) {
    this.#session = session;
    this.#keys = keys;
    this.#local = local;
    this.#lockWatch = lockWatch;
    const lease = session.leaseId.toString(16);
    this.#places = keys.map(({ queue }) => ({
      queueKey: `${queue}${lease}`,
      createRevision: 0n,
      ahead: new Set(),
    }));
    this.#known = keys.map(() => 0n);
    this.#memories = keys.map(({ queue }) => keySeenOf(session, queue));
  }

  get waited(): boolean {
    return this.#waited;
  }

  get seen(): { readonly revision: bigint; readonly keys: readonly StmSeenKey[] } {
    return { revision: this.#seenRevision, keys: [...this.#seen.values()] };
  }

  /**
   * Watches the queues (one watch of the lock prefix) from now, then joins every queue and reads
   * every key in one txn. Watching first, live: a watch from a past revision waits for etcd's
   * catch-up loop (up to 100 ms a wakeup), and the join's reads are at a revision the watch
   * already covers. The keys are not watched: waiting, the run is not woken by the commits ahead.
   */
  async join(signal: AbortSignal | undefined): Promise<void> {
    const { etcd, leaseId } = this.#session;
    const onEnd = (error: unknown) => this.#fail(error);
    this.#lockWatch.attach(this.#onQueues, onEnd);
    await abortable(this.#lockWatch.ready, signal);
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
      const read = result.responses[2 * places.length + i];
      const kv = read?.kind === 'range' ? read.kvs[0] : undefined;
      const seen = { key: this.#keys[i]?.key as Uint8Array, kv };
      this.#seen.set(i, seen);
      this.#memories[i]?.learn(seen, joined);
      this.#known[i] = joined;
    });
    this.#waited = places.some(({ ahead }) => ahead.size > 0);
    const early = this.#early ?? [];
    this.#early = undefined;
    for (const batch of early) this.#apply(batch);
  }

  get places(): readonly Place[] {
    return this.#places;
  }

  /**
   * Resolves once this run is first in every queue and {@link seen} shows every key as the runs
   * ahead left it: a key not known at the revision R of the queue delete that started the turn
   * (every key, after runs of other processes) is read, in one txn, so a turn's first commit
   * never runs on a value older than the turn.
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
      this.#memories[i]?.learn(seen, at);
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
        resolve();
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

  /**
   * The turn came: it serves the local runs waiting for these keys now, at most
   * {@link MAX_GROUP_TURN} runs in all, so the processes behind wait a bounded number of commits.
   */
  began(): void {
    this.#limit = Math.min(MAX_GROUP_TURN, 1 + this.#local.alike());
  }

  releasing(): DeleteOp[] {
    this.#passing = false;
    if (this.#lost) return [];
    this.#passing = this.#served < this.#limit && this.#local.alike() > 0;
    if (this.#passing) return [];
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

  committed(after?: StmKeysState): void | Promise<void> {
    if (!this.#passing) return this.#end();
    this.#passing = false;
    if (after) this.#learn(after);
    // The local run goes on from `after`: no join, no wait, no read.
    if (this.#local.passOn(this, undefined)) return;
    // The run it was kept for left meanwhile (aborted): leave the queues.
    return this.release();
  }

  /** The turn, passed on by the local run before with `local`: this run's now. */
  inherit(local: HeldKeys<KeysTurn>): KeysTurn {
    this.#local = local;
    this.#served++;
    // Runs of this session queued for the keys: the next one goes straight to the locks.
    this.#waited = true;
    return this;
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

  /** Takes what a commit of this turn left as the keys' newest values. */
  #learn(after: StmKeysState): void {
    const byKey = new Map(after.keys.map((seen) => [hexOf(seen.key), seen]));
    this.#keys.forEach(({ key }, i) => {
      const seen = byKey.get(hexOf(key));
      if (seen === undefined || (this.#known[i] ?? 0n) > after.revision) return;
      this.#seen.set(i, seen);
      this.#memories[i]?.learn(seen, after.revision);
      this.#known[i] = after.revision;
    });
    if (after.revision > this.#seenRevision) this.#seenRevision = after.revision;
  }

  #end(): void {
    this.#ended = true;
    this.#onFirst = undefined;
    this.#lockWatch.detach(this.#onQueues);
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

  // The queues' deletes, from the one watch of the lock prefix: they take runs out of the way.
  readonly #onQueues = (batch: WatchBatch): void => {
    if (this.#early) this.#early.push(batch);
    else this.#apply(batch);
  };

  #apply(batch: WatchBatch): void {
    // The join's reads already show the store at its revision.
    if (batch.revision <= this.#joined) return;
    for (const event of batch.events) {
      const name = event.kv.keyText();
      for (const { ahead } of this.#places) {
        if (ahead.delete(name) && batch.revision > this.#turnAt) this.#turnAt = batch.revision;
      }
    }
    if (this.#isFirst()) this.#onFirst?.();
  }
}

function hexOf(key: Uint8Array): string {
  return Buffer.from(key).toString('hex');
}

/**
 * How long a watch stays open after the last run of this process that used it left: the next run
 * on the key starts waiting at once, and the stream is spared a create and a cancel per run.
 */
const KEEP_WATCHING_MS = 2_000;

/**
 * One watch shared by the runs of a session that use it, kept open a while after the last one
 * left. Its batches go to every run attached, and so does its end.
 */
class KeptWatch {
  readonly ready: Promise<unknown>;
  readonly #listeners = new Map<(batch: WatchBatch) => void, (error: unknown) => void>();
  #error: unknown;
  #idle: NodeJS.Timeout | undefined;
  readonly #watcher: Watcher;

  constructor(
    watcher: Watcher,
    what: string,
    readonly forget: () => void,
  ) {
    this.#watcher = watcher;
    watcher.on('batch', (batch) => {
      for (const listener of this.#listeners.keys()) listener(batch);
    });
    // A watcher that ended (client closed, compaction...) is not reused.
    watcher.once('error', (error) => {
      this.#error = error;
    });
    watcher.once('end', () => {
      const ends = [...this.#listeners.values()];
      this.close();
      const error = this.#error ?? new Error(`the watch of ${what} ended`);
      for (const onEnd of ends) onEnd(error);
    });
    this.ready = watcher.ready();
    // A failed creation is the joining run's to report.
    this.ready.catch(() => {});
  }

  /** Gives the batches to `listener`, and the end to `onEnd`, until {@link detach}. */
  attach(listener: (batch: WatchBatch) => void, onEnd: (error: unknown) => void): void {
    clearTimeout(this.#idle);
    this.#listeners.set(listener, onEnd);
  }

  detach(listener: (batch: WatchBatch) => void): void {
    this.#listeners.delete(listener);
    if (this.#listeners.size > 0) return;
    clearTimeout(this.#idle);
    this.#idle = setTimeout(() => this.close(), KEEP_WATCHING_MS);
    this.#idle.unref();
  }

  close(): void {
    clearTimeout(this.#idle);
    this.#listeners.clear();
    this.forget();
    void this.#watcher.close();
  }
}

/**
 * A key as the runs of a session last saw it (read when joining or when a turn came, or left by
 * a commit of theirs), for probes: a first attempt only finds its keys with it, never commits it.
 */
class KeySeen {
  #latest: StmSeenKey | undefined;
  #latestAt = 0n;

  get latest(): StmSeenKey | undefined {
    return this.#latest;
  }

  /** Records `seen`, the key at `revision`, unless something newer is known. */
  learn(seen: StmSeenKey, revision: bigint): void {
    if (revision < this.#latestAt) return;
    this.#latest = seen;
    this.#latestAt = revision;
  }
}

// Keys remembered per session: enough for the hot keys of a process, bounded all the same.
const MAX_KEYS_SEEN = 256;
const KEYS_SEEN = new Slot(() => new Map<string, KeySeen>());

/** What `session`'s runs last saw of the key whose lock queues under `queue`. */
function keySeenOf(session: Session, queue: string): KeySeen {
  const byQueue = session.slots.get(KEYS_SEEN);
  const known = byQueue.get(queue) ?? new KeySeen();
  // Most recently used last: the first is the one to forget.
  byQueue.delete(queue);
  byQueue.set(queue, known);
  if (byQueue.size > MAX_KEYS_SEEN) byQueue.delete(byQueue.keys().next().value as string);
  return known;
}

/**
 * The deletes under a lock prefix: every queue's, in one watch per session, so a commit that
 * leaves the queues of several keys is one message to each process waiting, not one per queue.
 */
type LockWatch = KeptWatch;

const LOCK_WATCHES = new Slot(() => new Map<string, LockWatch>());

/** The watch of the queue deletes under `prefix` (with its '/') for `session`: open, or new. */
function lockWatchOf(session: Session, prefix: string): LockWatch {
  const byPrefix = session.slots.get(LOCK_WATCHES);
  const open = byPrefix.get(prefix);
  if (open) return open;
  const watcher = session.etcd.watch({ prefix, filters: ['noPut'] });
  const watch: LockWatch = new KeptWatch(watcher, `STM key queues ${prefix}`, () => {
    if (byPrefix.get(prefix) === watch) byPrefix.delete(prefix);
  });
  byPrefix.set(prefix, watch);
  return watch;
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
