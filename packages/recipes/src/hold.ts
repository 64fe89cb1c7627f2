// What every held key (a lock, a permit, a leadership) shares: a signal that fires as soon as the
// hold may be lost, and a release that deletes only the incarnation that was held.
import { AbortedError, type Compare, cmp, linkSignals, type ResponseHeader } from '@etcdkit/client';
import { LockLostError, LockNotHeldError, SessionExpiredError } from './errors.js';
import { GuardedTxn, type Ownership } from './fencing.js';
import { deleteIfCreatedAt, type QueueEntry, sessionEnded } from './queue-key.js';
import type { Session } from './session.js';
import { waitForDeleteOf, waitInQueue } from './wait.js';

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
  readonly #stopWatch = new AbortController();
  #releasing = false;
  #deletedWhileReleasing: LockLostError | undefined;
  readonly #onSessionDone: () => void;

  constructor(session: Session, entry: QueueEntry, what: string) {
    this.#session = session;
    this.key = entry.key;
    this.createRevision = entry.createRevision;
    this.#header = entry.header;
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
    // Not `live`: a loss is rare, and the read that ends a wait checks the key anyway; a watch
    // from now and a read for every acquisition under contention would cost more than it saves.
    waitForDeleteOf(
      session.etcd,
      this.key,
      entry.header.revision,
      { createRevision: entry.createRevision, signal: this.#stopWatch.signal },
      false,
    ).then(
      (revision) => {
        const lost = new LockLostError(
          this.key,
          this.createRevision,
          `${what} ${this.key} was lost: the key was deleted at revision ${revision}`,
        );
        // Our own release's delete is often seen before its answer: that is no loss, unless the
        // release then fails.
        if (this.#releasing) this.#deletedWhileReleasing = lost;
        else this.#lose(lost);
      },
      (error: unknown) => {
        if (this.#stopWatch.signal.aborted) return;
        this.#lose(
          new LockLostError(
            this.key,
            this.createRevision,
            `${what} ${this.key} may be lost: its key can no longer be watched`,
            { cause: error },
          ),
        );
      },
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
      if (this.#deletedWhileReleasing) this.#lose(this.#deletedWhileReleasing);
      throw error;
    }
    if (!deleted) {
      const lost = new LockLostError(this.key, this.createRevision);
      this.#lose(lost);
      throw lost;
    }
    this.#lose(new LockNotHeldError(this.key));
  }

  /** @internal The read that found the turn: the hold is established at its revision. */
  established(header: ResponseHeader): void {
    this.#header = header;
  }

  /** Marks the hold lost (a guarded write found it gone): the signal fires, the watch stops. */
  lose(): void {
    this.#lose(new LockLostError(this.key, this.createRevision));
  }

  /** True once released through this handle (or while the release is in flight). */
  get released(): boolean {
    return this.#releasing;
  }

  #lose(reason: Error): void {
    this.#stopWatch.abort();
    this.#session.signal.removeEventListener('abort', this.#onSessionDone);
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
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
  const holding = new Holding(session, entry, turn.what);
  // Linked by hand, and let go of at the end: the caller's signal outlives the wait.
  const both = linkSignals(signal, holding.signal);
  try {
    const slots = turn.slots ?? 1;
    const header = await waitInQueue(
      session.etcd,
      {
        prefix: turn.prefix,
        createRevision: entry.createRevision,
        ownKey: {
          key: entry.key,
          createRevision: entry.createRevision,
          seenAt: entry.header.revision,
        },
        // What the creating txn read is the newest predecessor only: enough for one slot.
        ahead: slots === 1 ? entry.ahead : undefined,
      },
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
