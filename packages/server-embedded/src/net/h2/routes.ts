// What a handler of the server's own HTTP/2 layer sees of a call, and the table of handlers by
// path. Messages are raw bytes: decoding and encoding them is the service registry's job.
import type { PeerCertificate } from 'node:tls';
import { GrpcCode } from '../../errors.js';

/** A call's request metadata, as grpc-js's Metadata answers `get`. */
export interface CallMetadata {
  /** The values of `key`: strings, or Buffers for a `-bin` key; [] when absent. */
  get(key: string): (string | Buffer)[];
}

/** One call, from its handler's side. */
export interface ServerCall {
  /** The method's path, `/package.Service/Method`. */
  readonly path: string;
  readonly metadata: CallMetadata;
  /** `address:port` of the client. */
  readonly peer: string;
  /** The client's certificate on a TLS connection that verified one. */
  readonly peerCertificate: PeerCertificate | undefined;
  /** Epoch ms the call must end by (grpc-timeout), if the client set one. */
  readonly deadline: number | undefined;
  /** Aborts when the client cancels (RST_STREAM), the connection is lost or the deadline passes. */
  readonly signal: AbortSignal;
  /** True once ended by `end`, the deadline, or the client. */
  readonly ended: boolean;
  /**
   * Sends one response message. False when the stream's buffer is full: wait for `onDrain`
   * before writing more (the message is queued all the same).
   */
  write(message: Uint8Array): boolean;
  /** Calls `listener` once, when the buffer has room again after a `write` returned false. */
  onDrain(listener: () => void): void;
  /** Ends the call with a status (OK by default) and its message. */
  end(code?: GrpcCode, message?: string): void;
}

/** A bidirectional call: the client's messages as events or as an async iterator. */
export interface BidiCall extends ServerCall, AsyncIterable<Buffer> {
  /** Every message, in order (those received before the listener was set first). */
  onMessage(listener: (message: Buffer) => void): void;
  /**
   * Stops delivering: messages (and the half-close) received meanwhile are held, and the stream's
   * HTTP/2 receive window is not given back, so a client that keeps writing is stopped by flow
   * control once the window is used (what is held is bounded by it). Other streams go on.
   */
  pause(): void;
  /** Delivers what was held, in order, gives back the withheld window and goes on. */
  resume(): void;
  /** The client ended its side (reported after every message it sent before). */
  onHalfClose(listener: () => void): void;
  /** True once the client ended its side. */
  readonly halfClosed: boolean;
}

/** Thrown (or rejected) by a handler: the call ends with this status. */
export class StatusError extends Error {
  constructor(
    readonly code: GrpcCode,
    readonly details: string,
  ) {
    super(details);
    this.name = 'StatusError';
  }
}

/** Answers one request with one response message. */
export type UnaryRoute = (request: Buffer, call: ServerCall) => Uint8Array | Promise<Uint8Array>;
/** Answers one request with messages written to the call; the handler ends the call. */
export type ServerStreamRoute = (request: Buffer, call: ServerCall) => void | Promise<void>;
/** Serves a bidirectional call; the handler ends it. */
export type BidiRoute = (call: BidiCall) => void | Promise<void>;

/** A route of the table. */
export type Route =
  | { readonly kind: 'unary'; readonly handler: UnaryRoute }
  | { readonly kind: 'server-stream'; readonly handler: ServerStreamRoute }
  | { readonly kind: 'bidi'; readonly handler: BidiRoute };

/** The handlers by path. */
export class Routes {
  readonly #routes = new Map<string, Route>();

  unary(path: string, handler: UnaryRoute): this {
    this.#routes.set(path, { kind: 'unary', handler });
    return this;
  }

  serverStream(path: string, handler: ServerStreamRoute): this {
    this.#routes.set(path, { kind: 'server-stream', handler });
    return this;
  }

  bidi(path: string, handler: BidiRoute): this {
    this.#routes.set(path, { kind: 'bidi', handler });
    return this;
  }

  /** The route of `path`, if any. */
  get(path: string): Route | undefined {
    return this.#routes.get(path);
  }
}

/** The status a handler's failure ends its call with: its StatusError, or UNKNOWN. */
export function statusOfFailure(error: unknown): { code: GrpcCode; details: string } {
  if (error instanceof StatusError) return { code: error.code, details: error.details };
  const details = error instanceof Error ? error.message : String(error);
  return { code: GrpcCode.UNKNOWN, details };
}
