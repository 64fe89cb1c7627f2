// The watches of a Mutex waiter's line, kept by the session across its waits: contenders that lock
// again after each unlock queue in the same order every cycle, so a waiter waits behind the same
// key (the same session's) each time, and a watch created and cancelled per wait costs the
// waiting process two more answers per cycle. A long line's wait keeps the key ahead's watch (a
// delete there is checked by a read of the line, turn.ts); the wait just behind the holder keeps
// one range over the holder's key and its own (in one watch, the turn and the loss come in
// revision order). Deletes seen before a wait began are handed over to it. A hold found at the head
// by its acquire txn watches its loss through such a range too, when one covers its key.
import { CompactedError, type WatchBatch } from '@etcdkit/client';
import { Slot } from '@etcdkit/client/internal';
import { STOPPED } from '../errors.js';
import type { Session } from '../session/session.js';
import { IdleClose } from './idle-close.js';
import {
  closeSoon,
  type KeyListener,
  type KeyRange,
  type KeySubscription,
  type LossListener,
  type LossWatch,
  type OwnKey,
  watchLoss,
  watchRangeNow,
} from './turn.js';

/** How long a kept watch stays open with no wait on it (the next wait is usually sooner). */
const IDLE_MS = 1_000;

/** Batches kept for the next wait: a handoff's turn and the own key's deletes fit. */
const KEPT_BATCHES = 8;

const KEPT = new Slot(() => new Map<string, KeptRangeWatch>());

/**
 * @internal The deletes in `range` after `after`, from the session's kept watch of it (created
 * from now when there is none): `covered` resolves with the revision after which every delete is
 * delivered; the deletes above `after` seen before are delivered at once, in order.
 */
export function keptRangeWatch(
  session: Session,
  range: KeyRange,
  after: bigint,
  listener: KeyListener,
): KeySubscription {
  if (session.signal.aborted) return watchRangeNow(session.etcd, range, after, listener);
  const byRange = session.slots.get(KEPT);
  const name = `${range.start.length}:${latin1(range.start)}${latin1(range.end)}`;
  // The waiter's place changed: a watch no wait uses would only wake this process with its
  // deletes until it idles out; its cancel goes with the next request.
  for (const [other, watch] of byRange) {
    if (other !== name && watch.unused) closeSoon(session.etcd, () => watch.closeIfUnused());
  }
  let kept = byRange.get(name);
  if (kept === undefined) {
    const made = new KeptRangeWatch(session, range, () => {
      if (byRange.get(name) === made) byRange.delete(name);
    });
    kept = made;
    byRange.set(name, made);
  }
  return kept.subscribe(after, listener);
}

/**
 * @internal The loss watch of `own`, a key found at the head by its acquire txn, as a share of the
 * session's kept range watch over it when one covers every delete after `own.seenAt` (one watch
 * less on the key: each of its deletes is then sent once); undefined when none does.
 */
export function keptRangeLoss(session: Session, own: OwnKey): LossWatch | undefined {
  if (session.signal.aborted) return undefined;
  const key = Buffer.from(own.key);
  for (const watch of session.slots.get(KEPT).values()) {
    if (watch.covers(key, own.seenAt)) return new RangeLoss(session, watch, own, key);
  }
  return undefined;
}

/** A held key's share of a kept range watch: its first delete after `own.seenAt` is its loss. */
class RangeLoss implements LossWatch {
  #listener: LossListener | undefined;
  /** A loss seen before {@link onLoss}. */
  #early: { readonly revision: bigint } | { readonly error: unknown } | undefined;
  #reported = false;
  /** After the kept watch failed on a compaction: a watch of the key alone (which reads it). */
  #alone: LossWatch | undefined;
  readonly #subscription: KeySubscription;

  constructor(
    private readonly session: Session,
    watch: KeptRangeWatch,
    private readonly own: OwnKey,
    key: Buffer,
  ) {
    this.#subscription = watch.subscribe(own.seenAt, {
      batch: (batch) => {
        if (batch.revision <= own.seenAt) return;
        for (const event of batch.events) {
          if (event.type === 'delete' && key.equals(event.kv.key)) {
            this.#report({ revision: event.kv.modRevision });
            return;
          }
        }
      },
      error: (error) => {
        if (!(error instanceof CompactedError)) this.#report({ error });
        else if (!this.#reported) this.#goAlone();
      },
    });
  }

  onLoss(listener: LossListener): void {
    if (this.#alone !== undefined) {
      this.#alone.onLoss(listener);
      return;
    }
    this.#listener = listener;
    const early = this.#early;
    this.#early = undefined;
    if (early !== undefined) this.#tell(listener, early);
  }

  close(): void {
    this.#reported = true;
    this.#listener = undefined;
    this.#subscription.close();
    this.#alone?.close();
  }

  #report(loss: { readonly revision: bigint } | { readonly error: unknown }): void {
    if (this.#reported) return;
    this.#reported = true;
    this.#subscription.close();
    const listener = this.#listener;
    if (listener === undefined) this.#early = loss;
    else this.#tell(listener, loss);
  }

  #tell(listener: LossListener, loss: { readonly revision: bigint } | { readonly error: unknown }) {
    if ('revision' in loss) listener.lost(loss.revision);
    else listener.failed(loss.error);
  }

  #goAlone(): void {
    const alone = watchLoss(this.session.etcd, this.own);
    this.#alone = alone;
    const listener = this.#listener;
    if (listener !== undefined) alone.onLoss(listener);
    else {
      alone.onLoss({
        lost: (revision) => this.#report({ revision }),
        failed: (error) => this.#report({ error }),
      });
    }
  }
}

/** A session's watch of one key range's deletes, shared by its waits (and holds) on it. */
class KeptRangeWatch {
  readonly #listeners = new Set<KeyListener>();
  readonly #stop = new AbortController();
  readonly #forget: () => void;
  readonly #session: Session;
  readonly #onSessionDone = () => this.#close();
  /** The revision the watch was created at: every delete after it is delivered. */
  readonly #created: Promise<bigint>;
  /** {@link #created}, once known. */
  #createdAt: bigint | undefined;
  /** The latest batches delivered, oldest first. */
  readonly #recent: WatchBatch[] = [];
  /** The revision of the newest batch dropped from {@link #recent}: a later wait may miss it. */
  #dropped = 0n;
  readonly #idleClose = new IdleClose(
    IDLE_MS,
    () => this.#listeners.size > 0 || this.#stop.signal.aborted,
    () => this.#close(),
  );

  readonly #start: Buffer;
  readonly #end: Buffer;

  constructor(session: Session, range: KeyRange, forget: () => void) {
    this.#forget = forget;
    this.#session = session;
    this.#start = Buffer.from(range.start);
    this.#end = Buffer.from(range.end);
    const watcher = session.etcd.watch({
      range: { start: this.#start, end: this.#end },
      startRevision: 0n,
      filters: ['noPut'],
      signal: this.#stop.signal,
    });
    this.#created = watcher.ready();
    this.#created.then(
      (revision) => {
        this.#createdAt = revision;
      },
      // A failed creation reaches the listeners through the error event.
      () => undefined,
    );
    watcher.on('batch', (batch) => {
      this.#recent.push(batch);
      if (this.#recent.length > KEPT_BATCHES) {
        this.#dropped = (this.#recent.shift() as WatchBatch).revision;
      }
      for (const listener of [...this.#listeners]) listener.batch(batch);
    });
    watcher.on('error', (error) => {
      const listeners = [...this.#listeners];
      this.#close();
      for (const listener of listeners) listener.error(error);
    });
    session.signal.addEventListener('abort', this.#onSessionDone, { once: true });
  }

  /** No wait uses it now. */
  get unused(): boolean {
    return this.#listeners.size === 0;
  }

  /** True when `key` is in the range and every delete of it after `after` is delivered. */
  covers(key: Buffer, after: bigint): boolean {
    const createdAt = this.#createdAt;
    if (createdAt === undefined || createdAt > after || this.#dropped > after) return false;
    return Buffer.compare(this.#start, key) <= 0 && Buffer.compare(key, this.#end) < 0;
  }

  closeIfUnused(): void {
    if (this.unused) this.#close();
  }

  subscribe(after: bigint, listener: KeyListener): KeySubscription {
    this.#listeners.add(listener);
    // A batch above `after` no longer kept: the wait reads the line from there on.
    const dropped = this.#dropped;
    // (A batch delivered is past the watch's creation.)
    const covered = dropped > after ? this.#created.then(() => dropped) : this.#created;
    const createdAt = this.#createdAt;
    if (createdAt !== undefined && dropped <= after) listener.coveredFrom?.(createdAt);
    for (const batch of [...this.#recent]) {
      if (batch.revision > after && this.#listeners.has(listener)) listener.batch(batch);
    }
    return {
      covered,
      close: () => {
        if (this.#listeners.delete(listener) && this.#listeners.size === 0) this.#idleClose.idle();
      },
    };
  }

  #close(): void {
    if (this.#stop.signal.aborted) return;
    this.#forget();
    this.#idleClose.cancel();
    this.#session.signal.removeEventListener('abort', this.#onSessionDone);
    this.#listeners.clear();
    this.#stop.abort(STOPPED);
  }
}

function latin1(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
}
