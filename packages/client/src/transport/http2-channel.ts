// An HTTP/2 transport's channel: one endpoint, one HTTP/2 connection at a time, and its lifecycle
// in connectivity states: idle, connecting (dialling and handshaking), ready, failed (in backoff
// after a failed attempt, then idle again) and closed. Calls wait for the attempt in progress; a
// connection that drops or is told to go away leaves the channel idle, and is replaced on the next
// call, not in the background: as grpc-js does, and because the connection layer chooses which
// endpoint to dial next (it may fail over and leave this one alone); a stream that must go on (a
// watch, a lease keepalive) reopens at once and so dials at once (docs/guarantees.md, Transports).
import type { MethodDescriptor } from '../generated/methods.js';
import { AbortWatch } from './abort-watch.js';
import { type BackoffOptions, backoffDelay } from './backoff.js';
import type { CallHost, ChannelCall, Endpoint, Sink, Wire, WireCall } from './channel-call.js';
import { DeadlineWatch } from './deadline-watch.js';
import { abortedFailure, failure } from './failures.js';
import { endpointOf } from './http2-connect.js';
import { Link, type LinkSession } from './http2-link.js';
import { bidiStreamCall, serverStreamCall, unaryCall } from './http2-streams.js';
import {
  type BidiStream,
  type Channel,
  type ChannelCallOptions,
  type ChannelOptions,
  type ChannelState,
  GrpcStatus,
  type ServerStream,
  type TransportError,
} from './types.js';

/**
 * @internal Backoff of a channel whose connection attempt failed: `failed` this long, then `idle`;
 * 250 ms doubling to 5 s, unjittered (the delays the channel has always had; tests expect them).
 */
export const RECONNECT_BACKOFF: BackoffOptions = { baseMs: 250, maxMs: 5_000, jitter: false };
/** Keepalive ping answer timeout when the options give none. */
const DEFAULT_KEEPALIVE_TIMEOUT_MS = 20_000;

/** What a call waiting for a connection fails with when there is none (`error`: the last attempt's). */
function noConnection(error: string): TransportError {
  return failure(GrpcStatus.Unavailable, `No connection established. Last error: ${error}`, false);
}

/**
 * One endpoint, one HTTP/2 connection at a time, redialled after it drops. `wire` makes the
 * connections and the calls on them: node:http2's (Http2Transport) or the h2 transport's own.
 */
export class Http2Channel<S extends LinkSession> implements Channel, CallHost<S> {
  readonly target: string;
  readonly #wire: Wire<S>;
  readonly #endpoint: Endpoint;
  readonly #maxReceiveBytes: number;
  readonly #maxSendBytes: number;
  #keepaliveMs: number;
  readonly #keepaliveTimeoutMs: number;
  #state: ChannelState = 'idle';
  #link: Link<S> | undefined;
  #attempt: { destroy(): void } | undefined;
  #lastError = '';
  #failures = 0;
  #backoffTimer: NodeJS.Timeout | undefined;
  /** Waiting for the connection attempt in progress: called with its link, or with its error. */
  readonly #waiters = new Set<(link: Link<S> | undefined, error: string) => void>();
  /** Calls not finished yet (waiting for a connection or with a stream). */
  readonly #calls = new Set<ChannelCall<S>>();
  /** @internal Aborts this channel's calls when their signal fires. */
  readonly aborts = new AbortWatch();
  /** @internal Fails this channel's calls whose deadline passed, on one timer. */
  readonly deadlines = new DeadlineWatch();
  readonly takesClosingSignal = true;

  /** Prepares a channel to `options.target`; nothing connects until the first call or `ready()`. */
  constructor(options: ChannelOptions, wire: Wire<S>) {
    this.target = options.target;
    this.#wire = wire;
    this.#endpoint = endpointOf(options);
    this.#maxReceiveBytes = options.maxReceiveMessageBytes ?? 4 * 1024 * 1024;
    this.#maxSendBytes = options.maxSendMessageBytes ?? Number.POSITIVE_INFINITY;
    this.#keepaliveMs = options.keepaliveIntervalMs ?? 0;
    this.#keepaliveTimeoutMs = options.keepaliveTimeoutMs ?? DEFAULT_KEEPALIVE_TIMEOUT_MS;
  }

  /** Current connectivity, without triggering a connection attempt. */
  state(): ChannelState {
    return this.#state;
  }

  /**
   * Connects if needed and resolves once the HTTP/2 handshake completed (the server's SETTINGS
   * arrived). Rejects with an unsent Unavailable TransportError when the attempt fails, the channel
   * is closed or in backoff after a failed attempt, or `deadline` passes first; with an unsent
   * Cancelled one when the signal aborts.
   */
  ready(deadline: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortedFailure(signal, false));
    switch (this.#state) {
      case 'ready':
        return Promise.resolve();
      case 'closed':
        return Promise.reject(
          failure(GrpcStatus.Unavailable, `channel to ${this.target} is closed`, false),
        );
      case 'failed':
        return Promise.reject(this.#cannotConnect(this.#lastError));
      case 'idle':
        this.#connect();
        break;
      case 'connecting':
        break;
    }
    const started = Date.now();
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = (error?: TransportError) => {
        this.#waiters.delete(waiter);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve();
      };
      const waiter = (link: Link<S> | undefined, error: string) =>
        settle(link ? undefined : this.#cannotConnect(error));
      const onAbort = () => settle(abortedFailure(signal!, false));
      this.#waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      // A timer can fire a millisecond before Date.now() reaches its time (libuv measures from
      // the loop's cached clock): the wait ends only once the deadline has passed by Date.now().
      const expire = () => {
        const left = deadline - Date.now();
        if (left > 0) {
          timer = setTimeout(expire, left);
          return;
        }
        settle(
          failure(
            GrpcStatus.Unavailable,
            `no connection to ${this.target} within ${Date.now() - started} ms`,
            false,
          ),
        );
      };
      if (Number.isFinite(deadline)) timer = setTimeout(expire, Math.max(0, deadline - Date.now()));
    });
  }

  /** True while connected: `ready()` would resolve at once. */
  readyNow(): boolean {
    return this.#state === 'ready';
  }

  /** One request, one response. */
  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    options: ChannelCallOptions,
  ): Promise<Res> {
    return unaryCall(request, this.#newCall(method, options), this.#openCall);
  }

  /** One request, a stream of responses; iterate it. */
  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    request: Req,
    options: ChannelCallOptions,
  ): ServerStream<Res> {
    return serverStreamCall(request, this.#newCall(method, options), this.#openCall);
  }

  /** A bidirectional stream: write requests, iterate responses. */
  bidiStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    options: ChannelCallOptions,
  ): BidiStream<Req, Res> {
    return bidiStreamCall(this.#newCall(method, options), this.#openCall);
  }

  /** Closes the channel: waiting calls fail unsent, calls in flight fail with Cancelled. */
  close(): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    clearTimeout(this.#backoffTimer);
    this.aborts.stop();
    this.deadlines.stop();
    for (const call of [...this.#calls]) {
      call.abort(
        call.sent
          ? failure(GrpcStatus.Cancelled, `channel to ${this.target} closed`, true)
          : failure(GrpcStatus.Unavailable, 'Channel closed before call started', false),
      );
    }
    const attempt = this.#attempt;
    this.#attempt = undefined;
    attempt?.destroy();
    const link = this.#link;
    this.#link = undefined;
    if (link) {
      link.stop();
      link.session.destroy();
    }
    this.#notify(undefined, `channel to ${this.target} closed`);
  }

  /** Makes calls of `method` on this channel, each reporting to its sink. */
  #newCall<Req, Res>(
    method: MethodDescriptor<Req, Res>,
    options: ChannelCallOptions,
  ): (sink: Sink<Res>) => WireCall<Req, S> {
    return (sink) =>
      this.#wire.newCall(this, method, options, sink, this.#maxReceiveBytes, this.#maxSendBytes);
  }

  readonly #openCall = (call: ChannelCall<S>) => this.#open(call);

  #open(call: ChannelCall<S>): void {
    if (call.done) return;
    this.#calls.add(call);
    call.begin();
  }

  /** @internal A call wants a connection: now if ready, after the attempt if connecting. */
  acquire(call: ChannelCall<S>): void {
    switch (this.#state) {
      case 'ready':
        call.attach(this.#link!);
        return;
      case 'closed':
        call.fail(failure(GrpcStatus.Unavailable, 'Channel closed before call started', false));
        return;
      case 'failed':
        call.fail(noConnection(this.#lastError));
        return;
      case 'idle':
        this.#connect();
        break;
      case 'connecting':
        break;
    }
    const waiter = (link: Link<S> | undefined, error: string) => {
      this.#waiters.delete(waiter);
      if (call.done) return;
      if (link) call.attach(link);
      else call.fail(noConnection(error));
    };
    this.#waiters.add(waiter);
  }

  /** @internal A call finished. */
  forget(call: ChannelCall<S>): void {
    this.#calls.delete(call);
  }

  /** @internal `link` can take no new streams: the next call connects afresh. */
  detach(link: Link<S>): void {
    if (this.#link !== link) return;
    this.#link = undefined;
    link.stop();
    if (this.#state === 'ready') this.#state = 'idle';
  }

  #cannotConnect(reason: string): TransportError {
    return failure(
      GrpcStatus.Unavailable,
      `cannot connect to ${this.target}${reason ? `: ${reason}` : ''}`,
      false,
    );
  }

  #notify(link: Link<S> | undefined, error: string): void {
    for (const waiter of [...this.#waiters]) waiter(link, error);
    this.#waiters.clear();
  }

  #connect(): void {
    this.#state = 'connecting';
    const attempt = this.#wire.connect(this.#endpoint, {
      ready: (session) => {
        if (this.#attempt !== attempt) return;
        this.#attempt = undefined;
        this.#adopt(session);
      },
      failed: (reason) => {
        if (this.#attempt !== attempt) return;
        this.#attempt = undefined;
        this.#connectFailed(reason);
      },
      lost: (session, goaway) => {
        const link = this.#link;
        if (link?.session !== session) return;
        link.goaway ??= goaway;
        this.detach(link);
      },
      // The server finds our pings too frequent: halve their rate for the next connections.
      tooManyPings: () => {
        this.#keepaliveMs *= 2;
      },
    });
    this.#attempt = attempt;
  }

  #adopt(session: S): void {
    const link = new Link(session, this.#keepaliveMs, this.#keepaliveTimeoutMs);
    this.#link = link;
    this.#state = 'ready';
    this.#failures = 0;
    this.#notify(link, '');
  }

  #connectFailed(reason: string): void {
    this.#lastError = reason;
    if (this.#state === 'closed') return;
    this.#state = 'failed';
    this.#failures++;
    const backoff = backoffDelay(this.#failures, RECONNECT_BACKOFF);
    this.#backoffTimer = setTimeout(() => {
      if (this.#state === 'failed') this.#state = 'idle';
    }, backoff);
    this.#backoffTimer.unref();
    this.#notify(undefined, reason);
  }
}
