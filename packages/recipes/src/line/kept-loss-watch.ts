// One loss watch per session and key that the session queues with every time (a Mutex's
// `<name>/<lease hex>`), kept across its holds: a contended cycle then creates and cancels no watch
// of its own key (the server answers each create and each cancel, waking the process). A hold
// counts only deletes above its key's create revision: an earlier incarnation's delete (the last
// unlock's) is not its loss. The watch closes when no hold used it for a while, or with the session.
import { CompactedError, type KV, type WatchBatch, type Watcher } from '@etcdkit/client';
import { Slot } from '@etcdkit/client/internal';
import { STOPPED } from '../errors.js';
import type { Session } from '../session/session.js';
import { IdleClose } from './idle-close.js';
import { type LossListener, type LossWatch, type OwnKey, watchLoss } from './turn.js';

/** How long a kept watch stays open with no hold on it (the next lock of the key is usually sooner). */
const IDLE_MS = 1_000;

const KEPT = new Slot(() => new Map<string, KeptWatch>());

/**
 * @internal The loss watch of `own`, a session key the session queues with again and again: a
 * share of the session's one watch of that key, from just after `own.seenAt` at the latest.
 * Reports the first delete of the key above its create revision (or the watch's failure) once.
 */
export function keptLossWatch(session: Session, own: OwnKey): LossWatch {
  if (session.signal.aborted) return watchLoss(session.etcd, own);
  const byKey = session.slots.get(KEPT);
  let kept = byKey.get(own.key);
  // A watch started after this key was seen could miss its delete: this hold gets its own.
  if (kept !== undefined && kept.start > own.seenAt + 1n) return watchLoss(session.etcd, own);
  if (kept === undefined) {
    const made = new KeptWatch(session, own.key, own.seenAt + 1n, () => {
      if (byKey.get(own.key) === made) byKey.delete(own.key);
    });
    kept = made;
    byKey.set(own.key, made);
  }
  return kept.share(own);
}

/** One hold's (or waiter's) share of a kept watch. */
class Share implements LossWatch {
  #listener: LossListener | undefined;
  /** A loss seen before {@link onLoss}. */
  #early: { readonly revision: bigint } | { readonly error: unknown } | undefined;
  /** After the kept watch's start was compacted: a watch of this key alone serves this share. */
  #alone: LossWatch | undefined;
  #closed = false;

  constructor(
    readonly own: OwnKey,
    readonly leave: (share: Share) => void,
  ) {}

  onLoss(listener: LossListener): void {
    if (this.#alone !== undefined) {
      this.#alone.onLoss(listener);
      return;
    }
    this.#listener = listener;
    const early = this.#early;
    this.#early = undefined;
    if (early !== undefined) this.report(early);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#listener = undefined;
    this.#alone?.close();
    this.leave(this);
  }

  /** Reports the loss once (to the listener, or when one is given). */
  report(loss: { readonly revision: bigint } | { readonly error: unknown }): void {
    if (this.#closed) return;
    const listener = this.#listener;
    if (listener === undefined) {
      this.#early ??= loss;
      return;
    }
    if ('revision' in loss) listener.lost(loss.revision);
    else listener.failed(loss.error);
  }

  /** Handed to a watch of its own (which reads the key after the compaction, as holds do). */
  goAlone(kv: KV): void {
    if (this.#closed) return;
    const alone = watchLoss(kv, this.own);
    this.#alone = alone;
    const listener = this.#listener;
    if (listener !== undefined) alone.onLoss(listener);
    else {
      alone.onLoss({
        lost: (revision) => this.report({ revision }),
        failed: (error) => this.report({ error }),
      });
    }
  }
}

/** The session's watch of one of its keys, for deletes, shared by the holds of that key. */
class KeptWatch {
  readonly #shares = new Set<Share>();
  readonly #stop = new AbortController();
  readonly #session: Session;
  readonly #forget: () => void;
  readonly #onSessionDone: () => void;
  /** The highest revision the key was seen deleted at. */
  #lastDelete = 0n;
  readonly #idleClose = new IdleClose(
    IDLE_MS,
    () => this.#shares.size > 0 || this.#closed,
    () => this.#close(),
  );
  #closed = false;

  constructor(
    session: Session,
    key: string,
    /** The watch's start revision: every delete from it on is seen. */
    readonly start: bigint,
    forget: () => void,
  ) {
    this.#session = session;
    this.#forget = forget;
    const own = Buffer.from(key);
    const watcher: Watcher = session.etcd.watch({
      range: { start: own, end: Buffer.concat([own, ZERO]) },
      startRevision: start,
      filters: ['noPut'],
      signal: this.#stop.signal,
    });
    watcher.on('batch', (batch) => this.#apply(batch));
    watcher.on('error', (error) => this.#failed(error));
    this.#onSessionDone = () => this.#close();
    session.signal.addEventListener('abort', this.#onSessionDone, { once: true });
  }

  /** A share for `own`; a delete of the key above its create revision already seen is its loss. */
  share(own: OwnKey): Share {
    const share = new Share(own, (left) => this.#leave(left));
    if (this.#lastDelete > own.createRevision) {
      share.report({ revision: this.#lastDelete });
      return share;
    }
    this.#shares.add(share);
    return share;
  }

  #apply(batch: WatchBatch): void {
    let reported = false;
    for (const event of batch.events) {
      if (event.type !== 'delete') continue;
      const revision = event.kv.modRevision;
      if (revision > this.#lastDelete) this.#lastDelete = revision;
      for (const share of this.#shares) {
        if (share.own.createRevision >= revision) continue;
        this.#shares.delete(share);
        share.report({ revision });
        reported = true;
      }
    }
    // Idle from the last share's end: the deletes no share waits for (this session's unlocks
    // while its holds watch through another kept watch) must not keep an unused watch open.
    if (reported && this.#shares.size === 0) this.#idleClose.idle();
  }

  #failed(error: unknown): void {
    if (this.#stop.signal.aborted) return;
    const shares = [...this.#shares];
    this.#shares.clear();
    this.#close();
    // A compacted start: each share reads its key and watches again from there (rare).
    const compacted = error instanceof CompactedError;
    for (const share of shares) {
      if (compacted) share.goAlone(this.#session.etcd);
      else share.report({ error });
    }
  }

  #leave(share: Share): void {
    if (!this.#shares.delete(share)) return;
    if (this.#shares.size === 0) this.#idleClose.idle();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#forget();
    this.#idleClose.cancel();
    this.#session.signal.removeEventListener('abort', this.#onSessionDone);
    this.#stop.abort(STOPPED);
  }
}

const ZERO = Buffer.from([0]);
