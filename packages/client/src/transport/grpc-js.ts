// The default transport: one @grpc/grpc-js client per endpoint. Requests are encoded with the
// generated codecs (no runtime proto loading); failures become TransportErrors whose `sent` flag is
// false only when grpc-js proves the request never left the client.
import type * as grpc from '@grpc/grpc-js';
import type { MethodDescriptor } from '../generated/methods.js';
import { type AbortableCall, AbortWatch } from './abort-watch.js';
import { abortedFailure, failure, requestTooLargeFailure, streamEndedFailure } from './failures.js';
import { errorCodeName, isProtocolErrorCode } from './goaway.js';
import { HeldRequests } from './grpc-js-held.js';
import { grpcJs, requireGrpcJsInstalled } from './grpc-js-module.js';
import { tlsCredentials } from './grpc-js-tls.js';
import { bufferFull, requestBound } from './request-bound.js';
import { decodeResponse } from './response-decoders.js';
import { readableToAsyncIterator } from './stream-reader.js';
import {
  type BidiStream,
  type Channel,
  type ChannelCallOptions,
  type ChannelOptions,
  type ChannelState,
  GrpcStatus,
  type Metadata,
  type ServerStream,
  type Transport,
  TransportError,
} from './types.js';

/**
 * Status details with which grpc-js fails a call that no server processed: the load balancer had
 * no connected subchannel, the HTTP/2 stream could not even be created, the channel closed while
 * the call was queued, or the server refused the stream.
 */
const UNSENT_DETAILS: ReadonlyArray<readonly [GrpcStatus, string]> = [
  [GrpcStatus.Unavailable, 'No connection established'],
  [GrpcStatus.Unavailable, 'Channel closed before call started'],
  [GrpcStatus.Internal, 'Failed to start HTTP/2 stream'],
  // RST_STREAM REFUSED_STREAM, also how streams above a GOAWAY's last-stream-id end: the server
  // closed the stream before processing any of it (RFC 9113, 8.7).
  [GrpcStatus.Unavailable, 'Stream refused by server'],
  // The request is refused by grpc-js's size check before its message is written.
  [GrpcStatus.ResourceExhausted, 'Attempted to send message with a size larger than'],
];

const HEALTH_CHECK = '/grpc.health.v1.Health/Check';
const LAST_ERROR = 'Last error: ';

function provablyUnsent(code: GrpcStatus, details: string): boolean {
  for (const [c, prefix] of UNSENT_DETAILS) {
    if (code === c && details.startsWith(prefix)) return true;
  }
  return false;
}

/**
 * Whether grpc-js's words say the connection broke HTTP/2: a protocol error nghttp2 found, or a
 * stream ended with a protocol error code (how a server's GOAWAY with such a code reaches calls:
 * grpc-js shows calls neither the GOAWAY nor its debug text).
 */
function brokeProtocol(code: GrpcStatus, details: string): boolean {
  if (code !== GrpcStatus.Internal) return false;
  if (/internal client error: Protocol error/.test(details)) return true;
  const reset = RESET_DETAILS.exec(details);
  return reset !== null && isProtocolErrorCode(Number(reset[1]));
}

/** How grpc-js words a stream the server reset, or a GOAWAY's code reaching a call. */
const RESET_DETAILS = /^Received RST_STREAM with code (\d+)$/;

/** grpc-js's details with a reset's HTTP/2 error code named, as the own transports name it. */
function namedReset(details: string): string {
  const reset = RESET_DETAILS.exec(details);
  return reset === null ? details : `${details} (${errorCodeName(Number(reset[1]))})`;
}

function isServiceError(error: unknown): error is grpc.ServiceError {
  return (
    error instanceof Error &&
    typeof (error as Partial<grpc.ServiceError>).code === 'number' &&
    'details' in error
  );
}

function metadataToRecord(metadata: grpc.Metadata | undefined): Metadata {
  if (!metadata) return {};
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata.getMap())) {
    out[key] = typeof value === 'string' ? value : Buffer.from(value).toString('base64');
  }
  return out;
}

function toGrpcMetadata(metadata: Metadata | undefined): grpc.Metadata {
  const md = new (grpcJs().Metadata)();
  if (metadata) {
    for (const [key, value] of Object.entries(metadata)) md.set(key, value);
  }
  return md;
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function toPemBuffer(value: Uint8Array | string | undefined): Buffer | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'string' ? Buffer.from(value) : toBuffer(value);
}

/**
 * Maps anything grpc-js reports to a TransportError. A call cancelled because its signal aborted
 * reports Cancelled with the signal's reason as cause.
 */
function mapError(
  error: unknown,
  signal: AbortSignal | undefined,
  closingSignal?: AbortSignal,
): TransportError {
  if (error instanceof TransportError) return error;
  if (isServiceError(error)) {
    const code = error.code as number as GrpcStatus;
    const sent = !provablyUnsent(code, error.details);
    if (code === GrpcStatus.Cancelled) {
      if (signal?.aborted) return abortedFailure(signal, sent);
      if (closingSignal?.aborted) return abortedFailure(closingSignal, sent);
    }
    return new TransportError({
      code,
      details: namedReset(error.details),
      metadata: metadataToRecord(error.metadata),
      sent,
      protocolError: brokeProtocol(code, error.details),
      cause: error,
    });
  }
  return failure(
    GrpcStatus.Unknown,
    error instanceof Error ? error.message : String(error),
    true,
    error,
  );
}

/** A unary call as the abort watch sees it: cancelled when its signal fires. */
class CancelOnAbort implements AbortableCall {
  readonly sent = true;
  call: grpc.ClientUnaryCall | undefined;
  /** grpc-js reported the outcome: the call is not watched (any more). */
  ended = false;

  abort(): void {
    this.call?.cancel();
  }
}

/** Fails a call that could not even be started (the grpc-js client was closed). */
function notStarted(error: unknown): TransportError {
  return failure(
    GrpcStatus.Unavailable,
    error instanceof Error ? error.message : String(error),
    false,
    error,
  );
}

/** A grpc-js connectivity state in the Channel's words. */
function channelState(state: grpc.connectivityState): ChannelState {
  const known = grpcJs().connectivityState;
  switch (state) {
    case known.IDLE:
      return 'idle';
    case known.CONNECTING:
      return 'connecting';
    case known.READY:
      return 'ready';
    case known.TRANSIENT_FAILURE:
      return 'failed';
    default:
      return 'closed';
  }
}

/** A failed or already cancelled stream: iteration throws `error` at once. */
function failedStream<Res>(error: TransportError): ServerStream<Res> & BidiStream<never, Res> {
  return {
    cancel() {},
    write() {
      throw error;
    },
    end() {},
    [Symbol.asyncIterator]() {
      let thrown = false;
      return {
        next: () => {
          if (thrown) return Promise.resolve({ done: true, value: undefined });
          thrown = true;
          return Promise.reject(error);
        },
        return: () => Promise.resolve({ done: true, value: undefined }),
      };
    },
  };
}

/**
 * Whether `Error.stackTraceLimit` may be changed: not where intrinsics are frozen
 * (`node --frozen-intrinsics`), where the assignment would throw.
 */
const STACK_TRACE_LIMIT_WRITABLE =
  Object.getOwnPropertyDescriptor(Error, 'stackTraceLimit')?.writable === true;

/** gRPC's message prefix: a compression flag and the length. */
const MESSAGE_PREFIX_BYTES = 5;

/**
 * The least time between two dials a waiting call may force while grpc-js is in backoff: grpc-js's
 * own first backoff (`grpc.initial_reconnect_backoff_ms` below).
 */
const MIN_REDIAL_MS = 250;

/** One endpoint, one grpc-js client (and so one HTTP/2 connection at a time). */
export class GrpcJsChannel implements Channel {
  readonly target: string;
  /** Replaced by a fresh one when `ready()` finds it in backoff (see {@link ready}). */
  #client: grpc.Client;
  /** What a fresh grpc-js client is made with. */
  readonly #credentials: grpc.ChannelCredentials;
  readonly #channelOptions: grpc.ChannelOptions;
  /** When the current grpc-js client was made (performance.now()): its first dial. */
  #dialledAt = performance.now();
  #closed = false;
  readonly #maxSendBytes: number;
  /** Request bytes grpc-js has not reported written, bounded by maxBufferedRequestBytes. */
  readonly #held: HeldRequests;
  /** Cancels unary calls when their signal fires: one listener per signal, not one per call. */
  readonly #aborts = new AbortWatch();
  readonly takesClosingSignal = true;

  /**
   * Opens (lazily: nothing connects until the first call or `ready()`) a channel to
   * `options.target`, holding at most `maxBufferedRequestBytes` of requests grpc-js has not
   * written (grpc-js-held.ts).
   */
  constructor(options: ChannelOptions, maxBufferedRequestBytes = requestBound(undefined)) {
    this.target = options.target;
    this.#held = new HeldRequests(maxBufferedRequestBytes);
    this.#maxSendBytes = options.maxSendMessageBytes ?? Number.POSITIVE_INFINITY;
    const channelOptions: grpc.ChannelOptions = {
      // Every channel gets its own subchannels, so closing and reopening one really redials.
      'grpc.use_local_subchannel_pool': 1,
      // The connection layer retries; grpc-js's own retries would hide what was sent.
      'grpc.enable_retries': 0,
      'grpc.initial_reconnect_backoff_ms': MIN_REDIAL_MS,
      'grpc.max_reconnect_backoff_ms': 5_000,
      // No message counts as buffered for retries (there are none): a stream write's callback
      // then says grpc-js wrote it, which the request bound counts on.
      'grpc.per_rpc_retry_buffer_size': 0,
    };
    if (options.maxReceiveMessageBytes !== undefined)
      channelOptions['grpc.max_receive_message_length'] = options.maxReceiveMessageBytes;
    if (options.maxSendMessageBytes !== undefined)
      channelOptions['grpc.max_send_message_length'] = options.maxSendMessageBytes;
    if (options.keepaliveIntervalMs !== undefined && options.keepaliveIntervalMs > 0) {
      channelOptions['grpc.keepalive_time_ms'] = options.keepaliveIntervalMs;
      // etcd's enforcement policy refuses pings without active streams (PermitWithoutStream=false).
      channelOptions['grpc.keepalive_permit_without_calls'] = 0;
      if (options.keepaliveTimeoutMs !== undefined)
        channelOptions['grpc.keepalive_timeout_ms'] = options.keepaliveTimeoutMs;
    }
    let credentials: grpc.ChannelCredentials;
    if (options.tls) {
      const { ca, key, cert, serverName } = options.tls;
      credentials = tlsCredentials(
        grpcJs().experimental.splitHostPort(options.target)?.host ?? options.target,
        options.tls,
        { ca: toPemBuffer(ca), key: toPemBuffer(key), cert: toPemBuffer(cert) },
      );
      if (serverName) channelOptions['grpc.default_authority'] = serverName;
    } else {
      credentials = grpcJs().credentials.createInsecure();
    }
    this.#credentials = credentials;
    this.#channelOptions = channelOptions;
    this.#client = new (grpcJs().Client)(options.target, credentials, channelOptions);
  }

  /**
   * Whether a connection attempt is due although grpc-js's channel is in TRANSIENT_FAILURE: grpc-js
   * redials in the background on its own backoff (x1.6, jittered, up to 5 s), so after an outage
   * of a few seconds a restarted server went unused for up to 2.6 s while every call failed at
   * once with the old attempt's error (a 2 s lease granted after an etcd restart was lost so).
   * Asked by a waiting call, the channel dials afresh instead, at most once per
   * MIN_REDIAL_MS: the connection layer's backoffs pace the asking.
   */
  #redialDue(): boolean {
    return !this.#closed && performance.now() - this.#dialledAt >= MIN_REDIAL_MS;
  }

  /**
   * Replaces the grpc-js client with a fresh one, which dials at once: its subchannel is its own
   * (`grpc.use_local_subchannel_pool`), with no backoff yet. Nothing runs on the old one: in
   * TRANSIENT_FAILURE it has no connection, and grpc-js fails calls at once rather than queue them.
   */
  #redial(): void {
    const old = this.#client;
    this.#client = new (grpcJs().Client)(this.target, this.#credentials, this.#channelOptions);
    this.#dialledAt = performance.now();
    old.close();
  }

  /** Current connectivity, without triggering a connection attempt. */
  state(): ChannelState {
    try {
      return channelState(this.#client.getChannel().getConnectivityState(false));
    } catch {
      return 'closed';
    }
  }

  /** True while connected: `ready()` would resolve at once, so a call need not wait a turn for it. */
  readyNow(): boolean {
    return this.state() === 'ready';
  }

  /**
   * Connects if needed and resolves once the channel is READY. Rejects with an unsent Unavailable
   * TransportError when the connection attempt fails (TRANSIENT_FAILURE), the channel is closed, or
   * `deadline` passes first; with an unsent Cancelled one when the signal aborts. Found in
   * TRANSIENT_FAILURE, the channel dials afresh if its last dial is 250 ms old, and rejects with
   * that attempt's error otherwise (grpc-js's own backoff would wait up to 5 s).
   */
  ready(deadline: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortedFailure(signal, false));
    const started = Date.now();
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      // One fresh dial per wait: if it fails too, the connection layer decides what comes next.
      let redialled = false;
      const finish = (error?: TransportError) => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve();
      };
      const unavailable = (details: string, cause?: unknown) =>
        finish(failure(GrpcStatus.Unavailable, details, false, cause));
      const onAbort = () => finish(abortedFailure(signal!, false));
      signal?.addEventListener('abort', onAbort, { once: true });
      const step = () => {
        if (settled) return;
        // Asked to connect, a closed grpc-js channel would dial again (its balancer's exitIdle).
        if (this.#closed) {
          unavailable(`channel to ${this.target} is closed`);
          return;
        }
        // The current client's: a redial (here or by another caller) replaces it, and closing
        // the old one wakes a watch on it.
        let channel: ReturnType<grpc.Client['getChannel']>;
        let state: grpc.connectivityState;
        try {
          channel = this.#client.getChannel();
          state = channel.getConnectivityState(true);
          if (
            state === grpcJs().connectivityState.TRANSIENT_FAILURE &&
            !redialled &&
            this.#redialDue()
          ) {
            redialled = true;
            this.#redial();
            channel = this.#client.getChannel();
            state = channel.getConnectivityState(true);
          }
        } catch (error) {
          unavailable(`channel to ${this.target} is closed`, error);
          return;
        }
        switch (state) {
          case grpcJs().connectivityState.READY:
            finish();
            return;
          case grpcJs().connectivityState.SHUTDOWN:
            unavailable(`channel to ${this.target} is closed`);
            return;
          case grpcJs().connectivityState.TRANSIENT_FAILURE:
            void this.#lastError().then((reason) =>
              unavailable(`cannot connect to ${this.target}${reason ? `: ${reason}` : ''}`),
            );
            return;
        }
        if (Date.now() >= deadline) {
          unavailable(`no connection to ${this.target} within ${Date.now() - started} ms`);
          return;
        }
        try {
          // On a change step() looks again; on grpc-js's deadline too, which its timer can reach
          // a millisecond before Date.now() does: the caller's deadline must have passed first.
          channel.watchConnectivityState(state, deadline, () => step());
        } catch (error) {
          unavailable(`channel to ${this.target} is closed`, error);
        }
      };
      step();
    });
  }

  /**
   * Why the last connection attempt failed, as grpc-js words it ("connect ECONNREFUSED...", a TLS
   * alert...). grpc-js only reveals it in the status of a call that fails to find a connection,
   * so this starts a health check that fails at once while the channel is in TRANSIENT_FAILURE;
   * should the channel have just connected, a harmless health check is all that is sent.
   */
  #lastError(): Promise<string | undefined> {
    return new Promise((resolve) => {
      try {
        this.#client.makeUnaryRequest<Uint8Array, Uint8Array>(
          HEALTH_CHECK,
          (msg) => toBuffer(msg),
          (buf) => buf,
          new Uint8Array(),
          new (grpcJs().Metadata)(),
          { deadline: Date.now() + 1_000 },
          (error) => {
            const details = error?.details ?? '';
            const at = details.indexOf(LAST_ERROR);
            if (error?.code !== grpcJs().status.UNAVAILABLE || at < 0) resolve(undefined);
            else
              resolve(details.slice(at + LAST_ERROR.length).replace(/\. Resolution note:.*$/s, ''));
          },
        );
      } catch {
        resolve(undefined);
      }
    });
  }

  /** One request, one response. */
  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    options: ChannelCallOptions,
  ): Promise<Res> {
    const { signal, closingSignal, signalOutlivesCall } = options;
    if (signal?.aborted) return Promise.reject(abortedFailure(signal, false));
    if (closingSignal?.aborted) return Promise.reject(abortedFailure(closingSignal, false));
    // Encoded here, not by grpc-js, so a request over the send limit is refused unsent with both
    // sizes named (grpc-js's own check names only the limit).
    let encoded: Buffer;
    try {
      encoded = toBuffer(method.request.encode(request).finish());
    } catch (error) {
      return Promise.reject(
        failure(GrpcStatus.Internal, 'Request message serialization failure', false, error),
      );
    }
    if (encoded.byteLength > this.#maxSendBytes) {
      return Promise.reject(requestTooLargeFailure(encoded.byteLength, this.#maxSendBytes, false));
    }
    const hold = this.#held.forCall();
    const refused = hold.take(encoded.byteLength + MESSAGE_PREFIX_BYTES);
    if (refused !== undefined) return Promise.reject(bufferFull(refused, false));
    const aborts = this.#aborts;
    return new Promise<Res>((resolve, reject) => {
      const cancelling = new CancelOnAbort();
      // grpc-js records a stack trace for every call, to add to a failure's stack: the frames of
      // this transport, never the user's code. Its capture cost more than the rest of the
      // transport's own work per call, so the call is made without one.
      const stackTraceLimit = Error.stackTraceLimit;
      if (STACK_TRACE_LIMIT_WRITABLE) Error.stackTraceLimit = 0;
      try {
        cancelling.call = this.#client.makeUnaryRequest<Req, Res>(
          method.path,
          () => encoded,
          (buf) => decodeResponse(method, buf),
          request,
          toGrpcMetadata(options.metadata),
          callOptions(options),
          (error, value) => {
            hold.end();
            cancelling.ended = true;
            if (signal) aborts.delete(signal, cancelling);
            if (closingSignal) aborts.delete(closingSignal, cancelling);
            if (error) reject(mapError(error, signal, closingSignal));
            else resolve(value as Res);
          },
        );
      } catch (error) {
        if (STACK_TRACE_LIMIT_WRITABLE) Error.stackTraceLimit = stackTraceLimit;
        hold.end();
        reject(notStarted(error));
        return;
      } finally {
        if (STACK_TRACE_LIMIT_WRITABLE) Error.stackTraceLimit = stackTraceLimit;
      }
      // Answer headers come after the whole request was read: none of it is held any longer.
      cancelling.call.once('metadata', () => hold.end());
      if (cancelling.ended) return;
      if (signal) aborts.add(signal, cancelling, signalOutlivesCall);
      if (closingSignal) aborts.add(closingSignal, cancelling, true);
    });
  }

  /** One request, a stream of responses; iterate it. */
  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    request: Req,
    options: ChannelCallOptions,
  ): ServerStream<Res> {
    const { signal } = options;
    if (signal?.aborted) return failedStream<Res>(abortedFailure(signal, false));
    let encoded: Buffer;
    try {
      encoded = toBuffer(method.request.encode(request).finish());
    } catch (error) {
      return failedStream<Res>(
        failure(GrpcStatus.Internal, 'Request message serialization failure', false, error),
      );
    }
    const hold = this.#held.forCall();
    const refused = hold.take(encoded.byteLength + MESSAGE_PREFIX_BYTES);
    if (refused !== undefined) return failedStream<Res>(bufferFull(refused, false));
    let call: grpc.ClientReadableStream<Res>;
    try {
      call = this.#client.makeServerStreamRequest<Req, Res>(
        method.path,
        () => encoded,
        (buf) => method.response.decode(buf),
        request,
        toGrpcMetadata(options.metadata),
        callOptions(options),
      );
    } catch (error) {
      hold.end();
      return failedStream<Res>(notStarted(error));
    }
    call.once('metadata', () => hold.end());
    call.once('status', () => hold.end());
    const onAbort = () => call.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    const iterator = readableToAsyncIterator<Res>(
      call,
      (error) => mapError(error, signal),
      () => {
        signal?.removeEventListener('abort', onAbort);
        call.cancel();
      },
    );
    return {
      cancel: () => call.cancel(),
      [Symbol.asyncIterator]: () => iterator,
    };
  }

  /** A bidirectional stream: write requests, iterate responses. */
  bidiStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    options: ChannelCallOptions,
  ): BidiStream<Req, Res> {
    const { signal } = options;
    if (signal?.aborted) return failedStream<Res>(abortedFailure(signal, false));
    let call: grpc.ClientDuplexStream<Buffer, Res>;
    try {
      // Requests are encoded before grpc-js takes them, so the bound counts their bytes.
      call = this.#client.makeBidiStreamRequest<Buffer, Res>(
        method.path,
        (encoded) => encoded,
        (buf) => method.response.decode(buf),
        toGrpcMetadata(options.metadata),
        callOptions(options),
      );
    } catch (error) {
      return failedStream<Res>(notStarted(error));
    }
    const onAbort = () => call.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    let finished = false;
    let ended = false;
    const hold = this.#held.forCall();
    /** A write refused (beyond the bound, not encodable): the stream ended with it. */
    let refusedWith: TransportError | undefined;
    call.once('close', () => hold.end());
    const iterator = readableToAsyncIterator<Res>(
      call,
      (error) => refusedWith ?? mapError(error, signal),
      () => {
        finished = true;
        signal?.removeEventListener('abort', onAbort);
        call.cancel();
      },
    );
    call.on('status', () => {
      finished = true;
      hold.end();
    });
    /** Ends the stream on this side: its iteration fails with `error`. */
    const endWith = (error: TransportError) => {
      refusedWith = error;
      finished = true;
      hold.end();
      call.cancel();
    };
    return {
      write: (req: Req) => {
        if (finished || ended || call.destroyed || call.writableEnded) {
          throw streamEndedFailure();
        }
        let encoded: Buffer;
        try {
          encoded = toBuffer(method.request.encode(req).finish());
        } catch (error) {
          endWith(
            failure(GrpcStatus.Internal, 'Request message serialization failure', true, error),
          );
          return;
        }
        const bytes = encoded.byteLength + MESSAGE_PREFIX_BYTES;
        const refused = hold.take(bytes);
        if (refused !== undefined) {
          endWith(bufferFull(refused, true));
          return;
        }
        call.write(encoded, () => hold.written(bytes));
      },
      end: () => {
        if (ended) return;
        ended = true;
        call.end();
      },
      cancel: () => call.cancel(),
      [Symbol.asyncIterator]: () => iterator,
    };
  }

  /** Closes the grpc-js client; calls in flight fail with Cancelled or Unavailable. */
  close(): void {
    this.#closed = true;
    this.#aborts.stop();
    this.#client.close();
  }
}

function callOptions(options: ChannelCallOptions): grpc.CallOptions {
  return options.deadline === undefined ? {} : { deadline: options.deadline };
}

/** Options of the @grpc/grpc-js transport. */
export interface GrpcJsTransportOptions {
  /**
   * Request bytes one channel may hold that grpc-js has not written (its server's flow-control
   * windows closed, its socket not read), in octets; default 64 MiB. grpc-js shows neither its
   * streams' buffers nor its HTTP/2 session, so a stream's message counts until grpc-js reports it
   * written and a unary or server-stream request until its answer begins (docs/guarantees.md). A
   * call that would go beyond it is refused before grpc-js gets it: the client retries it as any
   * unsent call, then fails with `UnavailableError` (a write: `WriteNotAppliedError`) whose
   * message names the bound; a stream write beyond it ends the stream. One request is always
   * taken while nothing is held.
   */
  readonly maxBufferedRequestBytes?: number;
}

/**
 * The transport on @grpc/grpc-js (`transport: 'grpc-js'`; the default is {@link H2Transport}).
 * @grpc/grpc-js is an optional peer dependency: install it beside the client to use this transport.
 * Each `open()` creates an independent grpc-js client with its own subchannel, so the connection
 * layer decides alone when an endpoint is redialled. Choose it for what only grpc-js does (HTTP
 * CONNECT proxies, `GRPC_TRACE` logging; docs/guarantees.md#transports).
 */
export class GrpcJsTransport implements Transport {
  /** Identifies the implementation in logs and tests. */
  readonly name = 'grpc-js';
  readonly #maxBufferedRequestBytes: number;

  /**
   * Throws InvalidConfigError when @grpc/grpc-js (an optional peer dependency of this package) is
   * not installed, or maxBufferedRequestBytes is not a positive integer.
   */
  constructor(options: GrpcJsTransportOptions = {}) {
    requireGrpcJsInstalled();
    this.#maxBufferedRequestBytes = requestBound(options.maxBufferedRequestBytes);
  }

  /** Creates a channel to one endpoint; it connects lazily. */
  open(options: ChannelOptions): Channel {
    return new GrpcJsChannel(options, this.#maxBufferedRequestBytes);
  }
}
