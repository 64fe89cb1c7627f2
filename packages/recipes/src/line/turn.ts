// Waiting for one's turn in a line of keys ordered by create revision (Mutex, Election, RWMutex,
// Semaphore), the way every waiter of one slot waits, compaction or not: ONE watch over the newest
// key ahead and the own key (TurnWatch), kept as the hold's loss watch once the turn comes. With
// the only key ahead known the turn is taken on the delete event itself; otherwise a read of the
// line (which checks the own key) confirms it.
import {
  AbortedError,
  type Bytes,
  CompactedError,
  type KeyValue,
  type KV,
  op,
  type ResponseHeader,
  type WatchBatch,
  type Watcher,
} from '@etcdkit/client';
import { SessionExpiredError } from '../errors.js';
import { STOPPED } from '../wait.js';

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

/** @internal A waiter: the keys under `prefix` created before `createRevision` are ahead of it. */
export interface Waiter {
  readonly prefix: string;
  readonly createRevision: bigint;
  /** Its own key, checked by every read of the line when given. */
  readonly ownKey?: OwnKey;
}

/** @internal The turn {@link watchForTurn} found. */
export interface Turn {
  /** The header of the revision the turn came at. */
  readonly header: ResponseHeader;
  /**
   * The watch that saw it, to keep as the own key's loss watch ({@link TurnWatch.onLoss}) or
   * close; undefined when a read found the line empty (nothing watches the own key then).
   */
  readonly watch: TurnWatch | undefined;
}

/** @internal How the wait of a {@link TurnWatch} ended. */
export type TurnOutcome =
  /** No key ahead any more (before the own key went): held at that revision. */
  | { readonly held: ResponseHeader }
  /** The own key was deleted first (or by the same txn), at `lostAt`. */
  | { readonly lostAt: bigint }
  /** The key ahead went and this read found another one ahead: the caller waits for that one. */
  | { readonly next: LineRead }
  /** The start revision was compacted: the caller reads the queue again. */
  | { readonly compacted: true };

/**
 * @internal A read of the queue ahead of the own key, newest first (at least the newest), rejecting
 * when the own key is gone: held when no key is ahead any more.
 */
export type TurnRecheck = (signal: AbortSignal) => Promise<LineRead>;

/** @internal Where a held key's loss is reported, once the turn came. */
export interface LossListener {
  /** The own key was deleted at `revision`. */
  lost(revision: bigint): void;
  /** The watch failed for good: the key can no longer be watched. */
  failed(error: unknown): void;
}

/**
 * @internal Waits for the turn of `waiter` (one slot), starting from `first`, a read of the line at
 * least up to its newest key ahead (read here when not given): one {@link TurnWatch} over that key
 * and the own key; when the key ahead goes and a read finds another one ahead, a watch over that
 * one takes over (from just after the read, which checked the own key); when the watch's start was
 * compacted, the line is read again. Rejects with SessionExpiredError when the own key went first,
 * AbortedError on abort, or the failure of a read or watch.
 */
export async function watchForTurn(
  kv: KV,
  waiter: Waiter & { readonly ownKey: OwnKey },
  first: LineRead | undefined,
  signal: AbortSignal,
): Promise<Turn> {
  const own = waiter.ownKey.key;
  const recheck = (stop: AbortSignal) => readAhead(kv, waiter, 1, stop);
  let read = first ?? (await recheck(signal));
  for (;;) {
    const ahead = read.predecessors[0];
    if (ahead === undefined) return { header: read.header, watch: undefined };
    const last = read.complete === true && read.predecessors.length === 1;
    const watch = new TurnWatch(
      kv,
      { own, ahead: ahead.key, last },
      read.header.revision + 1n,
      recheck,
      signal,
    );
    const outcome = await watch.turn;
    if ('held' in outcome) return { header: outcome.held, watch };
    watch.close();
    if ('lostAt' in outcome) throw ownKeyDeleted(own, outcome.lostAt);
    read = 'next' in outcome ? outcome.next : await recheck(signal);
  }
}

/**
 * @internal Reads the keys ahead of `waiter` (with one slot only the newest) and, with its
 * `ownKey`, checks in the same txn that the own key is still the incarnation that queued: one
 * round trip. Rejects with SessionExpiredError when the own key is gone.
 */
export async function readAhead(
  kv: KV,
  waiter: Waiter,
  slots: number,
  signal: AbortSignal,
): Promise<LineRead> {
  const request = {
    prefix: waiter.prefix,
    maxCreateRevision: waiter.createRevision - 1n,
    keysOnly: true,
    sort: { target: 'create', order: 'descend' },
    ...(slots === 1 ? { limit: 1 } : {}),
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
 * Watches the key range from the lower of the own key and the key ahead to the higher, for
 * deletes, from just after the revision both were read at. A watcher's events come in revision
 * order, so the delete of the key ahead seen before any delete of the own key is the turn when it
 * was the only key ahead (`last`); otherwise `recheck` reads the queue then, and no key ahead is
 * the turn, another one is the next to wait for (keys in between are other waiters, ignored).
 * After the turn the same watch reports the own key's delete to the hold ({@link onLoss}).
 *
 * A watch created behind the store (it changed since the read, or while the watch was created) is
 * served by etcd from its 100 ms catch-up loop. With `last` a second watch, from now, is opened
 * with it: when the two show the store moved, `recheck` reads the queue and the live watch's
 * events count from the read's revision on; otherwise the live one is closed at once. Without
 * `last` (a longer wait) the second watch is opened only when the first one's creation shows the
 * store past its start, as waitForChange (wait.ts) does. The first watch alone stays for the loss.
 */
export class TurnWatch {
  /** Settles once: the outcome, or the failure of the watch, of a read, or the abort of `signal`. */
  readonly turn: Promise<TurnOutcome>;
  readonly #own: Buffer;
  readonly #ahead: Buffer;
  /** The key ahead is the only one: its delete is the turn. */
  readonly #last: boolean;
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #onAbort: () => void;
  #resolve!: (outcome: TurnOutcome) => void;
  #reject!: (error: unknown) => void;
  #settled = false;
  #held = false;
  /** The key ahead was deleted: a read of the queue (`recheck`) tells whether it is the turn. */
  #confirming = false;
  /** The highest revision decided on, from either watch. */
  #seen: bigint;
  #live: Watcher | undefined;
  /** The live watch's batches, until the read tells from which revision they count. */
  #liveHeld: WatchBatch[] | undefined = [];
  #liveFrom: bigint | undefined;
  #loss: LossListener | undefined;
  /** A loss seen after the turn and before {@link onLoss}. */
  #early: { readonly revision: bigint } | { readonly error: unknown } | undefined;

  readonly #recheck: TurnRecheck;

  constructor(
    kv: KV,
    keys: { readonly own: string; readonly ahead: Bytes; readonly last: boolean },
    from: bigint,
    recheck: TurnRecheck,
    signal: AbortSignal,
  ) {
    this.turn = new Promise<TurnOutcome>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#own = Buffer.from(keys.own);
    this.#ahead = Buffer.from(keys.ahead);
    this.#last = keys.last;
    this.#seen = from - 1n;
    this.#recheck = recheck;
    this.#signal = signal;
    this.#onAbort = () => this.#fail(new AbortedError({ cause: signal.reason }));
    if (signal.aborted) {
      this.#onAbort();
      return;
    }
    signal.addEventListener('abort', this.#onAbort, { once: true });
    const [low, high] =
      Buffer.compare(this.#own, this.#ahead) < 0
        ? [this.#own, this.#ahead]
        : [this.#ahead, this.#own];
    const open = (startRevision: bigint) =>
      kv.watch({
        range: { start: low, end: Buffer.concat([high, ZERO]) },
        startRevision,
        filters: ['noPut'],
        signal: this.#stop.signal,
      });
    // Listened to, not iterated: the event is handled as it is read, without an iterator's hops.
    const first = open(from);
    first.on('batch', (batch) => this.#apply(batch));
    first.on('error', (error) => this.#fail(error));
    const openLive = () => {
      const live = open(0n);
      this.#live = live;
      live.on('batch', (batch) => {
        if (this.#liveFrom === undefined) this.#liveHeld?.push(batch);
        else if (batch.revision > this.#liveFrom) this.#apply(batch);
      });
      // The first watch sees everything anyway, later: the live one's failure is not the wait's.
      live.on('error', () => undefined);
      return live;
    };
    // Right behind it on the stream, a watch from now: etcd creates the two in order, so its
    // created revision is read after the first one was registered.
    const live = keys.last ? openLive() : undefined;
    void this.#created(first, live ?? openLive, from);
  }

  /**
   * Once both watches exist: a first one created below its start revision, with nothing committed
   * until the live one was created, is synced (etcd reports the revision it read BEFORE it
   * registers a watch, v3rpc/watch.go, so the first one's answer alone does not prove it); the
   * live one then goes. Otherwise the first one may wait for etcd's catch-up loop: a read of the
   * queue, and the live watch's events after it, tell sooner. Given `openLive` instead of a live
   * watch, a first one created below its start is taken as synced, and only otherwise is the live
   * one opened.
   */
  async #created(first: Watcher, live: Watcher | (() => Watcher), from: bigint): Promise<void> {
    let createdAt: bigint;
    let liveFrom: bigint | undefined;
    try {
      createdAt = await first.ready();
      if (typeof live === 'function') {
        if (createdAt < from || this.#settled) return;
        live = live();
      } else if (this.#settled) return;
      // A live watch that fails leaves the first one to tell.
      liveFrom = await live.ready().catch(() => undefined);
    } catch {
      return;
    }
    if (this.#settled) return;
    if (liveFrom === undefined || (createdAt < from && liveFrom === createdAt)) {
      this.#dropLive();
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

  #dropLive(): void {
    this.#live?.close();
    this.#live = undefined;
    this.#liveHeld = undefined;
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
   * True when the wait is over or decided elsewhere: a read found no key ahead (held), or another
   * key than the one watched (the next to wait for), the wait ended meanwhile, or the delete of
   * the key ahead is being confirmed by a read of its own.
   */
  #takeRead(read: LineRead): boolean {
    if (this.#settled || this.#confirming) return true;
    const newest = read.predecessors[0];
    if (newest === undefined) {
      // The read checked the own key too; events up to its revision are decided by it.
      if (read.header.revision > this.#seen) this.#seen = read.header.revision;
      this.#take(read.header);
      return true;
    }
    // The key watched went before the read: wait for the one it found.
    if (!this.#ahead.equals(newest.key)) {
      this.#settle({ next: read });
      return true;
    }
    return false;
  }

  /** The key ahead (not known to be the last) was deleted: a read of the queue decides. */
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
    const newest = read.predecessors[0];
    if (newest !== undefined) {
      this.#settle({ next: read });
      return;
    }
    if (read.header.revision > this.#seen) this.#seen = read.header.revision;
    this.#take(read.header);
  }

  #apply(batch: WatchBatch): void {
    if (batch.revision <= this.#seen) return;
    this.#seen = batch.revision;
    for (const event of batch.events) {
      if (event.type !== 'delete') continue;
      if (this.#own.equals(event.kv.key)) {
        // While a read confirms the turn, the own key's delete ends the wait at once, as before.
        if (this.#held) this.#lost({ revision: event.kv.modRevision });
        else this.#settle({ lostAt: event.kv.modRevision });
        return;
      }
      if (!this.#held && !this.#confirming && this.#ahead.equals(event.kv.key)) {
        // Both deleted by one txn: the own key is gone at that revision too.
        const alsoOwn = batch.events.some((other) => this.#own.equals(other.kv.key));
        if (alsoOwn) this.#settle({ lostAt: event.kv.modRevision });
        else if (this.#last) this.#take({ ...batch.header, revision: event.kv.modRevision });
        else void this.#confirm();
        return;
      }
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
      if (!this.#stop.signal.aborted) this.#lost({ error });
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
