// The connection: endpoints with failover, auth token, require-leader metadata, deadlines and the
// retry policy, on top of a Transport. Services only see the `Rpc` interface it implements.
import { setMaxListeners } from 'node:events';
import { etcdErrorVariants } from '../error-table.js';
import {
  ClientClosedError,
  DeadlineExceededError,
  type EtcdError,
  InvalidConfigError,
  OrderViolationError,
  OutcomeUnknownError,
  RequestTooLargeError,
  toEtcdError,
} from '../errors.js';
import { etcdserverpb_Auth, type MethodDescriptor } from '../generated/methods.js';
import { selectTransport } from '../transport/select.js';
import {
  type BidiStream,
  type Channel,
  GrpcStatus,
  type Metadata,
  type ServerStream,
  TransportError,
} from '../transport/types.js';
import { TokenManager } from './auth.js';
import { backoffDelay } from './backoff.js';
import { CallScope } from './call-scope.js';
import { EndpointPool, type PooledEndpoint } from './endpoint-pool.js';
import { callHook } from './hooks.js';
import {
  type ConnectionOptions,
  parseEndpointList,
  type ResolvedOptions,
  resolveOptions,
} from './options.js';
import { headerRevision, type OrderingGuard, orderingGuardOf } from './ordering.js';
import { judge } from './retry.js';
import { sleep } from './sleep.js';
import type { CallOptions, RetryPolicy, Rpc } from './types.js';

/** How one attempt ended, for the retry loop. */
class AttemptFailure extends Error {
  constructor(
    readonly error: EtcdError,
    readonly retry: boolean,
    /** Retry at once without spending the budget (another endpoint, or a fresh auth token). */
    readonly immediate: boolean,
  ) {
    super(error.message);
  }
}

/** Per-call bookkeeping across attempts. */
interface CallState {
  attempts: number;
  consumed: number;
  endpoint: PooledEndpoint | undefined;
  /** Made on the first pick: most calls pick once. */
  tried: Set<PooledEndpoint> | undefined;
  /** Time this call spent waiting for each endpoint to connect, in ms; made on the first wait. */
  dialWaited: Map<PooledEndpoint, number> | undefined;
  /** Set when the server rejected this token: the next attempt refreshes it first. */
  staleToken: string | undefined;
  authRetried: boolean;
  /** An earlier attempt of this write may have been applied (see Verdict.ambiguous). */
  ambiguous: boolean;
  /** Stale answers this read got from the ordering guard's point of view. */
  violations: number;
  /** The endpoint the last attempt failed to connect to, until the next attempt picks one. */
  connectingTo?: string;
}

function newState(): CallState {
  return {
    attempts: 0,
    consumed: 0,
    endpoint: undefined,
    ambiguous: false,
    tried: undefined,
    dialWaited: undefined,
    staleToken: undefined,
    authRetried: false,
    violations: 0,
  };
}

/** How many endpoints the call has tried. */
function triedCount(state: CallState): number {
  return state.tried?.size ?? 0;
}

/** An endpoint picked for an attempt, and its channel. */
interface PickedEndpoint {
  readonly endpoint: PooledEndpoint;
  readonly channel: Channel;
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/** The random source of retries without `jitter`: a factor of exactly 1. */
const NO_JITTER = (): number => 0;

/**
 * A connection to an etcd cluster: the `Rpc` services are built on.
 *
 * - Endpoints are tried in order; a connection failure moves calls to the next endpoint and puts
 *   the failed one in backoff. Channels open lazily.
 * - Retry policy (see {@link RetryPolicy} and docs/guarantees.md): reads retry Unavailable within
 *   the budget; writes retry only when provably unsent, otherwise fail with OutcomeUnknownError.
 * - Auth: with `auth`, a token is obtained before the first call, sent as `token` metadata on
 *   calls and streams, and refreshed once on "invalid auth token".
 * - Every failure is a typed {@link EtcdError}.
 *
 * ```ts
 * const conn = new Connection({ endpoints: ['http://127.0.0.1:2379'] });
 * const res = await conn.unary(etcdserverpb_KV.Range, { key }, 'read');
 * await conn.close();
 * ```
 */
export class Connection implements Rpc {
  readonly #options: ResolvedOptions;
  readonly #pool: EndpointPool;
  readonly #auth: TokenManager | undefined;
  readonly #closing = new AbortController();
  readonly #pending = new Set<Promise<unknown>>();
  /** Unary calls in flight: counted in #unary itself, which spares each a tracking promise. */
  #unaryInFlight = 0;
  /** Set by close() while it waits for the unary calls in flight to end. */
  #unaryDrained: (() => void) | undefined;
  readonly #baseMetadata: Metadata;
  /** The read-ordering guard, with the `ordering` option. */
  readonly #ordering: OrderingGuard | undefined;
  #closed: Promise<void> | undefined;

  /**
   * Validates the options (throwing InvalidConfigError on a bad endpoint, scheme mix, half a TLS
   * key pair...) and prepares the endpoints. Nothing is connected until the first call.
   */
  constructor(options: ConnectionOptions) {
    const o = resolveOptions(options);
    this.#options = o;
    // Every call in flight listens to the closing signal; many concurrent calls are normal.
    setMaxListeners(Number.POSITIVE_INFINITY, this.#closing.signal);
    const onSwitch = o.hooks?.onEndpointSwitch;
    this.#pool = new EndpointPool({
      endpoints: o.endpoints,
      transport: selectTransport(options.transport),
      channel: {
        tls: o.tls,
        maxReceiveMessageBytes: o.maxCallRecvMsgSize,
        maxSendMessageBytes: o.maxCallSendMsgSize,
        keepaliveIntervalMs: o.keepaliveIntervalMs,
        keepaliveTimeoutMs: o.keepaliveTimeoutMs,
      },
      backoff: { baseMs: 200, maxMs: 10_000 },
      onSwitch: onSwitch && ((event) => callHook(onSwitch, event)),
    });
    const auth = o.auth;
    this.#auth = auth
      ? new TokenManager(
          () =>
            this.#track(
              this.#unary(
                etcdserverpb_Auth.Authenticate,
                { name: auth.username, password: auth.password },
                'read',
                undefined,
                true,
              ),
            ).then((res) => res.token),
          o.hooks?.onAuthRefresh && ((event) => callHook(o.hooks?.onAuthRefresh, event)),
        )
      : undefined;
    this.#baseMetadata = o.requireLeader ? { hasleader: 'true' } : {};
    this.#ordering = orderingGuardOf(options.ordering, (m) => new InvalidConfigError(m));
  }

  /**
   * The highest revision a response header has shown this client, with the `ordering` option
   * (0n before the first answer); undefined without it.
   */
  get seenRevision(): bigint | undefined {
    return this.#ordering?.seen;
  }

  /** The endpoint URLs calls use, normalised (`http://host:port`): configured, or last set. */
  get endpoints(): readonly string[] {
    return this.#pool.endpoints.map((e) => e.url);
  }

  /**
   * Replaces the endpoint list while the client runs (what `Etcd.syncEndpoints` does with the
   * cluster's member list). URLs are validated like the `endpoints` option and must use the scheme
   * the client was created with (its TLS settings apply to every endpoint); duplicates are dropped.
   * On bad input it throws InvalidConfigError and changes nothing; after `close()`,
   * ClientClosedError.
   *
   * Calls and streams in flight finish on the endpoint they use. Endpoints still listed keep their
   * connection and backoff, and if the current one is still listed calls stay on it; otherwise the
   * next call goes to the first listed endpoint (reported by `onEndpointSwitch`). The connection of
   * a dropped endpoint closes once the calls and streams using it are done; a stream (a watch, a
   * lease keepalive) stays on it until it ends, and reopens on a listed endpoint.
   */
  setEndpoints(endpoints: readonly string[]): void {
    if (this.closed) throw new ClientClosedError();
    const parsed = parseEndpointList(endpoints);
    if (parsed[0]!.secure !== this.#options.secure) {
      const [was, is] = this.#options.secure ? ['https', 'http'] : ['http', 'https'];
      throw new InvalidConfigError(
        `endpoints use ${is} but the client was created for ${was}; the scheme cannot change`,
      );
    }
    this.#pool.replace(parsed);
  }

  /** `host:port` of the endpoint calls currently go to. */
  get currentEndpoint(): string {
    return this.#pool.current.target;
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.#closing.signal.aborted;
  }

  /** Runs one unary call under the retry policy. Rejects only with EtcdError subclasses. */
  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    retry: RetryPolicy,
    options?: CallOptions,
  ): Promise<Res> {
    return this.#unary(method, request, retry, options, false);
  }

  /**
   * Opens a server stream on a ready endpoint when iteration starts. Failures before the first
   * response are retried as `retry` allows; later failures end the iteration with a typed error.
   * `cancel()` ends a pending or later `next()` with AbortedError; `break` ends it quietly.
   * The stream's `endpoint` is the `host:port` it is open on (what {@link redial} takes): the
   * connection's current endpoint may move on while the stream stays where it was opened.
   */
  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    request: Req,
    retry: RetryPolicy,
    options?: CallOptions,
  ): ServerStream<Res> {
    const scope = new CallScope(
      options?.signal,
      this.#closing.signal,
      options?.timeoutMs ?? Number.POSITIVE_INFINITY,
      true,
    );
    let inner: AsyncIterator<Res> | undefined;
    /** The endpoint the open stream uses, until it is released. */
    let held: PooledEndpoint | undefined;
    /** `host:port` of the endpoint the stream is opening or open on; kept after it ends. */
    let openedOn: string | undefined;
    let started = false;
    let opening: Promise<IteratorResult<Res>> | undefined;
    let finished = false;
    const release = () => {
      if (held) this.#pool.release(held);
      held = undefined;
    };
    // However the stream stops (cancel(), the caller's signal, close(), the end of the iteration),
    // its endpoint is released at once, even if nobody reads the stream any more.
    scope.signal.addEventListener('abort', release, { once: true });
    const finish = () => {
      if (finished) return;
      finished = true;
      // Stops an open still in flight, and the call below if it is still running.
      scope.cancel();
      scope.dispose();
      void inner?.return?.();
      release();
    };
    const open = async (): Promise<IteratorResult<Res>> => {
      if (scope.aborted) throw scope.abortError();
      const state = newState();
      return this.#retrying(method.path, scope, state, async () => {
        const token = await this.#token(scope, state);
        const { endpoint, channel } = await this.#connect(scope, state);
        let iterator: AsyncIterator<Res> | undefined;
        try {
          // Inside the try: a transport that throws at once must not keep the endpoint held.
          const stream = channel.serverStream(method, request, {
            metadata: this.#metadata(token),
            deadline: scope.transportDeadline,
            signal: scope.signal,
          });
          openedOn = endpoint.target;
          iterator = stream[Symbol.asyncIterator]();
          const first = await iterator.next();
          this.#pool.succeeded(endpoint);
          if (this.#ordering && !first.done) this.#ordering.observe(first.value);
          inner = iterator;
          held = endpoint;
          if (finished || scope.aborted) release();
          return first;
        } catch (error) {
          // The next attempt may open it elsewhere; until then no endpoint holds it.
          openedOn = undefined;
          void iterator?.return?.();
          this.#pool.release(endpoint);
          throw this.#failure(error, retry, scope, state, endpoint, token);
        }
      });
    };
    const next = async (): Promise<IteratorResult<Res>> => {
      if (finished) return DONE;
      try {
        let result: IteratorResult<Res>;
        if (!started) {
          started = true;
          opening = this.#track(open());
          result = await opening;
        } else {
          // A next() issued while the stream is still opening waits for it.
          if (!inner) await opening?.catch(() => undefined);
          if (!inner || finished) return DONE;
          result = await inner.next();
          if (this.#ordering && !result.done) this.#ordering.observe(result.value);
        }
        if (result.done) finish();
        return result;
      } catch (error) {
        // Failures while opening were judged by the retry loop; this one ended an open stream.
        if (inner && held && !scope.aborted) this.#streamFailed(error, held);
        const typed = scope.aborted ? scope.abortError() : toEtcdError(error);
        finish();
        throw typed;
      }
    };
    const iterator: AsyncIterator<Res> = {
      next,
      return: async () => {
        finish();
        return DONE;
      },
    };
    return {
      get endpoint() {
        return openedOn;
      },
      cancel: () => {
        scope.cancel();
        if (!started) finish();
      },
      [Symbol.asyncIterator]: () => iterator,
    };
  }

  /**
   * Opens a bidi stream on a ready endpoint (failing over while no connection can be made), with
   * the current auth token and require-leader metadata. Errors end the iteration as typed errors;
   * `cancel()` ends it with AbortedError, the caller's signal with AbortedError, `close()` with
   * ClientClosedError. A stream ended by Unavailable (a dropped connection, "etcdserver: no
   * leader") puts its endpoint in backoff, so the next stream opens on another endpoint if any.
   * The stream's `endpoint` is the `host:port` it is open on (what {@link redial} takes).
   *
   * The stream uses its endpoint's connection until its iteration ends (the server ended it, it
   * failed, or the iterator was left) or it is cancelled (`cancel()`, the caller's signal,
   * `close()`), whether or not anybody reads it then. A stream only half-closed with `end()` uses
   * it until the server's end is read: answers may still come.
   */
  bidiStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    options?: CallOptions,
  ): Promise<BidiStream<Req, Res>> {
    return this.#track(this.#bidi(method, options));
  }

  /**
   * Forces a new auth token (Authenticate). Stream owners call it after a stream failed with
   * InvalidAuthTokenError, before reopening. Without `auth` it does nothing.
   */
  async refreshToken(): Promise<void> {
    if (!this.#auth) return;
    if (this.closed) throw new ClientClosedError();
    await this.#auth.refresh(this.#auth.cached, 'explicit');
  }

  /**
   * Drops the connection to `endpoint` (`host:port` or URL; a stream's `endpoint`), or to the
   * current endpoint when omitted: it goes into backoff, so calls move to another endpoint if there
   * is one, and its channel is closed, so the next call or stream on it dials afresh. Stream owners
   * call it with the endpoint of a stream that stopped answering although the transport still
   * reports its connection ready (a half-open TCP connection, a frozen server): otherwise the next
   * stream would go to the same dead connection. Calls in flight on that connection fail; the
   * connections to other endpoints are left alone. An endpoint the client does not use (any more)
   * is ignored.
   */
  redial(endpoint?: string): void {
    if (this.closed) return;
    const target = endpoint === undefined ? this.#pool.current : this.#pool.find(endpoint);
    if (!target) return;
    this.#pool.failed(target);
    this.#pool.discard(target);
  }

  /**
   * The metadata calls are sent with now (`token` when authenticated, `hasleader` with
   * requireLeader), authenticating first if needed.
   */
  async metadata(options?: CallOptions): Promise<Metadata> {
    if (this.closed) throw new ClientClosedError();
    const scope = new CallScope(
      options?.signal,
      this.#closing.signal,
      options?.timeoutMs ?? Number.POSITIVE_INFINITY,
      false,
    );
    try {
      return this.#metadata(await this.#token(scope, newState()));
    } catch (error) {
      throw error instanceof AttemptFailure ? error.error : toEtcdError(error);
    } finally {
      scope.dispose();
    }
  }

  /**
   * Closes the connection: calls in flight and later calls reject with ClientClosedError, streams
   * end with it, and the promise resolves once every channel is closed.
   */
  close(): Promise<void> {
    if (!this.#closed) {
      this.#closing.abort(new ClientClosedError());
      this.#closed = (async () => {
        while (this.#pending.size > 0 || this.#unaryInFlight > 0) {
          if (this.#unaryInFlight > 0) {
            await new Promise<void>((resolve) => {
              this.#unaryDrained = resolve;
            });
          }
          await Promise.allSettled([...this.#pending]);
        }
        this.#pool.close();
      })();
    }
    return this.#closed;
  }

  #track<T>(promise: Promise<T>): Promise<T> {
    this.#pending.add(promise);
    const remove = () => this.#pending.delete(promise);
    promise.then(remove, remove);
    return promise;
  }

  async #unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    policy: RetryPolicy,
    options: CallOptions | undefined,
    skipAuth: boolean,
  ): Promise<Res> {
    if (this.closed) throw new ClientClosedError();
    this.#unaryInFlight++;
    const onCall = this.#options.hooks?.onCall;
    const started = onCall ? performance.now() : 0;
    const scope = new CallScope(
      options?.signal,
      this.#closing.signal,
      options?.timeoutMs ?? this.#options.callTimeoutMs,
      false,
    );
    const state = newState();
    // The revision this read must not answer below, as seen when it started (Go's ordering does
    // the same): answers to concurrent calls do not raise the bar of a read already under way.
    const floor = this.#ordering?.floor(method, request);
    try {
      const response = await this.#retrying(method.path, scope, state, async () => {
        // Without auth there is no token to wait for: the await would cost the call a turn.
        const token = skipAuth || !this.#auth ? undefined : await this.#token(scope, state);
        // ready() is asked even of a channel whose state() is 'ready': a Transport's ready() is
        // its word on whether the attempt may go there (a custom one may refuse while its state
        // still says ready), and its refusal is what moves the call to another endpoint. Only a
        // channel's readyNow() spares the wait (and the turn it costs every call).
        const picked = this.#pick(scope, state);
        if (picked.channel.readyNow?.() !== true) await this.#ready(scope, state, picked);
        const { endpoint, channel } = picked;
        try {
          const response = await channel.unary(method, request, {
            metadata: this.#metadata(token),
            deadline: scope.transportDeadline,
            signal: scope.signal,
          });
          this.#pool.succeeded(endpoint);
          if (floor !== undefined && headerRevision(response) < floor) {
            throw this.#stale(floor, headerRevision(response), state, endpoint);
          }
          this.#ordering?.observe(response);
          return response;
        } catch (error) {
          if (error instanceof AttemptFailure) throw error;
          throw this.#failure(error, policy, scope, state, endpoint, token);
        } finally {
          this.#pool.release(endpoint);
        }
      });
      if (onCall) {
        callHook(onCall, {
          method: method.path,
          policy,
          endpoint: state.endpoint?.target,
          attempts: state.attempts,
          durationMs: performance.now() - started,
        });
      }
      return response;
    } catch (caught) {
      const error = tooLargeError(caught, method, request);
      if (onCall) {
        callHook(onCall, {
          method: method.path,
          policy,
          endpoint: state.endpoint?.target,
          attempts: state.attempts,
          durationMs: performance.now() - started,
          error: toEtcdError(error),
        });
      }
      throw error;
    } finally {
      scope.dispose();
      if (--this.#unaryInFlight === 0 && this.#unaryDrained) {
        const drained = this.#unaryDrained;
        this.#unaryDrained = undefined;
        drained();
      }
    }
  }

  async #bidi<Req, Res>(
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    options: CallOptions | undefined,
  ): Promise<BidiStream<Req, Res>> {
    if (this.closed) throw new ClientClosedError();
    const scope = new CallScope(
      options?.signal,
      this.#closing.signal,
      options?.timeoutMs ?? Number.POSITIVE_INFINITY,
      true,
    );
    /** Set by the attempt that opened the stream; it holds `endpoint` until released. */
    let opened:
      | { stream: BidiStream<Req, Res>; inner: AsyncIterator<Res>; endpoint: PooledEndpoint }
      | undefined;
    const state = newState();
    try {
      await this.#retrying(method.path, scope, state, async () => {
        const token = await this.#token(scope, state);
        const { endpoint, channel } = await this.#connect(scope, state);
        let stream: BidiStream<Req, Res> | undefined;
        try {
          stream = channel.bidiStream(method, {
            metadata: this.#metadata(token),
            deadline: scope.transportDeadline,
            signal: scope.signal,
          });
          opened = { stream, inner: stream[Symbol.asyncIterator](), endpoint };
        } catch (error) {
          stream?.cancel();
          this.#pool.release(endpoint);
          throw error;
        }
      });
    } catch (error) {
      // The retry loop may give up (an abort) after the attempt opened the stream.
      if (opened) {
        opened.stream.cancel();
        this.#pool.release(opened.endpoint);
      }
      scope.dispose();
      throw error;
    }
    const { stream, inner, endpoint } = opened!;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#pool.release(endpoint);
    };
    // A stream cancelled (cancel(), the caller's signal, close()) lets go of its endpoint at once,
    // even if nobody reads it: a dropped endpoint's channel then closes without waiting for a read.
    if (scope.aborted) release();
    else scope.signal.addEventListener('abort', release, { once: true });
    let answered = false;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      scope.cancel();
      scope.dispose();
      void inner.return?.();
      release();
    };
    const iterator: AsyncIterator<Res> = {
      next: async () => {
        if (finished) return DONE;
        try {
          const result = await inner.next();
          if (this.#ordering && !result.done) this.#ordering.observe(result.value);
          if (result.done) {
            finish();
          } else if (!answered) {
            // The endpoint served this stream: its backoff ends, as after a unary answer.
            answered = true;
            this.#pool.succeeded(endpoint);
          }
          return result;
        } catch (error) {
          if (!scope.aborted) this.#streamFailed(error, endpoint);
          const typed = scope.aborted ? scope.abortError() : toEtcdError(error);
          finish();
          throw typed;
        }
      },
      return: async () => {
        finish();
        return DONE;
      },
    };
    return {
      endpoint: endpoint.target,
      write: (request: Req) => {
        if (scope.aborted) throw scope.abortError();
        try {
          stream.write(request);
        } catch (error) {
          throw toEtcdError(error);
        }
      },
      end: () => stream.end(),
      cancel: () => scope.cancel(),
      [Symbol.asyncIterator]: () => iterator,
    };
  }

  /**
   * Runs `attempt` until it succeeds or a failure ends the call: one that is not to be retried, the
   * budget spent (`maxAttempts` counts only the retries that wait), the call's deadline, an abort.
   * A retry after a failed endpoint (while another is untried) or a refused token goes at once and
   * spends nothing; any other waits `minDelayMs * 2^(retries spent)`, times a random factor in
   * [1, 2) with jitter, at most `maxDelayMs` and at most the time left.
   */
  async #retrying<T>(
    label: string,
    scope: CallScope,
    state: CallState,
    attempt: () => Promise<T>,
  ): Promise<T> {
    const o = this.#options;
    const started = performance.now();
    const maxRetryTime = Number.isFinite(scope.deadline)
      ? Math.max(0, scope.deadline - Date.now())
      : Number.POSITIVE_INFINITY;
    try {
      for (let attemptNumber = 1; ; attemptNumber++) {
        if (scope.aborted) throw new AttemptFailure(scope.abortError(), false, false);
        let failure: AttemptFailure;
        try {
          state.attempts++;
          const response = await attempt();
          // An answer that arrives as the call is aborted still ends it as aborted.
          if (scope.aborted) throw new AttemptFailure(scope.abortError(), false, false);
          return response;
        } catch (error) {
          failure =
            error instanceof AttemptFailure
              ? error
              : new AttemptFailure(
                  scope.aborted ? scope.abortError() : toEtcdError(error),
                  false,
                  false,
                );
        }
        if (!failure.retry) throw failure;
        const remainingMs = maxRetryTime - (performance.now() - started);
        if (remainingMs <= 0) throw failure;
        if (!failure.immediate) {
          if (state.consumed >= o.maxAttempts - 1) throw failure;
          state.consumed++;
        }
        const onRetry = o.hooks?.onRetry;
        if (onRetry) {
          callHook(onRetry, {
            method: label,
            attempt: attemptNumber,
            error: failure.error,
            endpoint: state.endpoint?.target,
          });
        }
        if (failure.immediate) continue;
        const delayMs = backoffDelay(
          state.consumed,
          { baseMs: o.minDelayMs, maxMs: o.maxDelayMs, jitter: 'above' },
          o.jitter ? Math.random : NO_JITTER,
        );
        const waitMs = Math.min(delayMs, remainingMs);
        if (waitMs > 0 && !scope.aborted) await sleep(waitMs, scope.signal);
      }
    } catch (error) {
      if (scope.aborted) throw scope.abortError();
      let final = error instanceof AttemptFailure ? error.error : toEtcdError(error);
      if (final instanceof DeadlineExceededError) final = deadlineError(final, label, scope, state);
      else if (
        final instanceof OutcomeUnknownError &&
        final.cause instanceof DeadlineExceededError
      ) {
        final = outcomeUnknown(deadlineError(final.cause, label, scope, state), final.metadata);
      }
      // A retried guarded write whose earlier attempt may have been applied: the last attempt's
      // error (say, a failed connection) would wrongly suggest that nothing was applied.
      if (state.ambiguous && !(final instanceof OutcomeUnknownError)) {
        throw outcomeUnknown(final, final.metadata);
      }
      throw final;
    }
  }

  /** The token for the next attempt (refreshing a rejected one), or undefined without auth. */
  async #token(scope: CallScope, state: CallState): Promise<string | undefined> {
    const auth = this.#auth;
    if (!auth) return undefined;
    const pending =
      state.staleToken !== undefined
        ? auth.refresh(state.staleToken, 'invalid-token')
        : auth.token();
    state.staleToken = undefined;
    try {
      return await raceAbort(pending, scope.signal);
    } catch (error) {
      throw new AttemptFailure(
        scope.aborted ? scope.abortError() : toEtcdError(error),
        false,
        false,
      );
    }
  }

  #metadata(token: string | undefined): Metadata {
    return token ? { ...this.#baseMetadata, token } : this.#baseMetadata;
  }

  /** Picks an endpoint and waits until its channel is connected (at most the dial timeout). */
  async #connect(scope: CallScope, state: CallState): Promise<PickedEndpoint> {
    const picked = this.#pick(scope, state);
    await this.#ready(scope, state, picked);
    return picked;
  }

  /** Picks the endpoint for the next attempt; its channel may not be connected yet. */
  #pick(scope: CallScope, state: CallState): PickedEndpoint {
    if (scope.aborted) throw new AttemptFailure(scope.abortError(), false, false);
    if (Date.now() >= scope.deadline) {
      throw new AttemptFailure(new DeadlineExceededError(), false, false);
    }
    state.connectingTo = undefined;
    let picked: PickedEndpoint;
    try {
      picked = this.#pool.pick(state.tried);
    } catch {
      throw new AttemptFailure(new ClientClosedError(), false, false);
    }
    if (state.tried) state.tried.add(picked.endpoint);
    else state.tried = new Set([picked.endpoint]);
    state.endpoint = picked.endpoint;
    return picked;
  }

  /** Waits until the picked endpoint's channel is connected (at most the dial timeout). */
  async #ready(scope: CallScope, state: CallState, picked: PickedEndpoint): Promise<void> {
    const { endpoint, channel } = picked;
    // Each endpoint may keep one call waiting for a connection for at most dialTimeoutMs in
    // total, retries included: a black hole costs the dial timeout once, not once per retry.
    const dialTimeoutMs = this.#options.dialTimeoutMs;
    state.dialWaited ??= new Map();
    const dialWaited = state.dialWaited;
    const waited = dialWaited.get(endpoint) ?? 0;
    const started = Date.now();
    const dialDeadline = started + Math.max(0, dialTimeoutMs - waited);
    const deadline = Math.min(dialDeadline, scope.deadline);
    try {
      await channel.ready(deadline, scope.signal);
    } catch (error) {
      this.#pool.release(endpoint);
      dialWaited.set(endpoint, waited + (Date.now() - started));
      if (scope.aborted) throw new AttemptFailure(scope.abortError(), false, false);
      // Kept until the next pick: a deadline that passes before it passed while connecting.
      state.connectingTo = endpoint.target;
      if (deadline < dialDeadline && Date.now() >= scope.deadline) {
        throw new AttemptFailure(new DeadlineExceededError({ cause: error }), false, false);
      }
      this.#pool.failed(endpoint);
      const typed = toEtcdError(error);
      const exhausted = this.#pool.endpoints.every(
        (e) => (dialWaited.get(e) ?? 0) >= dialTimeoutMs,
      );
      if (exhausted) throw new AttemptFailure(typed, false, false);
      throw new AttemptFailure(typed, true, triedCount(state) < this.#pool.endpoints.length);
    }
  }

  /**
   * An open stream failed. When the failure says the endpoint cannot serve (Unavailable: a dropped
   * connection, or etcd's "no leader" from a member cut off from its leader, which also ends the
   * require-leader streams open on it), the endpoint goes into backoff as after a unary call, so
   * the stream's owner (the watch hub, the lease keeper) reopens it on the next endpoint instead of
   * the same member. The channel stays open: other calls on it are not disturbed.
   */
  #streamFailed(error: unknown, endpoint: PooledEndpoint): void {
    if (error instanceof TransportError && judge(error, 'read').endpointFailed) {
      this.#pool.failed(endpoint);
    }
  }

  /**
   * A serializable read answered below the revision this client saw (`ordering`): the endpoint
   * lags. The retry goes at once to an endpoint this call has not tried (which becomes the current
   * one, as after a failure, but without a backoff: the member is healthy, only behind); once all
   * were tried, after a retry backoff to any but this one. Past the bound, OrderViolationError.
   */
  #stale(
    floor: bigint,
    answered: bigint,
    state: CallState,
    endpoint: PooledEndpoint,
  ): AttemptFailure {
    const error = new OrderViolationError(floor, answered, endpoint.target);
    const count = this.#pool.endpoints.length;
    const bound = this.#ordering?.maxSwitches ?? count;
    if (++state.violations > bound) return new AttemptFailure(error, false, false);
    const untried = triedCount(state) < count;
    // Every endpoint tried: start over, avoiding only the one that just answered stale.
    if (!untried) state.tried = new Set([endpoint]);
    return new AttemptFailure(error, true, untried);
  }

  /** Turns a failed attempt into an AttemptFailure under the retry policy. */
  #failure(
    error: unknown,
    policy: RetryPolicy,
    scope: CallScope,
    state: CallState,
    endpoint: PooledEndpoint,
    token: string | undefined,
  ): AttemptFailure {
    if (scope.aborted) return new AttemptFailure(scope.abortError(), false, false);
    if (!(error instanceof TransportError)) {
      return new AttemptFailure(toEtcdError(error), false, false);
    }
    const verdict = judge(ownDeadline(error, scope), policy);
    if (verdict.ambiguous) state.ambiguous = true;
    if (
      this.#auth &&
      !state.authRetried &&
      // Compared by code: the error classes are matched by message, possibly to a base class.
      (verdict.error.code === 'INVALID_AUTH_TOKEN' || verdict.error.code === 'USER_EMPTY')
    ) {
      // The server rejected the call before applying it: safe to retry once, even for writes.
      state.authRetried = true;
      state.staleToken = token ?? '';
      return new AttemptFailure(verdict.error, true, true);
    }
    if (verdict.endpointFailed) this.#pool.failed(endpoint);
    return new AttemptFailure(
      verdict.error,
      verdict.retry,
      verdict.retry && verdict.endpointFailed && triedCount(state) < this.#pool.endpoints.length,
    );
  }
}

/** The write may have been applied; `cause` is why the client cannot tell. */
function outcomeUnknown(cause: EtcdError, metadata: Metadata): OutcomeUnknownError {
  return new OutcomeUnknownError({
    message: `the write may or may not have been applied: ${cause.message}`,
    metadata,
    cause,
  });
}

/**
 * etcd's refusal of a request over its --max-request-bytes, with the request's size: only the
 * failure path encodes the request again to tell it.
 */
function tooLargeError<Req>(
  error: unknown,
  method: MethodDescriptor<Req, unknown>,
  request: Req,
): unknown {
  if (
    !(error instanceof RequestTooLargeError) ||
    error.message !== RequestTooLargeError.etcdMessage
  )
    return error;
  const bytes = method.request.encode(request).finish().byteLength;
  return new RequestTooLargeError({
    message:
      `${RequestTooLargeError.etcdMessage}: the server refused a request of ${bytes} bytes; ` +
      "etcd's limit is --max-request-bytes, 1.5 MiB by default",
    grpcStatus: error.grpcStatus,
    metadata: error.metadata,
    cause: error.cause,
  });
}

/**
 * A deadline error in the client's words: the method, the deadline it was given and, when the
 * deadline passed while connecting, the endpoint. `cause` keeps what the transport reported.
 */
function deadlineError(
  error: DeadlineExceededError,
  method: string,
  scope: CallScope,
  state: CallState,
): DeadlineExceededError {
  // A DeadlineExceeded status without a deadline of ours is the server's: its words stay.
  if (!Number.isFinite(scope.timeoutMs)) return error;
  const where = state.connectingTo === undefined ? '' : ` (connecting to ${state.connectingTo})`;
  return new DeadlineExceededError({
    message: `deadline exceeded: ${method} got no answer within its ${scope.timeoutMs} ms deadline${where}`,
    grpcStatus: error.grpcStatus,
    metadata: error.metadata,
    cause: error.cause,
  });
}

/**
 * The failure as the caller's deadline explains it. etcd hands a handler's expired context to
 * gRPC as it is (Unknown "context deadline exceeded"): the Lock and Election services do when the
 * deadline the client sent (grpc-timeout) runs out on the server. On a busy client that answer can
 * be read before the client's own timer fires. Once the call's deadline has passed it is that
 * deadline's doing, so it is reported as DeadlineExceeded; before, it is etcd's own request
 * timeout (a proposal without a leader), as `toEtcdError` types it.
 */
function ownDeadline(error: TransportError, scope: CallScope): TransportError {
  if (
    error.code !== GrpcStatus.Unknown ||
    error.details !== etcdErrorVariants.PROPOSAL_TIMEOUT.message ||
    Date.now() < scope.deadline
  ) {
    return error;
  }
  return new TransportError({
    code: GrpcStatus.DeadlineExceeded,
    details: error.details,
    metadata: error.metadata,
    sent: error.sent,
    cause: error,
  });
}

/** Resolves like `promise`, or rejects with the signal's reason as soon as it aborts. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
