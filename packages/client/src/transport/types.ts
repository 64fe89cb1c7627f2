// The transport contract: how one RPC reaches one endpoint.
//
// Everything above this layer (connection, services) speaks only these types, so a second
// implementation (for example a lean gRPC framing over node:http2) can be added behind an option and
// run through the same test suite as the @grpc/grpc-js one.
import type { MethodDescriptor } from '../generated/methods.js';

/** gRPC status codes, as numbers on the wire. */
export enum GrpcStatus {
  OK = 0,
  Cancelled = 1,
  Unknown = 2,
  InvalidArgument = 3,
  DeadlineExceeded = 4,
  NotFound = 5,
  AlreadyExists = 6,
  PermissionDenied = 7,
  ResourceExhausted = 8,
  FailedPrecondition = 9,
  Aborted = 10,
  OutOfRange = 11,
  Unimplemented = 12,
  Internal = 13,
  Unavailable = 14,
  DataLoss = 15,
  Unauthenticated = 16,
}

/**
 * The same codes under the names of gRPC's specification (doc/statuscodes.md: `UNAVAILABLE`...), as
 * the embedded server spells them. Its values are {@link GrpcStatus}'s, the one table of codes.
 */
export const GrpcCode = {
  OK: GrpcStatus.OK,
  CANCELLED: GrpcStatus.Cancelled,
  UNKNOWN: GrpcStatus.Unknown,
  INVALID_ARGUMENT: GrpcStatus.InvalidArgument,
  DEADLINE_EXCEEDED: GrpcStatus.DeadlineExceeded,
  NOT_FOUND: GrpcStatus.NotFound,
  ALREADY_EXISTS: GrpcStatus.AlreadyExists,
  PERMISSION_DENIED: GrpcStatus.PermissionDenied,
  RESOURCE_EXHAUSTED: GrpcStatus.ResourceExhausted,
  FAILED_PRECONDITION: GrpcStatus.FailedPrecondition,
  ABORTED: GrpcStatus.Aborted,
  OUT_OF_RANGE: GrpcStatus.OutOfRange,
  UNIMPLEMENTED: GrpcStatus.Unimplemented,
  INTERNAL: GrpcStatus.Internal,
  UNAVAILABLE: GrpcStatus.Unavailable,
  DATA_LOSS: GrpcStatus.DataLoss,
  UNAUTHENTICATED: GrpcStatus.Unauthenticated,
} as const satisfies Record<string, GrpcStatus>;

/** A gRPC status code, under the name the embedded server uses ({@link GrpcStatus}'s values). */
export type GrpcCode = GrpcStatus;

/** Request metadata (gRPC headers). Keys are lower case. */
export type Metadata = Readonly<Record<string, string>>;

/** Options of one call on a channel. */
export interface ChannelCallOptions {
  /** Headers sent with the call (auth token, `hasleader`). */
  readonly metadata?: Metadata;
  /** Absolute deadline in epoch milliseconds; the call fails with DeadlineExceeded after it. */
  readonly deadline?: number;
  /** Aborting cancels the call; the promise or stream then fails with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * The signal is shared by many calls and lives longer than any (the client's closing signal): a
   * channel may keep its one listener on it between calls instead of adding one per call.
   */
  readonly signalOutlivesCall?: boolean;
  /**
   * The client's closing signal beside a caller's `signal`: either stops the call. Given only to a
   * channel whose `takesClosingSignal` is true; any other gets one `signal` that stands for both.
   */
  readonly closingSignal?: AbortSignal;
}

/**
 * Why a call failed, as the transport saw it. `sent` tells the retry policy whether a server may
 * have processed the request: false only when it provably did not, because no byte of the request
 * was written (no connection could be established, the stream was never opened) or because the
 * server refused the stream before processing it (RST_STREAM REFUSED_STREAM, or a GOAWAY whose
 * last-stream-id is below the stream's: RFC 9113, 8.7 and 6.8).
 */
export interface TransportFailure {
  readonly code: GrpcStatus;
  readonly details: string;
  readonly metadata: Metadata;
  readonly sent: boolean;
  /**
   * The connection ended because the HTTP/2 protocol was broken: the client found a frame it must
   * not accept, or the server's GOAWAY named a protocol error. A new connection to the same
   * server would most likely meet it again.
   */
  readonly protocolError?: boolean;
  readonly cause?: unknown;
}

/** The error a channel rejects with. Upper layers turn it into a typed EtcdError. */
export class TransportError extends Error implements TransportFailure {
  readonly code: GrpcStatus;
  readonly details: string;
  readonly metadata: Metadata;
  readonly sent: boolean;
  readonly protocolError: boolean;

  constructor(failure: TransportFailure) {
    super(failure.details || GrpcStatus[failure.code] || 'transport error', {
      cause: failure.cause,
    });
    this.name = 'TransportError';
    this.code = failure.code;
    this.details = failure.details;
    this.metadata = failure.metadata;
    this.sent = failure.sent;
    this.protocolError = failure.protocolError ?? false;
  }
}

/** A server stream: iterate the responses; `cancel()` ends it early. */
export interface ServerStream<Res> extends AsyncIterable<Res> {
  /**
   * The endpoint (`host:port`) the stream is open on, when known. Streams opened through a
   * Connection (`Rpc.serverStream`) tell it from the moment iteration opens them on an endpoint
   * (before the first answer; an open that fails over names the endpoint it is trying now) and
   * keep it after they end; it is undefined before iteration starts and while no endpoint holds it.
   */
  readonly endpoint?: string;
  cancel(): void;
}

/** A bidirectional stream. Responses are iterated; requests are written until `end()`. */
export interface BidiStream<Req, Res> extends AsyncIterable<Res> {
  /**
   * The endpoint (`host:port`) the stream is open on, when known. Streams opened through a
   * Connection (`Rpc.bidiStream`) always tell; stream owners pass it to `Rpc.redial`.
   */
  readonly endpoint?: string;
  /** Sends one request. Throws when the stream has already ended. */
  write(request: Req): void;
  /** Half-closes the stream: no more requests; responses may still arrive. */
  end(): void;
  /** Cancels the stream at once. Iteration ends with a Cancelled TransportError. */
  cancel(): void;
}

/** TLS settings for a channel. Buffers hold PEM text. */
export interface TlsOptions {
  /** CA certificates to trust; the system roots when absent. */
  readonly ca?: Uint8Array | string;
  /** Client certificate chain, for mutual TLS. */
  readonly cert?: Uint8Array | string;
  /** Client private key, for mutual TLS. */
  readonly key?: Uint8Array | string;
  /** Name to verify the server certificate against, when it differs from the endpoint host. */
  readonly serverName?: string;
}

/** Connectivity as the connection layer needs to know it. */
export type ChannelState = 'idle' | 'connecting' | 'ready' | 'failed' | 'closed';

/** One connection to one endpoint. */
export interface Channel {
  /** The endpoint this channel talks to, as `host:port` (or `unix:...`, as ChannelOptions.target). */
  readonly target: string;
  /** Current connectivity. */
  state(): ChannelState;
  /**
   * Resolves once the channel is ready to send, or rejects with an unsent Unavailable
   * TransportError when it cannot connect before `deadline` (epoch ms) or the signal aborts.
   */
  ready(deadline: number, signal?: AbortSignal): Promise<void>;
  /**
   * Optional: true when `ready()` would resolve at once (the channel is connected), so a call may go
   * ahead without waiting a turn for it. A channel without it is always asked `ready()`.
   */
  readyNow?(): boolean;
  /**
   * Optional: true when the channel stops a unary call on `ChannelCallOptions.closingSignal` as on
   * its `signal`. A caller's signal then reaches it as it is, with no signal made to link the two
   * per call (an AbortController and two listeners).
   */
  readonly takesClosingSignal?: boolean;
  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    options: ChannelCallOptions,
  ): Promise<Res>;
  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    request: Req,
    options: ChannelCallOptions,
  ): ServerStream<Res>;
  bidiStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    options: ChannelCallOptions,
  ): BidiStream<Req, Res>;
  /** Closes the channel; calls in flight fail with Cancelled. */
  close(): void;
}

/** Options a transport needs to open a channel. */
export interface ChannelOptions {
  /**
   * `host:port` of the endpoint, or for a unix socket `unix:///absolute/path` or
   * `unix:relative/path` (the forms grpc-js takes as targets).
   */
  readonly target: string;
  /** TLS when set; plaintext otherwise. */
  readonly tls?: TlsOptions;
  /** Largest response accepted, in bytes. */
  readonly maxReceiveMessageBytes?: number;
  /** Largest request sent, in bytes. */
  readonly maxSendMessageBytes?: number;
  /** Interval of HTTP/2 keepalive pings, in ms; 0 disables them. */
  readonly keepaliveIntervalMs?: number;
  /** How long to wait for a keepalive ping's answer before closing the connection, in ms. */
  readonly keepaliveTimeoutMs?: number;
}

/** A way to open channels. The client's own HTTP/2 (`'h2'`, `H2Transport`) is the default. */
export interface Transport {
  readonly name: string;
  open(options: ChannelOptions): Channel;
}
