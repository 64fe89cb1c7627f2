// A held key: its loss signal (session ended, key deleted or re-created, watch failed) and its
// guarded release. The public handles (Lock, Permit, Leadership) wrap one.
import { type Compare, cmp, type ResponseHeader } from '@etcdkit/client';
import { LockLostError, LockNotHeldError } from '../errors.js';
import type { Session } from '../session/session.js';
import { STOPPED, waitForDeleteOf } from '../wait.js';
import { deleteIfCreatedAt, type LineEntry } from './entry.js';
import type { TurnWatch } from './turn-watch.js';

/**
 * @internal The shared mechanics of a held key. The public handles (Lock, Permit, Leadership) wrap
 * one.
 *
 * The signal fires when the session is done, when the key is deleted or re-created (watched from
 * the revision at which it was seen, so nothing in between is missed), when the watch fails for
 * good, or when the hold is released through this handle.
 */
export class Holding {
  readonly key: string;
  readonly createRevision: bigint;
  #header: ResponseHeader;
  readonly #session: Session;
  readonly #controller = new AbortController();
  /** Stops the key's loss watch now running. */
  #stopWatch: (() => void) | undefined;
  #releasing = false;
  /** The revision our own key's delete was seen at while releasing (an error only if it fails). */
  #deletedWhileReleasing: bigint | undefined;
  #stopping = false;
  readonly #onSessionDone: () => void;

  readonly #what: string;
  readonly #seenAt: bigint;

  /**
   * With `watchKey` false the key is not watched yet: the wait's {@link TurnWatch} is
   * {@link adopt}ed once it holds, or {@link watchKey} starts the key's own watch.
   */
  constructor(session: Session, entry: LineEntry, what: string, watchKey = true) {
    this.#session = session;
    this.key = entry.key;
    this.createRevision = entry.createRevision;
    this.#header = entry.header;
    this.#what = what;
    this.#seenAt = entry.header.revision;
    this.#onSessionDone = () =>
      this.#lose(
        new LockLostError(
          this.key,
          this.createRevision,
          `${what} ${this.key} may be lost: the session ended`,
          { cause: session.signal.reason },
        ),
      );
    if (session.signal.aborted) {
      this.#onSessionDone();
      return;
    }
    session.signal.addEventListener('abort', this.#onSessionDone, { once: true });
    if (watchKey) this.watchKey();
  }

  /** @internal Watches the key from the revision it was seen at, for its loss. */
  watchKey(): void {
    if (this.#stopping) return;
    const stop = new AbortController();
    this.#stopWatch = () => stop.abort(STOPPED);
    // Not `live`: a loss is rare, and the read that ends a wait checks the key anyway; a watch
    // from now and a read for every acquisition under contention would cost more than it saves.
    waitForDeleteOf(
      this.#session.etcd,
      this.key,
      this.#seenAt,
      { createRevision: this.createRevision, signal: stop.signal },
      false,
    ).then(
      (revision) => this.#deleted(revision),
      (error: unknown) => {
        if (!stop.signal.aborted) this.#unwatchable(error);
      },
    );
  }

  /** @internal Takes over the watch that found the turn as the key's loss watch. */
  adopt(watch: TurnWatch): void {
    if (this.#stopping) {
      watch.close();
      return;
    }
    // Closed, not aborted: a closed turn watch reports nothing more (no controller per hold).
    this.#stopWatch = () => watch.close();
    watch.onLoss({
      lost: (revision) => this.#deleted(revision),
      failed: (error) => this.#unwatchable(error),
    });
  }

  #deleted(revision: bigint): void {
    // Our own release's delete is often seen before its answer: that is no loss, unless the
    // release then fails.
    if (this.#releasing) this.#deletedWhileReleasing = revision;
    else this.#lose(this.#deletedAt(revision));
  }

  #deletedAt(revision: bigint): LockLostError {
    return new LockLostError(
      this.key,
      this.createRevision,
      `${this.#what} ${this.key} was lost: the key was deleted at revision ${revision}`,
    );
  }

  #unwatchable(error: unknown): void {
    if (this.#stopping) return;
    this.#lose(
      new LockLostError(
        this.key,
        this.createRevision,
        `${this.#what} ${this.key} may be lost: its key can no longer be watched`,
        { cause: error },
      ),
    );
  }

  /** Aborts when the hold may be lost or was released; the reason says which. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Header of the response that established the hold (the acquire txn or the final read). */
  get header(): ResponseHeader {
    return this.#header;
  }

  /** `createRevision(key) == createRevision`. */
  isOwner(): Compare {
    return cmp.createRevision(this.key, '==', this.createRevision);
  }

  /**
   * Deletes the key if it is still this incarnation. Throws LockNotHeldError when this handle
   * already released it (or is releasing it), LockLostError when the key was no longer this
   * incarnation (nothing deleted). A failure of the call itself leaves the handle as it was, so
   * the release can be retried (the compare makes a retry harmless).
   */
  async release(): Promise<void> {
    if (this.#releasing) throw new LockNotHeldError(this.key);
    this.#releasing = true;
    let deleted: boolean;
    try {
      deleted = await deleteIfCreatedAt(this.#session, this.key, this.createRevision);
    } catch (error) {
      this.#releasing = false;
      const deletedAt = this.#deletedWhileReleasing;
      if (deletedAt !== undefined) this.#lose(this.#deletedAt(deletedAt));
      throw error;
    }
    if (!deleted) {
      const lost = new LockLostError(this.key, this.createRevision);
      this.#lose(lost);
      throw lost;
    }
    // The signal's reason, never thrown from here: every release makes one.
    this.#lose(withoutStack(() => new LockNotHeldError(this.key)));
  }

  /** @internal The read that found the turn: the hold is established at its revision. */
  established(header: ResponseHeader): void {
    this.#header = header;
  }

  /** Marks the hold lost (a guarded write found it gone): the signal fires, the watch stops. */
  lose(): void {
    // Already over (a resign after its release): nothing to signal, no error to build.
    if (this.#stopping) return;
    this.#lose(new LockLostError(this.key, this.createRevision));
  }

  /** True once released through this handle (or while the release is in flight). */
  get released(): boolean {
    return this.#releasing;
  }

  #lose(reason: Error): void {
    this.#session.signal.removeEventListener('abort', this.#onSessionDone);
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
    if (this.#stopping) return;
    this.#stopping = true;
    // The watch's teardown (a cancel, maybe the stream's close) waits for the next turn of the
    // event loop: the handoff's other side, often read in the same turn, goes first.
    const stop = this.#stopWatch;
    this.#stopWatch = undefined;
    if (stop) setImmediate(stop);
  }
}

const stackLimitWritable =
  Object.getOwnPropertyDescriptor(Error, 'stackTraceLimit')?.writable === true;

/** Makes an error without capturing a stack (the costly part of making one). */
function withoutStack<E extends Error>(make: () => E): E {
  if (!stackLimitWritable) return make();
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}
