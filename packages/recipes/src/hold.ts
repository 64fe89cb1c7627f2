// What every held key (a lock, a permit, a leadership) shares: a signal that fires as soon as the
// hold may be lost, and a release that deletes only the incarnation that was held.
import { AbortedError, type Compare, cmp, linkSignals, type ResponseHeader } from '@etcdkit/client';
import { LockLostError, LockNotHeldError, SessionExpiredError } from './errors.js';
import { GuardedTxn, type Ownership } from './fencing.js';
import { deleteIfCreatedAt, type QueueEntry, sessionEnded } from './queue-key.js';
import type { Session } from './session.js';
import { TurnWatch } from './turn-watch.js';
import {
  type OwnKey,
  ownKeyDeleted,
  type PredecessorWait,
  type QueueRead,
  readQueue,
  STOPPED,
  waitForDeleteOf,
  waitInQueue,
} from './wait.js';

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

/**
 * The shared mechanics of a held key. The public handles (Lock, Permit, Leadership) wrap one.
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
  constructor(session: Session, entry: QueueEntry, what: string, watchKey = true) {
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

/** What {@link waitToHold} waits for. */
export interface Turn {
  /** The queue the waiter's predecessors are in (for a reader of an RWMutex: only the writers). */
  readonly prefix: string;
  /** The waiter's own key. */
  readonly entry: QueueEntry;
  /** Holders admitted at once; default 1. */
  readonly slots?: number;
  /** What is held, for messages: 'lock', 'permit', 'leadership'. */
  readonly what: string;
  /** The caller's signal. */
  readonly signal: AbortSignal | undefined;
}

/**
 * Waits until the entry's turn comes and returns the Holding of its key. The Holding watches the
 * key from the moment it queued, so one watch serves both the wait (its loss ends the wait at once:
 * etcd issue 19597, Go waits on) and the hold that follows; the read that finds no predecessor
 * left also checks the key is still the incarnation that queued (etcd issues 11456 and 11051: Go
 * reported success without it).
 *
 * Fails with SessionExpiredError when the session ends or the key vanishes, with AbortedError when
 * the caller's signal aborts, or with the error of a read or of the key's watch.
 */
export async function waitToHold(session: Session, turn: Turn): Promise<Holding> {
  const { entry, signal } = turn;
  const slots = turn.slots ?? 1;
  const ahead = slots === 1 ? rangeAhead(entry, turn.prefix) : undefined;
  const holding = new Holding(session, entry, turn.what, ahead === undefined);
  // Linked by hand, and let go of at the end: the caller's signal outlives the wait. Without one,
  // the holding's own signal serves (a link would only follow it, with the same reason).
  const both =
    signal === undefined ? unlinked(holding.signal) : linkSignals(signal, holding.signal);
  const ownKey = {
    key: entry.key,
    createRevision: entry.createRevision,
    seenAt: entry.header.revision,
  };
  const wait = { prefix: turn.prefix, createRevision: entry.createRevision, ownKey };
  try {
    if (ahead !== undefined) {
      if (await holdOnTurn(session, holding, wait, ahead, both.signal)) return holding;
      // The watch's start was compacted: the key's own watch, and the queue read again.
      holding.watchKey();
    }
    const header = await waitInQueue(
      session.etcd,
      // What the creating txn read is the newest predecessor only: enough for one slot.
      { ...wait, ahead: slots === 1 && ahead === undefined ? entry.ahead : undefined },
      slots,
      both.signal,
    );
    holding.established(header);
    return holding;
  } catch (error) {
    const failure = whyNotHeld(error, session, holding, signal);
    holding.lose();
    throw failure;
  } finally {
    both.release();
  }
}

const noRelease = (): void => {};

/** A signal used as it is, in the shape of a link. */
function unlinked(signal: AbortSignal): { readonly signal: AbortSignal; release(): void } {
  return { signal, release: noRelease };
}

/**
 * The line ahead as the txn that queued the entry read it (its newest key at least), when one
 * range over the key ahead and the own key can wait for the turn: the own key is in the same line
 * (not so for an RWMutex reader) and was created by that txn (a key found existing has no read).
 */
function rangeAhead(entry: QueueEntry, prefix: string): QueueRead | undefined {
  const ahead = entry.ahead;
  if (ahead?.predecessors[0] === undefined || !entry.key.startsWith(prefix)) return undefined;
  return ahead;
}

/**
 * Waits for the turn with ONE watch over the newest key ahead and the own key (see
 * {@link TurnWatch}), which then stays as the hold's loss watch: true once held, false when the
 * watch's start was compacted (nothing held yet). When the key ahead goes and a read finds another
 * one ahead, that watch is closed and one over the next key ahead takes over (from just after the
 * read, which checked the own key). Rejects with SessionExpiredError when the own key went first.
 */
async function holdOnTurn(
  session: Session,
  holding: Holding,
  wait: PredecessorWait & { readonly ownKey: OwnKey },
  first: QueueRead,
  signal: AbortSignal,
): Promise<boolean> {
  const kv = session.etcd;
  // A read of the queue (which checks our key): after the key ahead went, or when the watch
  // started behind the store.
  const recheck = (stop: AbortSignal) => readQueue(kv, wait, 1, stop);
  let read = first;
  for (;;) {
    const ahead = read.predecessors[0];
    if (ahead === undefined) {
      // Only a read after the first one finds the line empty (the queuing txn's would hold).
      holding.established(read.header);
      holding.watchKey();
      return true;
    }
    const last = read.complete === true && read.predecessors.length === 1;
    const watch = new TurnWatch(
      kv,
      { own: wait.ownKey.key, ahead: ahead.key, last },
      read.header.revision + 1n,
      recheck,
      signal,
    );
    const outcome = await watch.turn;
    if ('held' in outcome) {
      holding.established(outcome.held);
      holding.adopt(watch);
      return true;
    }
    watch.close();
    if ('lostAt' in outcome) throw ownKeyDeleted(wait.ownKey.key, outcome.lostAt);
    if ('compacted' in outcome) return false;
    read = outcome.next;
  }
}

/** The error a wait ended by the loss of its key (or session) reports. */
function whyNotHeld(
  error: unknown,
  session: Session,
  holding: Holding,
  signal: AbortSignal | undefined,
): unknown {
  if (!(error instanceof AbortedError) || signal?.aborted) return error;
  if (session.isDone) return sessionEnded(session, error);
  const lost: unknown = holding.signal.reason;
  const cause = lost instanceof LockLostError ? lost.cause : undefined;
  // The key's watch failed for good: that failure, not a guess about the key.
  if (cause !== undefined) return cause;
  return new SessionExpiredError(
    `${holding.key} was deleted while waiting (its lease expired or was revoked, or it was deleted)`,
    { key: holding.key },
  );
}

/**
 * What every held key offers (a {@link Lock}, a {@link Permit}, a {@link Leadership}): its key and
 * fencing token, a signal that fires when the hold may be lost, the ownership compare, and txns
 * guarded by it.
 */
export abstract class Hold implements Ownership {
  /** @internal */
  protected readonly holding: Holding;

  /** @internal Holds are made by the recipes. */
  constructor(
    /** The session the hold's key is attached to. */
    readonly session: Session,
    holding: Holding,
  ) {
    this.holding = holding;
  }

  /** The key that holds it. */
  get key(): string {
    return this.holding.key;
  }

  /**
   * The create revision of the key. Successive holders of a lock get strictly increasing tokens:
   * give it to the resource the lock protects so it can refuse stale holders (see
   * {@link FencedResource}).
   */
  get fencingToken(): bigint {
    return this.holding.createRevision;
  }

  /** Header of the response that established the hold (the acquire txn or the final read). */
  get header(): ResponseHeader {
    return this.holding.header;
  }

  /**
   * Aborts as soon as the hold may be lost: the session ended (lease expired or revoked, keepalive
   * timed out, client closed), the key was deleted or re-created, or it was released through this
   * handle. The reason is a LockLostError (LockNotHeldError after a release). Not aborted does NOT
   * prove ownership: the server may expire the lease before this process hears of it, so fence
   * what the hold protects ({@link txn}, {@link fencingToken}).
   */
  get signal(): AbortSignal {
    return this.holding.signal;
  }

  /**
   * The compare `createRevision(key) == fencingToken`: put it in your own txns so they apply only
   * while this is held. It fails after expiry, release, or re-creation of the key by the same
   * session (which a `version > 0` guard would not catch).
   */
  isOwner(): Compare {
    return this.holding.isOwner();
  }

  /**
   * A txn that applies only while this is held: your compares and branches, wrapped in the
   * ownership compare; a commit that finds it lost rejects with LockLostError and applies nothing.
   * See {@link GuardedTxn}.
   */
  txn(): GuardedTxn {
    return new GuardedTxn(this.session.etcd, this);
  }
}
