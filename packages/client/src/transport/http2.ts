// The lean transport: gRPC framed by hand over one node:http2 session per channel. It implements
// the same contract as the @grpc/grpc-js transport (connectivity states, `sent`, deadlines,
// cancellation, limits, TLS, keepalive pings while calls are open) with less CPU per call, because
// it has no resolver, load balancer, interceptor or filter layers to go through.
import * as http2 from 'node:http2';
import { isIP, connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import type { MethodDescriptor } from '../generated/methods.js';
import { encodeFrame, FrameDecoder, type FrameError } from './grpc-frame.js';
import {
  encodeTimeout,
  isReservedHeader,
  type ReceivedStatus,
  responseMetadata,
  statusFromHeaders,
  statusFromHttp,
  statusFromReset,
} from './grpc-status.js';
import {
  type BidiStream,
  type Channel,
  type ChannelCallOptions,
  type ChannelOptions,
  type ChannelState,
  GrpcStatus,
  type ServerStream,
  type TlsOptions,
  type Transport,
  TransportError,
} from './types.js';

const { NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM, HTTP2_HEADER_STATUS } = http2.constants;

/** A connection attempt that has not completed its HTTP/2 handshake by then is abandoned. */
const CONNECT_TIMEOUT_MS = 20_000;
/** Backoff of a channel whose connection attempt failed: `failed` this long, then `idle`. */
const INITIAL_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 5_000;
/** Keepalive ping answer timeout when the options give none. */
const DEFAULT_KEEPALIVE_TIMEOUT_MS = 20_000;
/** Responses buffered per stream before the HTTP/2 stream is paused (flow control applies). */
const HIGH_WATER_MARK = 16;
const USER_AGENT = 'etcdkit-http2';
const CONTENT_TYPE = 'application/grpc+proto';

function failure(code: GrpcStatus, details: string, sent: boolean, cause?: unknown) {
  return new TransportError({ code, details, metadata: {}, sent, cause });
}

/** A Cancelled TransportError for an aborted signal; `cause` is the signal's reason. */
function abortedFailure(signal: AbortSignal, sent: boolean): TransportError {
  return failure(GrpcStatus.Cancelled, 'the call was aborted', sent, signal.reason);
}

function pem(value: Uint8Array | string | undefined): Buffer | string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/** Splits `host:port` (`[v6]:port` for IPv6) into the parts sockets take. */
function parseTarget(target: string): { host: string; port: number } {
  const url = new URL(`http://${target}`);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { host, port: url.port === '' ? 80 : Number(url.port) };
}

/**
 * One HTTP/2 connection of a channel, with its keepalive pings. Pings are sent only while calls
 * are open (etcd refuses pings on idle connections), one interval after the last answer; a ping
 * unanswered within the timeout destroys the connection, failing its calls with Unavailable.
 */
class Link {
  readonly session: http2.ClientHttp2Session;
  /** Calls with an HTTP/2 stream on this connection. */
  active = 0;
  readonly #intervalMs: number;
  readonly #timeoutMs: number;
  #timer: NodeJS.Timeout | undefined;
  /** The interval passed while no call was open: ping as soon as one starts. */
  #due = false;

  constructor(session: http2.ClientHttp2Session, intervalMs: number, timeoutMs: number) {
    this.session = session;
    this.#intervalMs = intervalMs;
    this.#timeoutMs = timeoutMs;
    this.#schedule();
  }

  callStarted(): void {
    if (this.active++ === 0) this.session.ref();
    if (this.#due) {
      this.#due = false;
      this.#ping();
    }
  }

  callEnded(): void {
    if (--this.active === 0 && !this.session.destroyed) this.session.unref();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#due = false;
  }

  #schedule(): void {
    if (this.#intervalMs <= 0 || this.session.destroyed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.active > 0) this.#ping();
      else this.#due = true;
    }, this.#intervalMs);
    this.#timer.unref();
  }

  #ping(): void {
    if (this.session.destroyed) return;
    const lost = new Error(`keepalive ping not answered within ${this.#timeoutMs} ms`);
    this.#timer = setTimeout(() => this.session.destroy(lost), this.#timeoutMs);
    this.#timer.unref();
    try {
      const sent = this.session.ping((error) => {
        clearTimeout(this.#timer);
        this.#timer = undefined;
        if (error) this.session.destroy(error);
        else this.#schedule();
      });
      if (!sent) this.session.destroy(new Error('keepalive ping could not be sent'));
    } catch (error) {
      this.session.destroy(error as Error);
    }
  }
}

/** What the channel sees of a call. */
interface ChannelCall {
  readonly done: boolean;
  readonly sent: boolean;
  begin(): void;
  attach(link: Link): void;
  fail(error: TransportError): void;
  abort(error: TransportError): void;
}

/** Where a call's responses go. */
interface Sink<Res> {
  /** One response. */
  message(response: Res): void;
  /** The final outcome: undefined for OK. Called once. */
  end(error: TransportError | undefined): void;
}

/**
 * One call on an Http2Channel: waits for a connection, sends its request frames, decodes the
 * response frames and settles with the status from the trailers, or with a local failure
 * (deadline, abort, cancel, limits), which always wins over whatever the server still sends.
 */
class Call<Req, Res> implements ChannelCall {
  readonly #channel: Http2Channel;
  readonly #method: MethodDescriptor<Req, Res>;
  readonly #options: ChannelCallOptions;
  readonly #sink: Sink<Res>;
  readonly #decoder: FrameDecoder;
  readonly #maxSendBytes: number;
  #link: Link | undefined;
  #stream: http2.ClientHttp2Stream | undefined;
  #headers: http2.IncomingHttpHeaders | undefined;
  #status: ReceivedStatus | undefined;
  #streamError: Error | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  /** Request frames written before the stream exists. */
  #pending: Buffer[] = [];
  #halfClosed = false;
  #done = false;
  /** Whether the channel may retry the stream's creation on a fresh connection once. */
  #restarts = 1;
  readonly #onAbort = () => this.abort(abortedFailure(this.#options.signal!, this.sent));

  constructor(
    channel: Http2Channel,
    method: MethodDescriptor<Req, Res>,
    options: ChannelCallOptions,
    sink: Sink<Res>,
    maxReceiveBytes: number,
    maxSendBytes: number,
  ) {
    this.#channel = channel;
    this.#method = method;
    this.#options = options;
    this.#sink = sink;
    this.#decoder = new FrameDecoder(maxReceiveBytes);
    this.#maxSendBytes = maxSendBytes;
  }

  /** True once the request was handed to an HTTP/2 stream on a ready connection. */
  get sent(): boolean {
    return this.#stream !== undefined;
  }

  get done(): boolean {
    return this.#done;
  }

  /** Starts the call: checks signal and deadline, then asks the channel for a connection. */
  begin(): void {
    if (this.#done) return;
    const { signal, deadline } = this.#options;
    if (signal?.aborted) {
      this.#finish(abortedFailure(signal, false));
      return;
    }
    if (deadline !== undefined) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        this.#finish(failure(GrpcStatus.DeadlineExceeded, 'Deadline exceeded', false));
        return;
      }
      this.#deadlineTimer = setTimeout(
        () => this.abort(failure(GrpcStatus.DeadlineExceeded, 'Deadline exceeded', this.sent)),
        remaining,
      );
    }
    signal?.addEventListener('abort', this.#onAbort, { once: true });
    this.#channel.acquire(this);
  }

  /** Frames and sends one request (queued until the stream exists). */
  write(request: Req): void {
    if (this.#done) return;
    let frame: Buffer;
    try {
      frame = encodeFrame(this.#method.request.encode(request).finish());
    } catch (error) {
      this.abort(
        failure(GrpcStatus.Internal, 'Request message serialization failure', this.sent, error),
      );
      return;
    }
    if (frame.byteLength - 5 > this.#maxSendBytes) {
      this.abort(
        failure(
          GrpcStatus.ResourceExhausted,
          `Attempted to send message with a size larger than ${this.#maxSendBytes}`,
          this.sent,
        ),
      );
      return;
    }
    if (this.#stream) this.#stream.write(frame);
    else this.#pending.push(frame);
  }

  /** Half-closes the request side. */
  end(): void {
    if (this.#halfClosed) return;
    this.#halfClosed = true;
    this.#stream?.end();
  }

  /** Ends the call now with `error`, resetting its stream (RST_STREAM CANCEL). */
  abort(error: TransportError): void {
    if (this.#done) return;
    this.#finish(error);
    const stream = this.#stream;
    if (stream && !stream.destroyed) {
      stream.close(NGHTTP2_CANCEL);
      // Drain what is buffered so the stream can close even while it was paused.
      stream.resume();
    }
  }

  /** Pauses reading responses (the consumer lags): HTTP/2 flow control holds the server back. */
  pause(): void {
    this.#stream?.pause();
  }

  resume(): void {
    this.#stream?.resume();
  }

  /** The channel has no connection for this call: it fails unsent. */
  fail(error: TransportError): void {
    this.#finish(error);
  }

  /** The channel has a ready connection: opens the HTTP/2 stream on it. */
  attach(link: Link): void {
    if (this.#done) return;
    const headers: http2.OutgoingHttpHeaders = {
      ':method': 'POST',
      ':path': this.#method.path,
      'content-type': CONTENT_TYPE,
      te: 'trailers',
      'user-agent': USER_AGENT,
    };
    const { deadline, metadata } = this.#options;
    if (deadline !== undefined) headers['grpc-timeout'] = encodeTimeout(deadline - Date.now());
    if (metadata) {
      for (const [key, value] of Object.entries(metadata)) {
        const name = key.toLowerCase();
        if (!isReservedHeader(name)) headers[name] = value;
      }
    }
    let stream: http2.ClientHttp2Stream;
    try {
      stream = link.session.request(headers, { endStream: false });
    } catch (error) {
      // The session closed under us (GOAWAY, drop) before the stream existed: nothing was sent.
      this.#channel.detach(link);
      if (this.#restarts-- > 0) {
        this.#channel.acquire(this);
        return;
      }
      this.#finish(
        failure(
          GrpcStatus.Unavailable,
          `Failed to start HTTP/2 stream: ${(error as Error).message}`,
          false,
          error,
        ),
      );
      return;
    }
    this.#link = link;
    this.#stream = stream;
    link.callStarted();
    stream.on('response', (h) => this.#onHeaders(h));
    stream.on('data', (chunk: Buffer) => this.#onData(chunk));
    stream.on('trailers', (t) => this.#onTrailers(t));
    stream.on('error', (error) => {
      this.#streamError ??= error;
    });
    stream.on('close', () => this.#onClose(stream, link));
    for (const frame of this.#pending) stream.write(frame);
    this.#pending = [];
    if (this.#halfClosed) stream.end();
  }

  #onHeaders(headers: http2.IncomingHttpHeaders): void {
    this.#headers = headers;
    // A trailers-only response: the status is in the headers.
    const status = statusFromHeaders(headers, responseMetadata(headers));
    if (status) this.#status = status;
  }

  #onTrailers(trailers: http2.IncomingHttpHeaders): void {
    const metadata = responseMetadata(this.#headers, trailers);
    this.#status = statusFromHeaders(trailers, metadata) ?? {
      code: GrpcStatus.Unknown,
      details: 'No status received',
      metadata,
    };
  }

  #onData(chunk: Buffer): void {
    if (this.#done) return;
    let messages: Buffer[];
    try {
      messages = this.#decoder.push(chunk);
    } catch (error) {
      const e = error as FrameError;
      this.abort(failure(e.code, e.message, true, e));
      return;
    }
    for (const bytes of messages) {
      let response: Res;
      try {
        response = this.#method.response.decode(bytes);
      } catch (error) {
        this.abort(failure(GrpcStatus.Internal, 'Failed to parse server response', true, error));
        return;
      }
      this.#sink.message(response);
      if (this.#done) return;
    }
  }

  #onClose(stream: http2.ClientHttp2Stream, link: Link): void {
    link.callEnded();
    if (this.#done) return;
    const status = this.#status;
    if (status) {
      this.#finish(
        status.code === GrpcStatus.OK ? undefined : new TransportError({ ...status, sent: true }),
      );
      return;
    }
    if (link.session.destroyed) {
      const reason = this.#streamError?.cause ?? this.#streamError;
      const why = reason instanceof Error && reason.message ? `: ${reason.message}` : '';
      this.#finish(failure(GrpcStatus.Unavailable, `Connection dropped${why}`, true, reason));
      return;
    }
    const http = Number(this.#headers?.[HTTP2_HEADER_STATUS] ?? 200);
    const mapped = http !== 200 ? statusFromHttp(http) : statusFromReset(stream.rstCode ?? 0);
    this.#finish(failure(mapped.code, mapped.details, true, this.#streamError));
  }

  #finish(error: TransportError | undefined): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#deadlineTimer);
    this.#options.signal?.removeEventListener('abort', this.#onAbort);
    this.#pending = [];
    this.#channel.forget(this);
    this.#sink.end(error);
  }

  /** The connection this call's stream uses, if it has one. */
  get link(): Link | undefined {
    return this.#link;
  }
}

/**
 * Responses of a stream as an async iterator with bounded buffering: the call is paused while
 * `HIGH_WATER_MARK` responses wait for the consumer. The outcome is reported after every response
 * received before it; an error is thrown once.
 */
class ResponseQueue<Res> implements Sink<Res>, AsyncIterator<Res> {
  readonly #items: Res[] = [];
  #call: Call<unknown, Res> | undefined;
  #ended = false;
  #error: TransportError | undefined;
  #finished = false;
  #paused = false;
  #wake: (() => void) | undefined;

  bind(call: Call<unknown, Res>): void {
    this.#call = call;
  }

  message(response: Res): void {
    this.#items.push(response);
    if (this.#items.length >= HIGH_WATER_MARK && !this.#paused) {
      this.#paused = true;
      this.#call?.pause();
    }
    this.#notify();
  }

  end(error: TransportError | undefined): void {
    this.#ended = true;
    this.#error = error;
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  async next(): Promise<IteratorResult<Res>> {
    while (!this.#finished) {
      if (this.#items.length > 0) {
        const value = this.#items.shift() as Res;
        if (this.#paused && this.#items.length <= HIGH_WATER_MARK / 2) {
          this.#paused = false;
          this.#call?.resume();
        }
        return { done: false, value };
      }
      if (this.#ended) {
        this.#finished = true;
        if (this.#error) throw this.#error;
        break;
      }
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
    return { done: true, value: undefined };
  }

  async return(): Promise<IteratorResult<Res>> {
    if (!this.#finished) {
      this.#finished = true;
      this.#items.length = 0;
      this.#call?.abort(failure(GrpcStatus.Cancelled, 'Cancelled on client', this.#call.sent));
    }
    return { done: true, value: undefined };
  }
}

/** One endpoint, one HTTP/2 connection at a time, redialled after it drops. */
export class Http2Channel implements Channel {
  readonly target: string;
  readonly #host: string;
  readonly #port: number;
  readonly #authority: string;
  readonly #tls: TlsOptions | undefined;
  readonly #maxReceiveBytes: number;
  readonly #maxSendBytes: number;
  #keepaliveMs: number;
  readonly #keepaliveTimeoutMs: number;
  #state: ChannelState = 'idle';
  #link: Link | undefined;
  #attempt: http2.ClientHttp2Session | undefined;
  #lastError = '';
  #failures = 0;
  #backoffTimer: NodeJS.Timeout | undefined;
  /** Waiting for the connection attempt in progress: called with its link, or with its error. */
  readonly #waiters = new Set<(link: Link | undefined, error: string) => void>();
  /** Calls not finished yet (waiting for a connection or with a stream). */
  readonly #calls = new Set<ChannelCall>();

  /** Prepares a channel to `options.target`; nothing connects until the first call or `ready()`. */
  constructor(options: ChannelOptions) {
    this.target = options.target;
    const { host, port } = parseTarget(options.target);
    this.#host = host;
    this.#port = port;
    this.#tls = options.tls;
    const authorityHost = options.tls?.serverName ?? (isIP(host) === 6 ? `[${host}]` : host);
    this.#authority = `${options.tls ? 'https' : 'http'}://${authorityHost}:${port}`;
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
      const waiter = (link: Link | undefined, error: string) =>
        settle(link ? undefined : this.#cannotConnect(error));
      const onAbort = () => settle(abortedFailure(signal!, false));
      this.#waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
      if (Number.isFinite(deadline)) {
        timer = setTimeout(
          () =>
            settle(
              failure(
                GrpcStatus.Unavailable,
                `no connection to ${this.target} within ${Date.now() - started} ms`,
                false,
              ),
            ),
          Math.max(0, deadline - Date.now()),
        );
      }
    });
  }

  /** One request, one response. */
  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    options: ChannelCallOptions,
  ): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      let response: Res | undefined;
      let received = 0;
      const call: Call<Req, Res> = new Call(
        this,
        method,
        options,
        {
          message: (res) => {
            if (++received > 1) {
              call.abort(failure(GrpcStatus.Unimplemented, 'Too many responses received', true));
            } else response = res;
          },
          end: (error) => {
            if (error) reject(error);
            else if (received === 0)
              reject(failure(GrpcStatus.Unimplemented, 'No message received', true));
            else resolve(response as Res);
          },
        },
        this.#maxReceiveBytes,
        this.#maxSendBytes,
      );
      // The request is framed (and checked against the send limit) before any connection.
      call.write(request);
      call.end();
      this.#open(call);
    });
  }

  /** One request, a stream of responses; iterate it. */
  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    request: Req,
    options: ChannelCallOptions,
  ): ServerStream<Res> {
    const queue = new ResponseQueue<Res>();
    const call = this.#stream(method, options, queue);
    call.write(request);
    call.end();
    this.#open(call);
    return {
      cancel: () => call.abort(failure(GrpcStatus.Cancelled, 'Cancelled on client', call.sent)),
      [Symbol.asyncIterator]: () => queue,
    };
  }

  /** A bidirectional stream: write requests, iterate responses. */
  bidiStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    options: ChannelCallOptions,
  ): BidiStream<Req, Res> {
    const queue = new ResponseQueue<Res>();
    const call = this.#stream(method, options, queue);
    this.#open(call);
    let ended = false;
    return {
      write: (request: Req) => {
        if (call.done || ended) {
          throw failure(GrpcStatus.Cancelled, 'the stream has ended', false);
        }
        call.write(request);
      },
      end: () => {
        ended = true;
        call.end();
      },
      cancel: () => call.abort(failure(GrpcStatus.Cancelled, 'Cancelled on client', call.sent)),
      [Symbol.asyncIterator]: () => queue,
    };
  }

  /** Closes the channel: waiting calls fail unsent, calls in flight fail with Cancelled. */
  close(): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    clearTimeout(this.#backoffTimer);
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

  #stream<Req, Res>(
    method: MethodDescriptor<Req, Res>,
    options: ChannelCallOptions,
    queue: ResponseQueue<Res>,
  ): Call<Req, Res> {
    const call = new Call(this, method, options, queue, this.#maxReceiveBytes, this.#maxSendBytes);
    queue.bind(call as Call<unknown, Res>);
    return call;
  }

  #open(call: ChannelCall): void {
    if (call.done) return;
    this.#calls.add(call);
    call.begin();
  }

  /** @internal A call wants a connection: now if ready, after the attempt if connecting. */
  acquire(call: ChannelCall): void {
    switch (this.#state) {
      case 'ready':
        call.attach(this.#link!);
        return;
      case 'closed':
        call.fail(failure(GrpcStatus.Unavailable, 'Channel closed before call started', false));
        return;
      case 'failed':
        call.fail(
          failure(
            GrpcStatus.Unavailable,
            `No connection established. Last error: ${this.#lastError}`,
            false,
          ),
        );
        return;
      case 'idle':
        this.#connect();
        break;
      case 'connecting':
        break;
    }
    const waiter = (link: Link | undefined, error: string) => {
      this.#waiters.delete(waiter);
      if (call.done) return;
      if (link) call.attach(link);
      else
        call.fail(
          failure(GrpcStatus.Unavailable, `No connection established. Last error: ${error}`, false),
        );
    };
    this.#waiters.add(waiter);
  }

  /** @internal A call finished. */
  forget(call: ChannelCall): void {
    this.#calls.delete(call);
  }

  /** @internal `link` can take no new streams: the next call connects afresh. */
  detach(link: Link): void {
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

  #notify(link: Link | undefined, error: string): void {
    for (const waiter of [...this.#waiters]) waiter(link, error);
    this.#waiters.clear();
  }

  #dial(): Duplex {
    const host = this.#host;
    const port = this.#port;
    const tls = this.#tls;
    const socket = tls
      ? tlsConnect({
          host,
          port,
          ca: pem(tls.ca),
          cert: pem(tls.cert),
          key: pem(tls.key),
          // An IP address is not a valid SNI name; the certificate is then checked against it.
          servername: tls.serverName ?? (isIP(host) ? undefined : host),
          ALPNProtocols: ['h2'],
        })
      : netConnect({ host, port });
    socket.setNoDelay(true);
    return socket;
  }

  #connect(): void {
    this.#state = 'connecting';
    const socket = this.#dial();
    const session = http2.connect(this.#authority, {
      createConnection: () => socket,
      settings: { enablePush: false },
      // Node's default session memory cap (10 MB) would refuse streams while large messages are
      // buffered; the receive limit and flow control bound memory instead.
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
    });
    this.#attempt = session;
    session.unref();
    const timer = setTimeout(
      () => fail(new Error(`no HTTP/2 handshake within ${CONNECT_TIMEOUT_MS} ms`)),
      CONNECT_TIMEOUT_MS,
    );
    timer.unref();
    const cleanup = () => {
      clearTimeout(timer);
      session.off('remoteSettings', onSettings);
      session.off('error', fail);
      session.off('close', onClose);
      // A TLS alert (say, a refused client certificate) reaches the socket, not the session.
      socket.off('error', fail);
      socket.off('close', onClose);
    };
    const onSettings = () => {
      cleanup();
      if (this.#attempt !== session) return;
      this.#attempt = undefined;
      this.#adopt(session, socket);
    };
    const onClose = () => fail(new Error('connection closed before the HTTP/2 handshake'));
    const fail = (error: Error) => {
      cleanup();
      // Errors after this one (a destroyed socket's) must not go unhandled.
      session.on('error', () => {});
      socket.on('error', () => {});
      session.destroy();
      socket.destroy();
      if (this.#attempt !== session) return;
      this.#attempt = undefined;
      this.#connectFailed(error.message || String(error));
    };
    session.once('remoteSettings', onSettings);
    session.once('error', fail);
    session.once('close', onClose);
    socket.once('error', fail);
    socket.once('close', onClose);
  }

  #adopt(session: http2.ClientHttp2Session, socket: Duplex): void {
    const link = new Link(session, this.#keepaliveMs, this.#keepaliveTimeoutMs);
    this.#link = link;
    this.#state = 'ready';
    this.#failures = 0;
    // Errors end the session; its calls learn it from their streams' close.
    session.on('error', () => {});
    socket.on('error', (error) => session.destroy(error));
    socket.once('close', () => {
      session.destroy();
      this.detach(link);
    });
    session.once('goaway', (code: number, _lastStreamId: number, data?: Buffer) => {
      if (code === NGHTTP2_ENHANCE_YOUR_CALM && data?.toString() === 'too_many_pings') {
        // The server finds our pings too frequent: halve their rate for the next connections.
        this.#keepaliveMs *= 2;
      }
      this.detach(link);
    });
    session.once('close', () => this.detach(link));
    this.#notify(link, '');
  }

  #connectFailed(reason: string): void {
    this.#lastError = reason;
    if (this.#state === 'closed') return;
    this.#state = 'failed';
    this.#failures++;
    const backoff = Math.min(MAX_BACKOFF_MS, INITIAL_BACKOFF_MS * 2 ** (this.#failures - 1));
    this.#backoffTimer = setTimeout(() => {
      if (this.#state === 'failed') this.#state = 'idle';
    }, backoff);
    this.#backoffTimer.unref();
    this.#notify(undefined, reason);
  }
}

/**
 * A lean transport: gRPC framed directly over `node:http2`, one HTTP/2 connection per channel.
 * It honours the same contract as {@link GrpcJsTransport} (connectivity states, the `sent` flag,
 * deadlines, cancellation, message size limits, TLS with client certificates, keepalive pings
 * while calls are open) with less client CPU per call (docs/guarantees.md#transports). Select it with
 * `new Etcd({ endpoints, transport: new Http2Transport() })` (or `transport: 'http2'`).
 */
export class Http2Transport implements Transport {
  /** Identifies the implementation in logs and tests. */
  readonly name = 'http2';

  /** Creates a channel to one endpoint; it connects lazily. */
  open(options: ChannelOptions): Channel {
    return new Http2Channel(options);
  }
}
