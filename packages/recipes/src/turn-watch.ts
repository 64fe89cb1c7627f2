// The one watch of a waiter with exactly one key ahead, kept as the hold's loss watch once the turn
// comes: one watch per contended acquisition, and the turn is taken on the delete event itself.
import {
  AbortedError,
  type Bytes,
  CompactedError,
  type KV,
  type ResponseHeader,
  type WatchBatch,
  type Watcher,
} from '@etcdkit/client';

/** How the wait of a {@link TurnWatch} ended. */
export type TurnOutcome =
  /** The key ahead was deleted (before the own key): held at that revision. */
  | { readonly held: ResponseHeader }
  /** The own key was deleted first (or by the same txn), at `lostAt`. */
  | { readonly lostAt: bigint }
  /** The start revision was compacted: the caller reads the queue again. */
  | { readonly compacted: true };

/** A read of the queue (checking the own key): `held` when no key is ahead any more. */
export type TurnRecheck = (
  signal: AbortSignal,
) => Promise<{ readonly held: ResponseHeader | undefined; readonly revision: bigint }>;

/** Where a held key's loss is reported, once the turn came. */
export interface LossListener {
  /** The own key was deleted at `revision`. */
  lost(revision: bigint): void;
  /** The watch failed for good: the key can no longer be watched. */
  failed(error: unknown): void;
}

const ZERO = Buffer.from([0]);

/**
 * Watches the key range from the lower of the own key and the key ahead to the higher, for
 * deletes, from just after the revision both were read at. A watcher's events come in revision
 * order, so the delete of the key ahead seen before any delete of the own key is the turn (keys in
 * between are later waiters, ignored). After the turn the same watch reports the own key's delete
 * to the hold ({@link onLoss}).
 *
 * A watch created behind the store (it changed since the read, or while the watch was created) is
 * served by etcd from its 100 ms catch-up loop. A second watch, from now, is opened with it: when
 * the two show the store moved, `recheck` reads the queue and the live watch's events count from
 * the read's revision on; otherwise the live one is closed at once. The first watch alone stays
 * for the loss.
 */
export class TurnWatch {
  /** Settles once: the outcome, or the failure of the watch, of a read, or the abort of `signal`. */
  readonly turn: Promise<TurnOutcome>;
  readonly #own: Buffer;
  readonly #ahead: Buffer;
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #onAbort: () => void;
  #resolve!: (outcome: TurnOutcome) => void;
  #reject!: (error: unknown) => void;
  #settled = false;
  #held = false;
  /** The highest revision decided on, from either watch. */
  #seen: bigint;
  #live: Watcher | undefined;
  /** The live watch's batches, until the read tells from which revision they count. */
  #liveHeld: WatchBatch[] | undefined = [];
  #liveFrom: bigint | undefined;
  #loss: LossListener | undefined;
  /** A loss seen after the turn and before {@link onLoss}. */
  #early: { readonly revision: bigint } | { readonly error: unknown } | undefined;

  constructor(
    kv: KV,
    keys: { readonly own: string; readonly ahead: Bytes },
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
    this.#seen = from - 1n;
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
    // Right behind it on the stream, a watch from now: etcd creates the two in order, so its
    // created revision is read after the first one was registered.
    const live = open(0n);
    this.#live = live;
    live.on('batch', (batch) => {
      if (this.#liveFrom === undefined) this.#liveHeld?.push(batch);
      else if (batch.revision > this.#liveFrom) this.#apply(batch);
    });
    // The first watch sees everything anyway, later: the live one's failure is not the wait's.
    live.on('error', () => undefined);
    void this.#created(first, live, from, recheck);
  }

  /**
   * Once both watches exist: a first one created below its start revision, with nothing committed
   * until the live one was created, is synced (etcd reports the revision it read BEFORE it
   * registers a watch, v3rpc/watch.go, so the first one's answer alone does not prove it); the
   * live one then goes. Otherwise the first one may wait for etcd's catch-up loop: a read of the
   * queue, and the live watch's events after it, tell sooner.
   */
  async #created(first: Watcher, live: Watcher, from: bigint, recheck: TurnRecheck): Promise<void> {
    let createdAt: bigint;
    let liveFrom: bigint | undefined;
    try {
      createdAt = await first.ready();
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
      const read = await recheck(this.#stop.signal);
      // No key ahead any more: held, whatever the live watch will tell.
      if (this.#takeRead(read)) return;
      // A read answered before the live watch existed: a change in between is only in the first
      // watch's catch-up, so read once more.
      const covered = liveFrom <= read.revision ? read : await recheck(this.#stop.signal);
      if (this.#takeRead(covered)) return;
      this.#liveFrom = covered.revision;
      const held = this.#liveHeld ?? [];
      this.#liveHeld = undefined;
      for (const batch of held) if (batch.revision > covered.revision) this.#apply(batch);
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
    this.#stop.abort();
    // An error only for a turn still awaited: a close after it is the hot path of every release.
    if (!this.#settled) this.#fail(new AbortedError({ message: 'the turn watch was closed' }));
  }

  /** True when the wait is over (a read found no key ahead, or it ended meanwhile). */
  #takeRead(read: Awaited<ReturnType<TurnRecheck>>): boolean {
    if (this.#settled) return true;
    if (read.held === undefined) return false;
    // The read checked the own key too; events up to its revision are decided by it.
    if (read.revision > this.#seen) this.#seen = read.revision;
    this.#take(read.held);
    return true;
  }

  #apply(batch: WatchBatch): void {
    if (batch.revision <= this.#seen) return;
    this.#seen = batch.revision;
    for (const event of batch.events) {
      if (event.type !== 'delete') continue;
      if (this.#own.equals(event.kv.key)) {
        if (this.#held) this.#lost({ revision: event.kv.modRevision });
        else this.#settle({ lostAt: event.kv.modRevision });
        return;
      }
      if (!this.#held && this.#ahead.equals(event.kv.key)) {
        // Both deleted by one txn: the own key is gone at that revision too.
        const alsoOwn = batch.events.some((other) => this.#own.equals(other.kv.key));
        if (alsoOwn) this.#settle({ lostAt: event.kv.modRevision });
        else this.#take({ ...batch.header, revision: event.kv.modRevision });
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
    if (!this.#held) this.#stop.abort();
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
    this.#stop.abort();
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
