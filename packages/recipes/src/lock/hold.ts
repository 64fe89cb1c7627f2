// What every held key (a lock, a permit, a leadership) offers its user; the mechanics behind it
// (the loss watch, the guarded release) are line/place.ts's Holding.
import type { Compare, ResponseHeader } from '@etcdkit/client';
import type { Holding } from '../line/place.js';
import type { Session } from '../session/session.js';
import { GuardedTxn, type Ownership } from './fencing.js';

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
