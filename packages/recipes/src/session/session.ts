// A session: one kept-alive lease that the keys of every recipe built on it are attached to; when
// it ends, everything it held must be treated as lost.
import {
  type Acknowledged,
  type CallOptions,
  ClientClosedError,
  type Etcd,
  Lease,
  type LeaseLostError,
  LeaseNotFoundError,
  OutcomeUnknownError,
} from '@etcdkit/client';
import { Slots } from '@etcdkit/client/internal';
import { throwIfAborted } from '../errors.js';

/** Options of {@link Session.create}. */
export interface SessionOptions {
  /**
   * TTL of a new lease, in whole seconds. Default 60. The server raises a TTL below its minimum
   * (`ceil(1.5 x election timeout)`, 2 s with etcd's defaults): {@link Session.ttl} is the
   * effective one. Ignored when `lease` is given.
   */
  readonly ttl?: number;
  /**
   * Adopt this existing lease instead of granting one (for example to take back, after a restart,
   * the locks and leadership a previous process held under it). It must still be alive: a lease
   * the server no longer knows fails the creation with LeaseNotFoundError. An adopted lease is
   * never revoked by a failed creation.
   */
  readonly lease?: bigint;
  /**
   * Aborting it cancels the creation (AbortedError; a lease granted by then is revoked), and
   * afterwards ends the session like {@link Session.orphan}.
   */
  readonly signal?: AbortSignal;
}

const DEFAULT_TTL_SECONDS = 60;
/**
 * @internal How long closing the client waits for a session's revoke; a lease not revoked expires
 * after its TTL anyway.
 */
export const CLIENT_CLOSE_REVOKE_MS = 2_000;

/**
 * A lease kept alive for as long as the process wants the locks, leaderships and other keys
 * attached to it. Every recipe object (Mutex, Election...) is built on a session; they share its
 * lease, so keys of one session vanish together when it ends.
 *
 * The lease is refreshed every TTL/3 (with the TTL of the last reply) over the client's shared
 * keepalive stream. The session is *done* when a reply reports TTL <= 0, when no reply came within
 * the TTL of the last one, on {@link close} (also when its client closes: the client closes its
 * sessions first) or {@link orphan}: then {@link signal} aborts and {@link done} resolves, with the
 * client's LeaseLostError (`reason` says why). The locks and leaderships of a session this process
 * closed or orphaned are released, not lost (see `Hold.signal`).
 *
 * "Not done" never proves ownership: the server counts the TTL on its own clock and can expire the
 * lease before this process notices. Protect what a lock guards with its fencing token (see
 * `guardedTxn` and `FencedResource`), not with the session's liveness.
 *
 * @example
 * ```ts
 * await using session = await Session.create(etcd, { ttl: 10 });
 * const lock = await new Mutex(session, 'locks/orders').lock();
 * ```
 */
export class Session implements AsyncDisposable {
  /** @internal What the recipes keep per session (a Mutex's calls, the STM key queues...). */
  readonly slots = new Slots();
  #closing: Promise<void> | undefined;

  private constructor(
    /** The client every call of the session and its recipes goes through. */
    readonly etcd: Etcd,
    /** The session's lease handle (the client's), kept alive. */
    readonly lease: Lease,
    signal: AbortSignal | undefined,
  ) {
    // Closing the client closes the session first, while its revoke can still be sent.
    const forget = etcd.ownedByClient(() => this.closeWithClient());
    void lease.lost.then((lost) => {
      // Orphaned or lost: nothing left to revoke. Closed: the client waits for that revoke.
      if (lost.reason !== 'revoked') forget();
    });
    if (signal) {
      const onAbort = () => this.orphan();
      signal.addEventListener('abort', onAbort, { once: true });
      // The listener goes once the session is done, whatever ended it.
      void lease.lost.then(() => signal.removeEventListener('abort', onAbort));
    }
  }

  /**
   * Grants a lease of `ttl` seconds (or adopts `options.lease`) and starts keeping it alive.
   * If anything fails after a grant, the granted lease is revoked before the error is thrown, so
   * a failed creation leaks nothing (Go's NewSession leaks it).
   */
  static async create(etcd: Etcd, options: SessionOptions = {}): Promise<Session> {
    const { signal } = options;
    throwIfAborted(signal);
    if (options.lease !== undefined) return Session.#adopt(etcd, options.lease, signal);
    const ttl = options.ttl ?? DEFAULT_TTL_SECONDS;
    // The signal is checked after the grant rather than passed to it: a grant aborted in flight
    // may still create a lease whose id we would never learn, and so could not revoke.
    const lease = await etcd.lease.grant(ttl);
    try {
      throwIfAborted(signal);
      lease.keepAlive();
      return new Session(etcd, lease, signal);
    } catch (error) {
      await lease.revoke().catch(() => {
        // The lease expires on its own after its TTL if this fails too; the first error matters.
      });
      throw error;
    }
  }

  static async #adopt(etcd: Etcd, id: bigint, signal: AbortSignal | undefined): Promise<Session> {
    const alive = await etcd.lease.timeToLive(id, { signal });
    if (alive.ttl <= 0n) {
      throw new LeaseNotFoundError({
        message: `etcdserver: requested lease not found (lease ${id.toString(16)} cannot be adopted)`,
      });
    }
    throwIfAborted(signal);
    const lease = new Lease(etcd.lease, id, alive.grantedTtl, alive.header);
    lease.keepAlive();
    return new Session(etcd, lease, signal);
  }

  /** The lease id; keys of this session's recipes are attached to it. */
  get leaseId(): bigint {
    return this.lease.id;
  }

  /** The effective TTL of the lease, in seconds (after the server applied its minimum). */
  get ttl(): bigint {
    return this.lease.ttl;
  }

  /**
   * Aborts when the session is done (see the class doc); its reason is the client's
   * LeaseLostError. Pass it to work that must stop when the session can no longer hold anything.
   */
  get signal(): AbortSignal {
    return this.lease.signal;
  }

  /** Resolves (never rejects) with the LeaseLostError once the session is done. */
  get done(): Promise<LeaseLostError> {
    return this.lease.lost;
  }

  /** True once the session is done. */
  get isDone(): boolean {
    return this.lease.signal.aborted;
  }

  /**
   * Ends the session and revokes its lease: every key attached to it (locks, leaderships,
   * queue entries) is deleted in ONE revision. The keepalive stops before the revoke so no refresh
   * races it. A lease that had already expired is not an error. Calling it again returns the
   * same promise.
   *
   * Closing the client closes its sessions first (their revoke bounded to 2 s, best effort: a
   * lease not revoked expires after its TTL); a `close()` (or `await using` disposal) after that
   * does nothing and resolves.
   */
  close(): Promise<void> {
    this.#closing ??= this.#revoke();
    return this.#closing;
  }

  /** @internal The client's close ends the session: best effort, bounded, never a failure. */
  closeWithClient(): Promise<void> {
    // Orphaned, expired or revoked already: nothing of it left for the client to end.
    if (this.#closing === undefined && this.isDone) return Promise.resolve();
    this.#closing ??= this.#revoke({ timeoutMs: CLIENT_CLOSE_REVOKE_MS }).catch(() => {
      // The lease expires after its TTL; the client's close goes on.
    });
    return this.#closing;
  }

  async #revoke(options?: CallOptions): Promise<void> {
    let revoke: Promise<Acknowledged>;
    try {
      revoke = this.lease.revoke(options);
    } catch (error) {
      revoke = Promise.reject(error);
    }
    try {
      await revoke;
    } catch (error) {
      // Already gone (expired, revoked elsewhere): the keys went with it, which is what close wants.
      if (error instanceof LeaseNotFoundError) return;
      // The client was closed: its close ended the session already (the lease, if it could not be
      // revoked, expires after its TTL), so there is nothing left to do here. A revoke the close
      // cut off in flight is outcome-unknown for that reason.
      if (closedClient(error)) return;
      throw error;
    }
  }

  /**
   * Ends the session without revoking the lease: the keepalive stops and the lease, with its keys,
   * lives until its TTL runs out (unless another process adopts and keeps it alive). Use it when
   * the connection state is unknown, or to hand the lease over.
   */
  orphan(): void {
    this.lease.release();
  }

  /** Closes the session, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** True for a call refused, or cut off in flight, because its client was closed. */
function closedClient(error: unknown): boolean {
  if (error instanceof ClientClosedError) return true;
  return error instanceof OutcomeUnknownError && error.cause instanceof ClientClosedError;
}
