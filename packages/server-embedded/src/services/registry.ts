// What the services register their handlers with: the generated method table and handler shapes
// that say nothing of the gRPC server under them (the server's own HTTP/2, net/h2-registry.ts).
// Thrown EtcdServerErrors become their gRPC status.
import type { PeerCertificate } from 'node:tls';
import type { MethodDescriptor } from '@etcdkit/client/protocol';
import type { EncodedMessage } from '../encoded-message.js';
import { EtcdServerError, GrpcCode } from '../errors.js';

/** What a handler may return: any subset of the response's fields (unset ones are defaults). */
export type ResponseOf<Res> = { [K in keyof Res]?: Res[K] | null };

/**
 * The call a handler serves, for what the request itself does not say: its metadata (the auth
 * token), its TLS peer (a client certificate) and whether the client cancelled it.
 */
export interface CallInfo {
  /** True once the client cancelled the call (or its deadline passed, or its connection dropped). */
  readonly cancelled: boolean;
  /** The TLS peer: its certificate when the connection verified one. */
  getAuthContext(): { readonly sslPeerCertificate?: PeerCertificate | undefined };
  /** `address:port` of the client. */
  getPeer(): string;
  /** The request's metadata; only its values are read. */
  readonly metadata: { get(key: string): (string | Buffer)[] };
}

/** A unary handler; `requestBytes` is the size of the request as received. */
export type UnaryHandler<Req, Res> = (
  request: Req,
  requestBytes: number,
  call: CallInfo,
) => ResponseOf<Res> | Promise<ResponseOf<Res>>;

/**
 * A unary handler that may wait for a long time (Lock, Campaign). `signal` aborts when the call
 * ends without an answer: the client cancelled it, its deadline passed or its connection dropped.
 */
export type WaitingUnaryHandler<Req, Res> = (
  request: Req,
  requestBytes: number,
  signal: AbortSignal,
  call: CallInfo,
) => Promise<ResponseOf<Res>>;

/** Writes one message of a response stream; resolves once it may send the next (backpressure). */
export type StreamSend<Res> = (message: ResponseOf<Res>) => Promise<void>;

/**
 * A server-streaming handler: sends messages, then returns (or throws to end with an error).
 * `signal` aborts when the client cancels the stream or its connection drops.
 */
export type ServerStreamHandler<Req, Res> = (
  request: Req,
  send: StreamSend<Res>,
  call: CallInfo,
  signal: AbortSignal,
) => Promise<void>;

/**
 * A bidirectional call as its handler sees it, the part of grpc-js's ServerDuplexStream the
 * services use: requests as 'data' events, responses written with backpressure (write() returning
 * false, then 'drain'), `emit('error', status)` to end with a status.
 */
export interface BidiStream<Req, Res> extends CallInfo {
  on(event: 'data', listener: (request: Req) => void): this;
  /** 'end': the client ended its side; 'cancelled' and 'close': the call is over. */
  on(event: 'end' | 'cancelled' | 'close', listener: () => void): this;
  on(event: 'error', listener: (error: Error) => void): this;
  once(event: 'drain', listener: () => void): this;
  emit(event: 'error', status: StatusFailure): boolean;
  /**
   * Writes one response (or one already encoded); false asks to wait for 'drain' before writing
   * more.
   */
  write(message: ResponseOf<Res> | EncodedMessage): boolean;
  /** Ends the call with status OK. */
  end(): void;
  /** Stops delivering requests (the client then feels HTTP/2 flow control). */
  pause(): void;
  /** Delivers requests again. */
  resume(): void;
}

/** A bidirectional-streaming handler: reads requests as they come and writes responses itself. */
export type BidiHandler<Req, Res> = (call: BidiStream<Req, Res>) => void;

/** A gRPC status as an Error: what a handler emits as 'error' to end its call with it. */
export interface StatusFailure extends Error {
  readonly code: GrpcCode;
  readonly details: string;
}

/** A gRPC status for anything a handler throws. */
export function toStatus(error: unknown): StatusFailure {
  if (error instanceof EtcdServerError) {
    return Object.assign(new Error(error.message), {
      code: error.grpcCode,
      details: error.message,
    });
  }
  // Like grpc-go for a plain error: status Unknown with the error's text.
  const message = error instanceof Error ? error.message : String(error);
  return Object.assign(new Error(message), { code: GrpcCode.UNKNOWN, details: message });
}

/** Where the services register their handlers. */
export interface ServiceRegistry {
  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    handler: UnaryHandler<Req, Res>,
  ): void;
  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    handler: ServerStreamHandler<Req, Res>,
  ): void;
  /** Registers a {@link WaitingUnaryHandler}: a unary call that learns when it is cancelled. */
  waitingUnary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    handler: WaitingUnaryHandler<Req, Res>,
  ): void;
  bidi<Req, Res>(
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    handler: BidiHandler<Req, Res>,
  ): void;
  /** Answers every method of `service` that has no handler yet with Unimplemented. */
  unimplemented(service: Record<string, MethodDescriptor<unknown, unknown>>): void;
}

/**
 * The status of a method that has no handler: grpc-go's answer to a method its server does not
 * register, which is what an etcd release without the method sends (RangeStream before 3.7).
 */
export function unimplementedStatus(path: string): { code: GrpcCode; details: string } {
  const [service = '', method = ''] = path.replace(/^\//, '').split('/');
  return {
    code: GrpcCode.UNIMPLEMENTED,
    details: `unknown method ${method} for service ${service}`,
  };
}
