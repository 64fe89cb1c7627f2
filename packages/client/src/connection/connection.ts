// The connection: endpoints with failover, auth token, require-leader metadata, deadlines and the
// retry policy, on top of a Transport. Services only see the `Rpc` interface it implements.
import { setMaxListeners } from 'node:events';
import { ClientClosedError, type EtcdError, InvalidConfigError, toEtcdError } from '../errors.js';
import { etcdserverpb_Auth, type MethodDescriptor } from '../generated/methods.js';
import { selectTransport } from '../transport/select.js';
import type {
  BidiStream,
  Channel,
  ChannelCallOptions,
  Metadata,
  ServerStream,
} from '../transport/types.js';
import { TokenManager } from './auth.js';
import { attemptFailure, staleAnswer, tooLargeError } from './call-failures.js';
import { CallScope, raceAbort } from './call-scope.js';
import { AttemptFailure, type CallState, newState, type PickedEndpoint } from './call-state.js';
import { connect, pick, ready } from './dial.js';
import { EndpointPool, type PooledEndpoint } from './endpoint-pool.js';
import { callHook } from './hooks.js';
import {
  type ConnectionOptions,
  parseEndpointList,
  type ResolvedOptions,
  resolveOptions,
} from './options.js';
import { headerRevision, type OrderingGuard, orderingGuardOf } from './ordering.js';
import { retrying } from './retry-loop.js';
import { openBidiStream, openServerStream, type StreamHost } from './stream-calls.js';
import type { CallOptions, RetryPolicy, Rpc } from './types.js';

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
  /** What the stream shapes (stream-calls.ts) use of this connection. */
  readonly #streams: StreamHost;

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
    this.#streams = {
      options: o,
      pool: this.#pool,
      closing: this.#closing.signal,
      ordering: this.#ordering,
      track: (promise) => this.#track(promise),
      token: (scope, state) => this.#token(scope, state),
      connect: (scope, state) => this.#connect(scope, state),
      failure: (error, policy, scope, state, endpoint, token) =>
        this.#failure(error, policy, scope, state, endpoint, token),
      metadata: (token) => this.#metadata(token),
    };
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
    return openServerStream(this.#streams, method, request, retry, options);
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
    return this.#track(openBidiStream(this.#streams, method, options));
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
    const state = newState(policy !== 'read');
    // The revision this read must not answer below, as seen when it started (Go's ordering does
    // the same): answers to concurrent calls do not raise the bar of a read already under way.
    const floor = this.#ordering?.floor(method, request);
    try {
      const response = await retrying(this.#options, method.path, scope, state, async () => {
        // Without auth there is no token to wait for: the await would cost the call a turn.
        const token = skipAuth || !this.#auth ? undefined : await this.#token(scope, state);
        // ready() is asked even when state() is 'ready': a custom Transport may still refuse, and
        // its refusal moves the call on. Only readyNow() spares the wait (and its turn per call).
        const picked = pick(this.#pool, scope, state);
        if (picked.channel.readyNow?.() !== true) await this.#ready(scope, state, picked);
        const { endpoint, channel } = picked;
        try {
          const response = await channel.unary(
            method,
            request,
            callOptions(channel, scope, this.#metadata(token)),
          );
          this.#pool.succeeded(endpoint);
          if (floor !== undefined && headerRevision(response) < floor) {
            throw staleAnswer(
              this.#pool,
              this.#ordering?.maxSwitches,
              floor,
              headerRevision(response),
              state,
              endpoint,
            );
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

  /** Picks an endpoint and waits until its channel is connected (at most the dial timeout). */
  #connect(scope: CallScope, state: CallState): Promise<PickedEndpoint> {
    return connect(this.#pool, this.#options.dialTimeoutMs, scope, state);
  }

  /** Waits until the picked endpoint's channel is connected (at most the dial timeout). */
  #ready(scope: CallScope, state: CallState, picked: PickedEndpoint): Promise<void> {
    return ready(this.#pool, this.#options.dialTimeoutMs, scope, state, picked);
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
    return attemptFailure(
      this.#pool,
      this.#auth !== undefined,
      error,
      policy,
      scope,
      state,
      endpoint,
      token,
    );
  }

  #metadata(token: string | undefined): Metadata {
    return token ? { ...this.#baseMetadata, token } : this.#baseMetadata;
  }
}

/**
 * A unary call's options: a caller's signal goes to a transport taking the closing signal beside it
 * as it is (its one listener removed when the call ends); to any other, the scope's own signal.
 */
function callOptions(
  channel: Channel,
  scope: CallScope,
  metadata: Metadata | undefined,
): ChannelCallOptions {
  const deadline = scope.transportDeadline;
  const callerSignal = channel.takesClosingSignal === true ? scope.callerSignal : undefined;
  if (callerSignal !== undefined) {
    return { metadata, deadline, signal: callerSignal, closingSignal: scope.closingSignal };
  }
  return { metadata, deadline, signal: scope.signal, signalOutlivesCall: scope.signalIsShared };
}
