// A session that outlives its leases: a lost lease is replaced and the registrations run again on
// the new one; what the old Session held is still reported lost through its signal.
import {
  ClientClosedError,
  type Etcd,
  type EtcdError,
  type LeaseLostError,
  LeaseNotFoundError,
} from '@etcdkit/client';
import { linkSignals, toEtcdError } from '@etcdkit/client/internal';
import { EventEmitter } from 'eventemitter3';
import { SessionExpiredError } from '../errors.js';
import { backoffDelay, pause, type StmBackoff } from '../stm/backoff.js';
import { CLIENT_CLOSE_REVOKE_MS, Session } from './session.js';

/** Options of {@link ResilientSession.create}. */
export interface ResilientSessionOptions {
  /** TTL of each lease, in whole seconds. Default 60 (as {@link Session}). */
  readonly ttl?: number;
  /**
   * Pauses between attempts to grant a new lease or to re-run a registration: random, up to
   * `minDelayMs * 2^(attempt - 1)`, at most `maxDelayMs`. Default 100 and 5 000 ms.
   */
  readonly retry?: StmBackoff;
}

/** What {@link ResilientSession.register} re-runs on every new session. */
export type SessionSetup = (session: Session) => Promise<void> | void;

/** The events of a {@link ResilientSession}. */
export interface ResilientSessionEvents {
  /**
   * `session` ended without {@link ResilientSession.close}: whatever was held under its lease is
   * lost (its locks' and leaderships' signals have fired). A new session follows.
   */
  lost: (error: LeaseLostError, session: Session) => void;
  /** `session`, with a new lease, replaced a lost one; the registrations run on it next. */
  renewed: (session: Session) => void;
  /** Granting a new lease, or a registration on one, failed; it is tried again after a pause. */
  failed: (error: EtcdError) => void;
  /** The resilient session ended for good: closed, or its client was closed. */
  end: () => void;
}

const DEFAULT_RETRY: Required<StmBackoff> = { minDelayMs: 100, maxDelayMs: 5_000 };

/**
 * A {@link Session} that is replaced by a new one, with a new lease, whenever its lease is lost
 * (expired, revoked elsewhere, or no keepalive reply within the TTL), until {@link close}.
 *
 * Semantics, exactly:
 * - At any time there is at most one current session ({@link current}); between a loss and the
 *   renewal there is none. A lost session never comes back, and nothing held on it moves to the
 *   new one: a Mutex lock or a Leadership built on the old session has its signal fired (the old
 *   session is done) and stays lost. Re-acquiring is the owner's choice, in a registration.
 * - When the loss may have left the lease alive on the server (reason `timeout` or `released`),
 *   the old lease is revoked before the new one is granted, so its keys go and nothing of it
 *   lingers until its TTL. Grant attempts are retried with backoff for as long as etcd cannot be
 *   reached; each failure is reported as `failed`.
 * - {@link register}ed setups run on every new session, in parallel, each retried with backoff on
 *   that session while it is current (`failed` on each failure). The first run of a setup decides
 *   {@link register}'s outcome: its failure rejects and the setup is not kept.
 * - {@link close} revokes the current lease (every key attached to it goes in one revision) and
 *   stops everything; closing the client closes it too, first (`end`). Closing or orphaning the current
 *   Session directly counts as a loss: a new session replaces it.
 *
 * @example
 * ```ts
 * const resilient = await ResilientSession.create(etcd, { ttl: 10 });
 * resilient.on('lost', (error) => console.log(`lease lost (${error.reason}), renewing`));
 * await resilient.register(async (session) => {
 *   await session.etcd.put('workers/a', 'ready', { lease: session.leaseId });
 * });
 * ```
 */
export class ResilientSession
  extends EventEmitter<ResilientSessionEvents>
  implements AsyncDisposable
{
  readonly #ttl: number | undefined;
  readonly #retry: Required<StmBackoff>;
  readonly #registrations = new Set<SessionRegistration>();
  readonly #stop = new AbortController();
  #current: Session | undefined;
  #renewals = 0;
  #waiters: Array<{
    resolve: (session: Session) => void;
    reject: (error: EtcdError<string>) => void;
  }> = [];
  #closing: Promise<void> | undefined;
  #ended = false;
  /** Forgets this one in the client's close (once it ended on its own). */
  readonly #forget: () => void;
  /** A lost lease that may still live on the server and is not revoked yet. */
  #unrevoked: bigint | undefined;

  private constructor(
    /** The client every session of it is created on. */
    readonly etcd: Etcd,
    options: ResilientSessionOptions,
    first: Session,
  ) {
    super();
    this.#ttl = options.ttl;
    this.#retry = { ...DEFAULT_RETRY, ...options.retry };
    // Closing the client closes this first: its sessions' revokes are not losses to renew after.
    this.#forget = etcd.ownedByClient(() => this.#closeWithClient());
    this.#adopt(first);
  }

  /** Grants the first lease (its failure rejects, like {@link Session.create}) and starts. */
  static async create(
    etcd: Etcd,
    options: ResilientSessionOptions = {},
  ): Promise<ResilientSession> {
    const first = await Session.create(etcd, { ttl: options.ttl });
    return new ResilientSession(etcd, options, first);
  }

  /** The current session; undefined between a loss and its renewal, and after the end. */
  get current(): Session | undefined {
    return this.#current;
  }

  /** How many times a lost session was replaced. */
  get renewals(): number {
    return this.#renewals;
  }

  /** True once closed, or once its client was closed. */
  get closed(): boolean {
    return this.#ended || this.#closing !== undefined;
  }

  /**
   * The current session, or the next one when there is none (after a loss). Rejects with
   * SessionExpiredError (ClientClosedError as cause when the client closed) once it has ended.
   */
  session(): Promise<Session> {
    if (this.#current) return Promise.resolve(this.#current);
    if (this.closed) return Promise.reject(this.#endError());
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  /**
   * Runs `setup` on the current session now (or on the next one, after a loss) and again on every
   * session that replaces it, until the registration is removed or this ends. Resolves once the
   * first run succeeded; a failing first run rejects with its error and is not kept.
   */
  register(setup: SessionSetup): Promise<SessionRegistration> {
    if (this.closed) return Promise.reject(this.#endError());
    const registration = new SessionRegistration(setup, (r) => this.#registrations.delete(r));
    this.#registrations.add(registration);
    if (this.#current) void this.#run(registration, this.#current);
    return registration.first;
  }

  /**
   * Ends for good: no more renewals, the registrations stop, and the current lease is revoked
   * (every key attached to it goes in ONE revision). Calling it again returns the same promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /** The client's close ends this: best effort, bounded, never a failure. */
  #closeWithClient(): Promise<void> {
    this.#closing ??= this.#close({ timeoutMs: CLIENT_CLOSE_REVOKE_MS }).catch(() => {
      // A lease not revoked expires after its TTL; the client's close goes on.
    });
    return this.#closing;
  }

  /** Closes, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #close(withClient?: { readonly timeoutMs: number }): Promise<void> {
    const current = this.#current;
    const unrevoked = this.#unrevoked;
    this.#end();
    if (unrevoked !== undefined) {
      // Best effort: if etcd cannot be reached, the lease expires after its TTL anyway.
      await this.etcd.lease.revoke(unrevoked, withClient).catch(() => {});
    }
    await (withClient ? current?.closeWithClient() : current?.close());
  }

  #adopt(session: Session, renewed = false): void {
    this.#current = session;
    if (renewed) this.emit('renewed', session);
    for (const waiter of this.#waiters.splice(0)) waiter.resolve(session);
    for (const registration of this.#registrations) void this.#run(registration, session);
    void session.done.then((lost) => this.#onLost(session, lost));
  }

  #onLost(session: Session, lost: LeaseLostError): void {
    if (this.closed || this.#current !== session) return;
    this.#current = undefined;
    if (lost.reason === 'client-closed') {
      this.#end();
      return;
    }
    this.emit('lost', lost, session);
    void this.#renew(session, lost);
  }

  async #renew(old: Session, lost: LeaseLostError): Promise<void> {
    // After a timeout (or an orphan) the old lease may still live on the server with its keys.
    if (lost.reason !== 'expired' && lost.reason !== 'revoked') this.#unrevoked = old.leaseId;
    for (let attempt = 1; !this.closed; attempt++) {
      try {
        if (this.#unrevoked !== undefined) {
          await this.etcd.lease
            .revoke(old.leaseId, { signal: this.#stop.signal })
            .catch((error) => {
              if (!(error instanceof LeaseNotFoundError)) throw error;
            });
          this.#unrevoked = undefined;
        }
        const session = await Session.create(this.etcd, {
          ttl: this.#ttl,
          signal: this.#stop.signal,
        });
        this.#renewals++;
        this.#adopt(session, true);
        return;
      } catch (error) {
        if (this.closed) return;
        const failure = toEtcdError(error);
        if (failure instanceof ClientClosedError) {
          this.#end();
          return;
        }
        this.emit('failed', failure);
        await pause(backoffDelay(attempt, this.#retry), this.#stop.signal).catch(() => {});
      }
    }
  }

  async #run(registration: SessionRegistration, session: Session): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      if (registration.removed || this.#current !== session || session.isDone) return;
      try {
        await registration.setup(session);
        registration.ran(session);
        return;
      } catch (error) {
        // A run on a session that ended meanwhile is retried on the next session.
        if (registration.removed || this.#current !== session || session.isDone) return;
        const failure = toEtcdError(error);
        if (!registration.confirmed) {
          registration.fail(failure);
          return;
        }
        this.emit('failed', failure);
        const stop = linkSignals(session.signal, this.#stop.signal);
        await pause(backoffDelay(attempt, this.#retry), stop.signal).catch(() => {});
        stop.release();
      }
    }
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#forget();
    this.#current = undefined;
    this.#stop.abort();
    const error = this.#endError();
    for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
    for (const registration of this.#registrations) registration.fail(error);
    this.#registrations.clear();
    this.emit('end');
  }

  #endError(): SessionExpiredError {
    return new SessionExpiredError(
      'the resilient session has ended (closed, or its client closed)',
    );
  }
}

/** A setup kept by {@link ResilientSession.register}, re-run on every new session. */
export class SessionRegistration {
  /** @internal */
  readonly first: Promise<SessionRegistration>;
  #resolve!: (registration: SessionRegistration) => void;
  #reject!: (error: EtcdError<string>) => void;
  #confirmed = false;
  #removed = false;
  #session: Session | undefined;

  readonly #onRemove: (registration: SessionRegistration) => void;

  /** @internal */
  constructor(
    /** @internal */
    readonly setup: SessionSetup,
    onRemove: (registration: SessionRegistration) => void,
  ) {
    this.#onRemove = onRemove;
    this.first = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // The caller of register() awaits it; a caller that does not must not see an unhandled rejection.
    this.first.catch(() => {});
  }

  /** The session the setup last completed on (it may be done since). */
  get session(): Session | undefined {
    return this.#session;
  }

  /** True once {@link remove} was called (or the resilient session ended). */
  get removed(): boolean {
    return this.#removed;
  }

  /** @internal True once a run succeeded. */
  get confirmed(): boolean {
    return this.#confirmed;
  }

  /**
   * Stops re-running the setup. What it did on the current session stays (keys attached to the
   * lease go when the lease does).
   */
  remove(): void {
    if (this.#removed) return;
    this.#removed = true;
    this.#onRemove(this);
  }

  /** @internal */
  ran(session: Session): void {
    this.#session = session;
    if (!this.#confirmed) {
      this.#confirmed = true;
      this.#resolve(this);
    }
  }

  /** @internal Rejects the first run (no effect once confirmed) and removes the registration. */
  fail(error: EtcdError<string>): void {
    this.remove();
    if (!this.#confirmed) this.#reject(error);
  }
}
