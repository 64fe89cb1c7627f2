// What every held key (a lock, a permit, a leadership) offers its user; the mechanics behind it
// (the loss watch, the guarded release) are line/place.ts's Holding. Here: how a hold's end is
// told, one rule for every path (the signal, unlock, withLock, `await using`).
import { type Compare, LeaseLostError, type ResponseHeader } from '@etcdkit/client';
import { LockLostError, LockNotHeldError, type RecipeError } from '../errors.js';
import type { Holding } from '../line/place.js';
import type { Session } from '../session/session.js';
import { GuardedTxn, type Ownership } from './fencing.js';

/** Session endings this process chose: the holds on it were released, not lost. */
const OWN_ENDINGS: ReadonlySet<string> = new Set(['revoked', 'released', 'client-closed']);

/**
 * What every held key offers (a {@link Lock}, a {@link Permit}, a {@link Leadership}): its key and
 * fencing token, a signal that fires when the hold may be lost, the ownership compare, and txns
 * guarded by it.
 */
export abstract class Hold implements Ownership {
  /** @internal */
  protected readonly holding: Holding;
  #signal: AbortSignal | undefined;

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
   * Aborts as soon as the hold may be lost, or once this process ended it. Its reason says which:
   * - lost: LockLostError (LeadershipLostError for a leadership), when the key was deleted or
   *   re-created, its watch failed for good, or the session ended without this process ending it
   *   (lease expired or revoked elsewhere, keepalive timed out);
   * - released: LockNotHeldError, after an unlock or resign through this handle, or when this
   *   process closed or orphaned the session, or closed the client (which closes its sessions).
   *
   * Not aborted does NOT prove ownership: the server may expire the lease before this process
   * hears of it, so fence what the hold protects ({@link txn}, {@link fencingToken}).
   */
  get signal(): AbortSignal {
    this.#signal ??= followed(this.holding.signal, (reason) => this.#told(reason));
    return this.#signal;
  }

  /** @internal The Holding's own signal (its raw reasons), for the recipes' bookkeeping. */
  get ended(): AbortSignal {
    return this.holding.signal;
  }

  /**
   * @internal The error a loss of this hold is reported with; a leadership has its own. Also used
   * by a guarded txn that found the hold gone.
   */
  lostError(key: string, token: bigint, message?: string, cause?: unknown): RecipeError {
    return new LockLostError(key, token, message, { cause });
  }

  /** What the Holding's `reason` tells the user (see {@link signal}). */
  #told(reason: unknown): unknown {
    if (!(reason instanceof LockLostError)) return reason;
    const ownEnding = this.#ownEnding(reason);
    if (ownEnding !== undefined) {
      return new LockNotHeldError(
        this.key,
        `${this.key} was released: this process ended its session (${ownEnding.reason})`,
        { cause: ownEnding },
      );
    }
    return this.lostError(reason.key, reason.fencingToken, reason.message, reason.cause);
  }

  /** The session's end, when `lost` is the hold's end by it and this process chose it. */
  #ownEnding(lost: LockLostError): LeaseLostError | undefined {
    const sessionEnd: unknown = this.session.signal.reason;
    if (lost.cause === undefined || lost.cause !== sessionEnd) return undefined;
    return sessionEnd instanceof LeaseLostError && OWN_ENDINGS.has(sessionEnd.reason)
      ? sessionEnd
      : undefined;
  }

  /** @internal True once this process ended the hold: released through it, or its session ended. */
  protected get endedHere(): boolean {
    if (this.holding.released) return true;
    const reason: unknown = this.holding.signal.reason;
    if (!this.holding.signal.aborted) return false;
    if (reason instanceof LockNotHeldError) return true;
    return reason instanceof LockLostError && this.#ownEnding(reason) !== undefined;
  }

  /**
   * @internal Ends the hold as the end of an `await using` block does (and `withLock`): nothing
   * when this process already ended it; else the guarded release. A key found gone or re-created
   * is the loss error; a release that fails while the hold is already known to be possibly lost
   * reports that loss (nothing proves otherwise); any other failure is the call's.
   */
  protected async end(): Promise<void> {
    if (this.endedHere) return;
    try {
      await this.holding.release();
    } catch (error) {
      if (error instanceof LockLostError) {
        throw this.lostError(error.key, error.fencingToken, error.message, error.cause);
      }
      const { signal } = this;
      if (signal.aborted && !(signal.reason instanceof LockNotHeldError)) throw signal.reason;
      throw error;
    }
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
   * ownership compare; a commit that finds it lost rejects with LockLostError (LeadershipLostError
   * for a leadership) and applies nothing.
   * See {@link GuardedTxn}.
   */
  txn(): GuardedTxn {
    return new GuardedTxn(this.session.etcd, this);
  }
}

/**
 * A signal that aborts when `source` does, with `tell(source.reason)` as its reason. Made on first
 * use, so a hold whose signal is never read costs no listener.
 */
function followed(source: AbortSignal, tell: (reason: unknown) => unknown): AbortSignal {
  if (source.aborted) return AbortSignal.abort(tell(source.reason));
  const controller = new AbortController();
  source.addEventListener('abort', () => controller.abort(tell(source.reason)), { once: true });
  return controller.signal;
}
