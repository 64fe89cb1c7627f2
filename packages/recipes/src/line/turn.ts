// Waiting for one's turn in a line of keys ordered by create revision (Mutex, Election, RWMutex,
// Semaphore, waitForPredecessors), the one way every waiter waits, compaction or not: a read of the
// keys ahead and, in the same txn, the own key (readAhead); then ONE watch over the range from the
// lowest to the highest of them (TurnWatch), which tells the turn (or the own key's loss first) in
// revision order and is kept as the hold's loss watch once the turn comes (a hold that needed no
// watch gets one of its own key alone, watchLoss); when the watch cannot tell, a read of the line
// again. In a line longer than the read (other waiters' keys may sort between), the key ahead
// and the own key are watched apart (OwnKeyWatch), so other waiters' deletes wake no one.
import {
  AbortedError,
  CompactedError,
  type KeyValue,
  type KV,
  op,
  type ResponseHeader,
  type WatchBatch,
  type Watcher,
} from '@etcdkit/client';
import { Slot } from '@etcdkit/client/internal';
import { SessionExpiredError, STOPPED } from '../errors.js';

/** The recipe's own queue key, watched while waiting so its loss ends the wait at once. */
export interface OwnKey {
  /** The full key. */
  readonly key: string;
  /** Its create revision (the recipe's position in the queue). */
  readonly createRevision: bigint;
  /** A revision at which the key was seen to exist, e.g. the header revision of the acquire txn. */
  readonly seenAt: bigint;
}

/** A read of the queue ahead of a waiter, at one revision. */
export interface LineRead {
  /**
   * The keys ahead of the waiter (created before it), newest first: all of them, or with one
   * slot at least the newest (the only one waited on).
   */
  readonly predecessors: readonly KeyValue[];
  /** True when `predecessors` is every key ahead (the read was not cut short by its limit). */
  readonly complete?: boolean;
  /** Header of the read; the waiter's own key existed at `header.revision`. */
  readonly header: ResponseHeader;
}

/**
 * @internal A waiter: the keys under `prefix` created before `createRevision` are ahead of it, and
 * it holds once fewer than `slots` of them are left.
 */
export interface Waiter {
  readonly prefix: string;
  readonly createRevision: bigint;
  /** Holders admitted at once (1: a mutex). */
  readonly slots: number;
  /** Its own key, checked by every read of the line and watched by the wait when given. */
  readonly ownKey?: OwnKey;
  /** How the own key is watched alone (in a long line); default {@link watchLoss}. */
  readonly lossWatch?: (kv: KV, own: OwnKey) => LossWatch;
  /** How the key ahead is watched in a long line; default {@link watchRangeNow}. */
  readonly aheadWatch?: WatchRange;
  /**
   * How a wait just behind the last key ahead (the read had the whole line) watches the range
   * over that key and its own; default: a watch from the read's revision, and one from now beside
   * it (see {@link TurnWatch}).
   */
  readonly lineWatch?: WatchRange;
}

/** @internal Where the deletes of a watched key go. */
export interface KeyListener {
  batch(batch: WatchBatch): void;
  error(error: unknown): void;
  /**
   * Called first, before any batch, by a watch whose creation is known already: every delete
   * after `revision` is delivered.
   */
  coveredFrom?(revision: bigint): void;
}

/** @internal A listener's share of a watch of one key's deletes. */
export interface KeySubscription {
  /** The revision after which every delete of the key is delivered (the watch's creation). */
  readonly covered: Promise<bigint>;
  close(): void;
}

/** @internal A key range, `end` exclusive. */
export interface KeyRange {
  readonly start: Uint8Array;
  readonly end: Uint8Array;
}

/**
 * @internal Watches the deletes in `range` after `after` for `listener` (the deletes above `after`
 * seen before may be delivered at once).
 */
export type WatchRange = (
  kv: KV,
  range: KeyRange,
  after: bigint,
  listener: KeyListener,
) => KeySubscription;

/** @internal A watch of `range` of its own, from now. */
export function watchRangeNow(
  kv: KV,
  range: KeyRange,
  _after: bigint,
  listener: KeyListener,
): KeySubscription {
  const stop = new AbortController();
  const watcher = kv.watch({
    range: { start: Buffer.from(range.start), end: Buffer.from(range.end) },
    startRevision: 0n,
    filters: ['noPut'],
    signal: stop.signal,
  });
  watcher.on('batch', (batch) => listener.batch(batch));
  watcher.on('error', (error) => listener.error(error));
  return { covered: watcher.ready(), close: () => stop.abort(STOPPED) };
}

/** @internal The turn {@link watchForTurn} found. */
export interface Turn {
  /** The header of the revision the turn came at. */
  readonly header: ResponseHeader;
  /**
   * The watch that saw it, to keep as the own key's loss watch ({@link TurnWatch.onLoss}) or
   * close; undefined when a read found the turn (nothing watches the own key then).
   */
  readonly watch: LossWatch | undefined;
}

/** @internal How the wait of a {@link TurnWatch} ended. */
export type TurnOutcome =
  /** Fewer than `slots` keys ahead (before the own key went): held at that revision. */
  | { readonly held: ResponseHeader }
  /** The own key was deleted first (or by the same txn), at `lostAt`. */
  | { readonly lostAt: bigint }
  /** Keys ahead went and this read found others still ahead: the caller waits for those. */
  | { readonly next: LineRead }
  /** The start revision was compacted: the caller reads the queue again. */
  | { readonly compacted: true };

/**
 * @internal A read of the queue ahead of the waiter, rejecting when the own key is
 * gone: held when fewer than `slots` keys are ahead any more.
 */
export type TurnRecheck = (signal: AbortSignal) => Promise<LineRead>;

/** @internal Where a held key's loss is reported, once the turn came. */
export interface LossListener {
  /** The own key was deleted at `revision`. */
  lost(revision: bigint): void;
  /** The watch failed for good: the key can no longer be watched. */
  failed(error: unknown): void;
}

/** @internal A watch of a held key's loss: tells one listener, stopped by close(). */
export interface LossWatch {
  /** Where the loss goes; a loss seen before is reported at once. */
  onLoss(listener: LossListener): void;
  close(): void;
}

/**
 * @internal Waits for the turn of `waiter`: fewer than `slots` keys left ahead of it. Starts from
 * `first`, a read of the line (with one slot, at least its newest key ahead; with more, every key
 * ahead), read here when not given; then one {@link TurnWatch} over the keys it waits on and the
 * own key. When those go and a read finds others still ahead, a watch over them takes over (from
 * just after the read, which checked the own key); when the watch's start was compacted, the line
 * is read again. Rejects with SessionExpiredError when the own key went first, AbortedError on
 * abort, or the failure of a read or watch.
 */
export async function watchForTurn(
  kv: KV,
  waiter: Waiter,
  first: LineRead | undefined,
  signal: AbortSignal,
): Promise<Turn> {
  const recheck = (stop: AbortSignal) => readAhead(kv, waiter, stop);
  // With more slots only a read of every key ahead can prove the turn.
  const usable = first !== undefined && (waiter.slots === 1 || first.complete === true);
  let read = usable ? first : await recheck(signal);
  let loss: OwnKeyWatch | undefined;
  try {
    for (;;) {
      if (read.predecessors.length < waiter.slots) {
        loss?.close();
        return { header: read.header, watch: undefined };
      }
      // A longer line (the read was cut short): watch the one key ahead alone, and the own key apart.
      if (waiter.slots === 1 && waiter.ownKey !== undefined && read.complete !== true) {
        const own = { ...waiter.ownKey, seenAt: read.header.revision };
        loss ??= new OwnKeyWatch((waiter.lossWatch ?? watchLoss)(kv, own), own.key);
        const turnWaiter = { ...waiter, ownKey: undefined, lossWatch: undefined };
        const watch = new TurnWatch(kv, turnWaiter, read, recheck, signal);
        const outcome = await loss.during(watch);
        if ('held' in outcome) {
          closeSoon(kv, () => watch.close());
          const held = loss.holding(outcome.held);
          loss = undefined;
          return held;
        }
        watch.close();
        read = 'next' in outcome ? outcome.next : await recheck(signal);
        continue;
      }
      loss?.close();
      loss = undefined;
      const watch = new TurnWatch(kv, waiter, read, recheck, signal);
      const outcome = await watch.turn;
      if ('held' in outcome) return { header: outcome.held, watch };
      watch.close();
      if ('lostAt' in outcome) throw ownKeyDeleted(waiter.ownKey?.key, outcome.lostAt);
      read = 'next' in outcome ? outcome.next : await recheck(signal);
    }
  } catch (error) {
    loss?.close();
    throw error;
  }
}

/**
 * The own key's loss watch, opened when a waiter waits in a long line: its turn watch then covers
 * the key ahead alone. A range from the key ahead to the own key (lease ids, not queue order) holds
 * a third of the other waiters' keys on average, and every delete in it woke this waiter's process:
 * about five wakeups per handoff at 32 contenders instead of one. The read that confirms the turn
 * checks the own key, so the two watches need not be in order.
 */
class OwnKeyWatch {
  readonly #watch: LossWatch;
  /** The loss seen while waiting: the wait fails with it. */
  #failure: unknown;
  #fail: ((error: unknown) => void) | undefined;

  constructor(watch: LossWatch, key: string) {
    this.#watch = watch;
    this.#watch.onLoss({
      lost: (revision) => this.#lost(ownKeyDeleted(key, revision)),
      failed: (error) => this.#lost(error),
    });
  }

  #lost(error: unknown): void {
    this.#failure ??= error;
    this.#fail?.(error);
  }

  /** The outcome of `turn`, unless the own key is lost first (the turn watch is closed then). */
  async during(turn: TurnWatch): Promise<TurnOutcome> {
    if (this.#failure !== undefined) {
      // Lost before the wait began (a kept watch saw the delete): nothing awaits this turn, so
      // its rejection on close must not surface as an unhandled one.
      turn.turn.catch(() => undefined);
      turn.close();
      throw this.#failure;
    }
    const lost = new Promise<never>((_, reject) => {
      this.#fail = reject;
    });
    try {
      return await Promise.race([turn.turn, lost]);
    } catch (error) {
      turn.close();
      throw error;
    } finally {
      this.#fail = undefined;
    }
  }

  /** The turn at `header`: the own key's watch goes on as the hold's loss watch. */
  holding(header: ResponseHeader): Turn {
    // Deleted in a batch read with the turn's answer: lost, not held.
    if (this.#failure !== undefined) throw this.#failure;
    return { header, watch: this.#watch };
  }

  close(): void {
    this.#watch.close();
  }
}

const neverAborted = new AbortController().signal;
const noRecheck: TurnRecheck = () => Promise.reject(new Error('a held key has no turn to read'));

/**
 * @internal The loss watch of `own`, a key that holds without a {@link TurnWatch} (found at the
 * head by the txn that queued it, or its turn found by a read): the own key alone, from just after
 * `own.seenAt`; pass the loss on with {@link TurnWatch.onLoss}, stop it with close().
 */
export function watchLoss(kv: KV, own: OwnKey): TurnWatch {
  const waiter = { prefix: own.key, createRevision: own.createRevision, slots: 1, ownKey: own };
  return new TurnWatch(kv, waiter, undefined, noRecheck, neverAborted);
}

/**
 * @internal Reads the keys ahead of `waiter` (with one slot only the newest) and, with its
 * `ownKey`, checks in the same txn that the own key is still the incarnation that queued: one
 * round trip. Rejects with SessionExpiredError when the own key is gone.
 */
export async function readAhead(kv: KV, waiter: Waiter, signal: AbortSignal): Promise<LineRead> {
  // A helper watch closed meanwhile: its cancel goes out with the read.
  closeNow(kv);
  const request = {
    prefix: waiter.prefix,
    maxCreateRevision: waiter.createRevision - 1n,
    keysOnly: true,
    sort: { target: 'create', order: 'descend' },
    ...(waiter.slots === 1 ? { limit: 1 } : {}),
  } as const;
  const own = waiter.ownKey;
  if (own === undefined) {
    const read = await kv.range({ ...request, signal });
    return { predecessors: read.kvs, complete: !read.more, header: read.header };
  }
  const result = await kv
    .txn()
    .then(op.range(request), op.get(own.key, { keysOnly: true }))
    .commit({ signal });
  const [ahead, mine] = result.responses;
  if (mine?.kvs[0]?.createRevision !== own.createRevision) {
    throw new SessionExpiredError(
      `${own.key} is gone: the session's lease expired or the key was deleted`,
      { key: own.key },
    );
  }
  return {
    predecessors: ahead?.kvs ?? [],
    complete: ahead !== undefined && !ahead.more,
    header: result.header,
  };
}

/** @internal The failure of a wait whose own key was deleted at `revision`. */
export function ownKeyDeleted(key: string | undefined, revision: bigint): SessionExpiredError {
  return new SessionExpiredError(
    `${String(key)} was deleted at revision ${revision} while waiting (its lease expired or was revoked, or it was deleted)`,
    { key },
  );
}

const ZERO = Buffer.from([0]);

/**
 * @internal Watches, for deletes, the key range from the lowest to the highest of the own key and
 * the keys ahead it waits on (with one slot the newest; with more every key ahead, of which enough
 * must go), from just after the revision the read found them at. A watcher's events come in
 * revision order, so when the read had every key ahead (`exact`) the delete that leaves fewer than
 * `slots` of them, seen before any delete of the own key, is the turn; otherwise `recheck` reads
 * the queue then, and fewer than `slots` keys ahead is the turn, more are the next to wait for.
 * Other keys in the range (other waiters) are ignored. After the turn the same watch reports the
 * own key's delete to the hold ({@link onLoss}).
 *
 * A watch created behind the store (it changed since the read, or while the watch was created) is
 * served by etcd from its 100 ms catch-up loop. With `exact` a second watch, from now, is opened
 * with it: when the two show the store moved, `recheck` reads the queue and the live watch's
 * events count from the read's revision on; otherwise the live one's events are dropped and it is
 * closed when the wait ends (a cancel now would be answered, waking the waiting process). Without
 * `exact` (a longer line: the key ahead alone, the own key watched apart) the one watch is from
 * now, and a read of the queue covers the revisions before its creation when the store moved
 * since the read; so does an `exact` wait given a `lineWatch` (a Mutex session's kept range, which
 * hands over the deletes it saw after the read), whose deletes of the key ahead are confirmed by a
 * read until the watch is known to cover the revisions after the read. The first watch alone stays for the loss;
 * when its start is compacted after the turn, a read of the own key decides: lost, or watched
 * again from the read on.
 */
export class TurnWatch implements LossWatch {
  /** Settles once: the outcome, or the failure of the watch, of a read, or the abort of `signal`. */
  readonly turn: Promise<TurnOutcome>;
  /** The own key, when the waiter has one. */
  readonly #own: Buffer | undefined;
  readonly #slots: number;
  /** The keys ahead waited on and not seen deleted yet, by {@link nameOf}. */
  readonly #ahead: Set<string>;
  /** Deletes of keys ahead that still have to come for the turn. */
  #needed: number;
  /** The read had every key ahead: the `needed`-th delete is the turn. */
  readonly #exact: boolean;
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #onAbort: () => void;
  #resolve!: (outcome: TurnOutcome) => void;
  #reject!: (error: unknown) => void;
  #settled = false;
  #held = false;
  /** Enough keys ahead were deleted: a read of the queue (`recheck`) tells whether it is the turn. */
  #confirming = false;
  /**
   * A `lineWatch` not known to cover every delete after the read (not created yet, or created
   * past it): a delete of the key ahead is confirmed by a read, which checks the own key too.
   */
  #uncovered = false;
  /** The highest revision decided on, from either watch. */
  #seen: bigint;
  #live: Watcher | undefined;
  /** A live watch no longer needed, closed at the wait's end ({@link #parkLive}). */
  #parked: Watcher | undefined;
  /** The live watch's batches, until the read tells from which revision they count. */
  #liveHeld: WatchBatch[] | undefined = [];
  #liveFrom: bigint | undefined;
  #loss: LossListener | undefined;
  /** A loss seen after the turn and before {@link onLoss}. */
  #early: { readonly revision: bigint } | { readonly error: unknown } | undefined;

  readonly #recheck: TurnRecheck;

  readonly #kv: KV;
  readonly #ownKey: OwnKey | undefined;
  /** The watched range: from the lowest to the highest of the keys ahead and the own key. */
  readonly #range: { readonly start: Buffer; readonly end: Buffer };

  /**
   * Watches for the turn of `waiter` after `read`, which found at least `slots` keys ahead. Without
   * `read` the waiter holds already: only its own key is watched, from just after `ownKey.seenAt`,
   * for its loss, and {@link turn} never settles (see {@link watchLoss}).
   */
  constructor(
    kv: KV,
    waiter: Waiter,
    read: LineRead | undefined,
    recheck: TurnRecheck,
    signal: AbortSignal,
  ) {
    this.turn = new Promise<TurnOutcome>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    const { slots, ownKey } = waiter;
    const predecessors = read?.predecessors ?? [];
    const ahead = slots === 1 ? predecessors.slice(0, 1) : predecessors;
    this.#kv = kv;
    this.#ownKey = ownKey;
    this.#own = ownKey && Buffer.from(ownKey.key);
    this.#slots = slots;
    this.#ahead = new Set(ahead.map((kv) => nameOf(kv.key)));
    this.#needed = slots === 1 ? 1 : predecessors.length - slots + 1;
    this.#exact = read?.complete === true && ahead.length === predecessors.length;
    this.#seen = read?.header.revision ?? ownKey?.seenAt ?? 0n;
    const from = this.#seen + 1n;
    this.#recheck = recheck;
    this.#signal = signal;
    const keys: Buffer[] = ahead.map((kv) => Buffer.from(kv.key));
    if (this.#own) keys.push(this.#own);
    keys.sort((a, b) => Buffer.compare(a, b));
    const high = keys[keys.length - 1] ?? ZERO;
    this.#range = { start: keys[0] ?? ZERO, end: Buffer.concat([high, ZERO]) };
    this.#onAbort = () => this.#fail(new AbortedError({ cause: signal.reason }));
    if (read === undefined) {
      this.#held = true;
      this.#settled = true;
      this.#watchFrom(from);
      return;
    }
    if (signal.aborted) {
      this.#onAbort();
      return;
    }
    signal.addEventListener('abort', this.#onAbort, { once: true });
    if (!this.#exact) {
      // A longer line: the key ahead alone, from now; a read covers what its creation skipped.
      const start = Buffer.from(ahead[0]?.key ?? ZERO);
      const alone = { start, end: Buffer.concat([start, ZERO]) };
      this.#subscribe(waiter.aheadWatch ?? watchRangeNow, alone);
      return;
    }
    if (waiter.lineWatch !== undefined) {
      // The whole line in one range (turn before loss, in revision order), from a watch that may
      // predate the read: a read covers what a newer one's creation skipped.
      this.#uncovered = true;
      this.#subscribe(waiter.lineWatch, this.#range);
      return;
    }
    const first = this.#watchFrom(from);
    const live = this.#open(0n);
    this.#live = live;
    live.on('batch', (batch) => {
      // Dropped, and closed soon: nothing more of it counts.
      if (this.#live !== live) return;
      if (this.#liveFrom === undefined) this.#liveHeld?.push(batch);
      else if (batch.revision > this.#liveFrom) this.#apply(batch);
    });
    // The first watch sees everything anyway, later: the live one's failure is not the wait's.
    live.on('error', () => undefined);
    // Right behind it on the stream, a watch from now: etcd creates the two in order, so its
    // created revision is read after the first one was registered.
    void this.#created(first, live, from);
  }

  /** Listens to `range` after the read through `watchRange`; reads the line if that skipped some. */
  #subscribe(watchRange: WatchRange, range: KeyRange): void {
    const read = this.#seen;
    const subscription = watchRange(this.#kv, range, read, {
      batch: (batch) => this.#apply(batch),
      error: (error) => this.#fail(error),
      coveredFrom: (revision) => {
        if (revision <= read) this.#uncovered = false;
      },
    });
    // Deletes seen before may have ended the wait already (in the call above).
    if (this.#stop.signal.aborted) {
      subscription.close();
      return;
    }
    this.#stop.signal.addEventListener('abort', () => subscription.close(), { once: true });
    void this.#createdAfter(subscription.covered, read);
  }

  #open(startRevision: bigint): Watcher {
    return this.#kv.watch({
      range: this.#range,
      startRevision,
      filters: ['noPut'],
      signal: this.#stop.signal,
    });
  }

  /** The watch that tells the turn, then the loss: from `from`, its events applied as read. */
  #watchFrom(from: bigint): Watcher {
    // Listened to, not iterated: the event is handled as it is read, without an iterator's hops.
    const watch = this.#open(from);
    watch.on('batch', (batch) => this.#apply(batch));
    watch.on('error', (error) => this.#fail(error));
    return watch;
  }

  /**
   * The watch from now of a longer line, created: it sees every change after the revision its
   * answer reports (etcd reads it before it registers the watch, v3rpc/watch.go, and starts the
   * watch just after it). When the store moved since `read`, a read of the queue covers the
   * revisions in between: one read, where a watch from the read's revision would be served by
   * etcd 3.4's 100 ms catch-up loop and needed a second watch, from now, beside it.
   */
  async #createdAfter(covered: Promise<bigint>, read: bigint): Promise<void> {
    let createdAt: bigint;
    try {
      createdAt = await covered;
    } catch {
      // The watch's failure fails the wait through its error event.
      return;
    }
    if (this.#settled) return;
    if (createdAt <= read) {
      this.#uncovered = false;
      return;
    }
    try {
      // Still ahead: the read checked the own key, and the watch covers every delete after it.
      if (!this.#takeRead(await this.#recheck(this.#stop.signal))) this.#uncovered = false;
    } catch (error) {
      // A read that found the own key gone fails the wait (SessionExpiredError).
      if (!this.#stop.signal.aborted) this.#fail(error);
    }
  }

  /**
   * Once both watches exist: a first one created below its start revision, with nothing committed
   * until the live one was created, is synced (etcd reports the revision it read BEFORE it
   * registers a watch, v3rpc/watch.go, so the first one's answer alone does not prove it); the
   * live one is then parked until the wait ends. Otherwise the first one may wait for etcd's
   * catch-up loop: a read of the queue, and the live watch's events after it, tell sooner.
   */
  async #created(first: Watcher, live: Watcher, from: bigint): Promise<void> {
    let createdAt: bigint;
    let liveFrom: bigint | undefined;
    try {
      createdAt = await first.ready();
      if (this.#settled) return;
      // A live watch that fails leaves the first one to tell.
      liveFrom = await live.ready().catch(() => undefined);
    } catch {
      return;
    }
    if (this.#settled) return;
    if (liveFrom === undefined) {
      this.#dropLive();
      return;
    }
    if (createdAt < from && liveFrom === createdAt) {
      this.#parkLive();
      return;
    }
    try {
      const read = await this.#recheck(this.#stop.signal);
      // No key ahead any more: held, whatever the live watch will tell.
      if (this.#takeRead(read)) return;
      // A read answered before the live watch existed: a change in between is only in the first
      // watch's catch-up, so read once more.
      const covered =
        liveFrom <= read.header.revision ? read : await this.#recheck(this.#stop.signal);
      if (this.#takeRead(covered)) return;
      this.#liveFrom = covered.header.revision;
      const held = this.#liveHeld ?? [];
      this.#liveHeld = undefined;
      for (const batch of held) if (batch.revision > covered.header.revision) this.#apply(batch);
    } catch (error) {
      // A read that found the own key gone fails the wait (SessionExpiredError).
      if (!this.#stop.signal.aborted) this.#fail(error);
    }
  }

  /**
   * The first watch is synced: the live one's events no longer count, and its cancel waits for
   * the wait's end (it then goes with the next request's write). Cancelled now, the server's
   * answer to it would wake this waiting process once more per wait.
   */
  #parkLive(): void {
    this.#parked = this.#live;
    this.#live = undefined;
    this.#liveHeld = undefined;
  }

  #dropLive(): void {
    const watches = [this.#live, this.#parked];
    this.#live = undefined;
    this.#parked = undefined;
    this.#liveHeld = undefined;
    for (const watch of watches) if (watch !== undefined) closeSoon(this.#kv, () => watch.close());
  }

  /** Where the own key's loss goes once held; a loss seen before is reported at once. */
  onLoss(listener: LossListener): void {
    this.#loss = listener;
    const early = this.#early;
    this.#early = undefined;
    if (early === undefined) return;
    if ('revision' in early) listener.lost(early.revision);
    else listener.failed(early.error);
  }

  /** Ends the watch (every watcher closes); the turn, if still open, rejects with AbortedError. */
  close(): void {
    // Stopped first: a close after the turn is no loss.
    this.#stop.abort(STOPPED);
    // An error only for a turn still awaited: a close after it is the hot path of every release.
    if (!this.#settled) this.#fail(new AbortedError({ message: 'the turn watch was closed' }));
  }

  /**
   * True when the wait is over or decided elsewhere: a read found fewer than `slots` keys ahead
   * (held), or other keys than the ones watched (the next to wait for), the wait ended meanwhile,
   * or the deletes of the keys ahead are being confirmed by a read of their own.
   */
  #takeRead(read: LineRead): boolean {
    if (this.#settled || this.#confirming) return true;
    if (read.predecessors.length < this.#slots) {
      // The read checked the own key too; events up to its revision are decided by it.
      if (read.header.revision > this.#seen) this.#seen = read.header.revision;
      this.#take(read.header);
      return true;
    }
    // Keys watched went before the read: wait for the ones it found.
    if (!this.#stillAhead(read)) {
      this.#settle({ next: read });
      return true;
    }
    return false;
  }

  /** True when `read` found exactly the keys still waited on (with one slot, its newest). */
  #stillAhead(read: LineRead): boolean {
    const found = this.#slots === 1 ? read.predecessors.slice(0, 1) : read.predecessors;
    return (
      found.length === this.#ahead.size && found.every((kv) => this.#ahead.has(nameOf(kv.key)))
    );
  }

  /** Enough keys ahead were deleted (the read had not every one): a read of the queue decides. */
  async #confirm(): Promise<void> {
    this.#confirming = true;
    let read: LineRead;
    try {
      read = await this.#recheck(this.#stop.signal);
    } catch (error) {
      // A read that found the own key gone fails the wait (SessionExpiredError).
      if (!this.#stop.signal.aborted) this.#fail(error);
      return;
    }
    if (this.#settled) return;
    if (read.predecessors.length >= this.#slots) {
      this.#settle({ next: read });
      return;
    }
    if (read.header.revision > this.#seen) this.#seen = read.header.revision;
    this.#take(read.header);
  }

  #apply(batch: WatchBatch): void {
    if (batch.revision <= this.#seen) return;
    this.#seen = batch.revision;
    const own = this.#own;
    for (const event of batch.events) {
      if (event.type !== 'delete') continue;
      if (own?.equals(event.kv.key)) {
        // While a read confirms the turn, the own key's delete ends the wait at once, as before.
        if (this.#held) this.#lost({ revision: event.kv.modRevision });
        else this.#settle({ lostAt: event.kv.modRevision });
        return;
      }
      if (this.#held || this.#confirming || !this.#ahead.delete(nameOf(event.kv.key))) continue;
      // A key ahead deleted then re-created is behind us now: each name counts once.
      if (--this.#needed > 0) continue;
      // Deleted in the batch that holds the turn: the own key is gone at that revision too.
      const alsoOwn = own && batch.events.some((other) => own.equals(other.kv.key));
      if (alsoOwn) this.#settle({ lostAt: event.kv.modRevision });
      else if (this.#exact && !this.#uncovered) {
        this.#take({ ...batch.header, revision: event.kv.modRevision });
      } else void this.#confirm();
      return;
    }
  }

  #take(header: ResponseHeader): void {
    this.#held = true;
    this.#settle({ held: header });
  }

  #settle(outcome: TurnOutcome): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#signal.removeEventListener('abort', this.#onAbort);
    // The live watch only helped find the turn; the first one watches for the loss.
    this.#dropLive();
    if (!this.#held) this.#stop.abort(STOPPED);
    this.#resolve(outcome);
  }

  #fail(error: unknown): void {
    if (this.#held) {
      if (this.#stop.signal.aborted) return;
      if (error instanceof CompactedError) void this.#afterCompaction();
      else this.#lost({ error });
      return;
    }
    if (error instanceof CompactedError) {
      this.#settle({ compacted: true });
      return;
    }
    if (this.#settled) return;
    this.#settled = true;
    this.#signal.removeEventListener('abort', this.#onAbort);
    this.#stop.abort(STOPPED);
    this.#reject(error);
  }

  /**
   * Held, and the watch's start was compacted: a read of the own key tells whether it went
   * meanwhile (missing or re-created: lost at the read's revision); if not, the watch starts again
   * just after the read.
   */
  async #afterCompaction(): Promise<void> {
    const own = this.#ownKey;
    if (own === undefined) return;
    try {
      const read = await this.#kv.range({
        key: own.key,
        keysOnly: true,
        signal: this.#stop.signal,
      });
      if (this.#stop.signal.aborted) return;
      const { revision } = read.header;
      if (read.kvs[0]?.createRevision !== own.createRevision) {
        this.#lost({ revision });
        return;
      }
      if (revision > this.#seen) this.#seen = revision;
      this.#watchFrom(this.#seen + 1n);
    } catch (error) {
      if (!this.#stop.signal.aborted) this.#lost({ error });
    }
  }

  #lost(loss: { readonly revision: bigint } | { readonly error: unknown }): void {
    const listener = this.#loss;
    if (listener === undefined) {
      this.#early ??= loss;
      return;
    }
    if ('revision' in loss) listener.lost(loss.revision);
    else listener.failed(loss.error);
  }
}

// Watches the waits are done with, by client, not closed yet. A cancel waits for the next turn of
// the event loop, so the handoff's other side, often read in the same turn, goes first; or for the
// client's next request of a wait or hold (closeNow), whichever comes first, which then carries the
// cancel in the same socket write: a lock() right after unlock() sends its txn and the old hold's
// cancel in one write, and the server reads them at once.
const CLOSING = new Slot(() => ({ closes: [] as Array<() => void> }));

/** @internal Closes a watch on the next turn of the event loop, or at `kv`'s closeNow before. */
export function closeSoon(kv: KV, close: () => void): void {
  const closing = kv.slots.get(CLOSING);
  closing.closes.push(close);
  if (closing.closes.length === 1) setImmediate(() => closeNow(kv));
}

/** @internal Closes now the watches of `kv` given to {@link closeSoon}. */
export function closeNow(kv: KV): void {
  const closing = kv.slots.get(CLOSING);
  const { closes } = closing;
  if (closes.length === 0) return;
  closing.closes = [];
  for (const close of closes) close();
}

/** A key as a string that tells every byte apart (keys need not be UTF-8). */
function nameOf(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
}
