// Reopening a long-lived stream after it broke (the watch, the lease keepalive, an observation):
// one place decides whether to go on, refreshes the token, paces the reopens and reports outages.
import { ClientClosedError, type EtcdError, toEtcdError } from '../errors.js';
import { type BackoffOptions, backoffDelay } from '../transport/backoff.js';
import { streamFailure } from './retry.js';
import { sleep } from './sleep.js';
import type { Rpc } from './types.js';

/** An outage that ended: the stream answered again. */
export interface StreamOutage {
  /** From the failure that started it to the first answer of a new stream, in ms. */
  readonly disconnectedMs: number;
  /** Streams opened since the failure, the one that answered included. */
  readonly attempts: number;
}

/** How an owner's stream is resumed. */
export interface ResumeOptions {
  /** The pause before a reopen: `baseMs` after the first failure, growing while reopens fail. */
  readonly backoff: BackoffOptions;
  /** Failures in a row reopened at once, before the backoff starts. Default 0. */
  readonly immediateReopens?: number;
  /**
   * Whether a token refusal makes the owner refresh the token before reopening (default true).
   * False for a server stream: the connection already refreshed it while opening the stream.
   */
  readonly refreshesToken?: boolean;
  /** Reopen after any failure but the client closing (default false: permanent ones end it). */
  readonly untilClosed?: boolean;
  /** Whether the owner's client closed (default: the Rpc's `closed`): then it gives up. */
  readonly closed?: () => boolean;
  /** Called once per outage, with the failure that started it. */
  readonly onDisconnect?: (error: EtcdError) => void;
  /** Called when a stream answers after an outage. */
  readonly onResume?: (outage: StreamOutage) => void;
  /** The clock and timers (a test's, or the system's). */
  readonly now?: () => number;
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly random?: () => number;
}

/**
 * The resume state of one owner's stream: failures in a row, whether the token was refreshed
 * since the last answer, the outage under way. The owner opens and reads its streams and tells
 * it what happened; it says whether to go on and how long to wait.
 */
export class ResumableStream {
  readonly #rpc: Rpc;
  readonly #options: ResumeOptions;
  #failures = 0;
  #tokenRefreshed = false;
  #outage: { readonly since: number; attempts: number } | undefined;

  /** `rpc`'s optional `refreshToken` and `redial` are used when present. */
  constructor(rpc: Rpc, options: ResumeOptions) {
    this.#rpc = rpc;
    this.#options = options;
  }

  /** Failed streams since the last answer (or reset). */
  get failures(): number {
    return this.#failures;
  }

  /** A stream is being opened. */
  opening(): void {
    if (this.#outage !== undefined) this.#outage.attempts++;
  }

  /** The open stream answered: the backoff starts over, and an outage ends (`onResume`). */
  answered(): void {
    this.#failures = 0;
    this.#tokenRefreshed = false;
    const outage = this.#outage;
    if (outage === undefined) return;
    this.#outage = undefined;
    const disconnectedMs = this.#now() - outage.since;
    this.#options.onResume?.({ disconnectedMs, attempts: outage.attempts });
  }

  /** The stream was closed on purpose (nothing to carry): the next one opens at once. */
  reset(): void {
    this.#failures = 0;
  }

  /**
   * A stream failed with `error` (or could not be opened). Resolves with undefined when the owner
   * should open another after {@link pause}, with the error that ends it otherwise. A token
   * refusal refreshes the token here, once until a stream answers; then it is permanent.
   */
  async failed(error: EtcdError): Promise<EtcdError | undefined> {
    const kind = streamFailure(error);
    let stop: EtcdError | undefined;
    // An owner that never gives up refreshes at every refusal (its backoff paces them).
    const refresh = !this.#tokenRefreshed || this.#options.untilClosed === true;
    if (kind === 'token' && this.#options.refreshesToken !== false && refresh) {
      this.#tokenRefreshed = this.#rpc.refreshToken !== undefined;
      stop = this.#tokenRefreshed ? await this.refreshToken() : error;
    } else if (kind !== 'resume') {
      stop = error;
    }
    if (stop !== undefined && (!this.#options.untilClosed || stop.code === 'CLIENT_CLOSED')) {
      return stop;
    }
    if (this.#options.closed?.() ?? this.#rpc.closed === true) return new ClientClosedError();
    this.#failures++;
    if (this.#outage === undefined) {
      this.#outage = { since: this.#now(), attempts: 0 };
      this.#options.onDisconnect?.(error);
    }
    return undefined;
  }

  /**
   * Gets a new auth token (when the connection can). Resolves with undefined once done (or when
   * the connection has no `refreshToken`), with the typed error if it failed.
   */
  async refreshToken(): Promise<EtcdError | undefined> {
    try {
      await this.#rpc.refreshToken?.();
      return undefined;
    } catch (error) {
      return toEtcdError(error);
    }
  }

  /** Waits before the next open, as the failures in a row say; `signal` ends the wait early. */
  pause(signal: AbortSignal): Promise<void> {
    const immediate = this.#options.immediateReopens ?? 0;
    if (this.#failures <= immediate) return Promise.resolve();
    const ms = backoffDelay(
      this.#failures - immediate,
      this.#options.backoff,
      this.#options.random,
    );
    return (this.#options.sleep ?? sleep)(ms, signal);
  }

  /**
   * The stream on `endpoint` stopped answering although its connection looks ready (half-open
   * TCP, a frozen member): that connection is dropped, so the next stream dials afresh.
   */
  redial(endpoint: string | undefined): void {
    try {
      this.#rpc.redial?.(endpoint);
    } catch {
      // Best effort: the new stream fails and is reopened if the connection is bad.
    }
  }

  #now(): number {
    return this.#options.now?.() ?? performance.now();
  }
}
