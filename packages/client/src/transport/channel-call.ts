// What a channel and the calls on it see of each other, whichever HTTP/2 implementation carries
// them (node:http2 in http2-call.ts, the h2 transport's own in h2-call.ts).
import type { MethodDescriptor } from '../generated/methods.js';
import type { AbortWatch } from './abort-watch.js';
import type { DeadlineWatch } from './deadline-watch.js';
import type { Goaway } from './goaway.js';
import type { Link, LinkSession } from './http2-link.js';
import type { ChannelCallOptions, TlsOptions, TransportError } from './types.js';

/** What the channel sees of a call. */
export interface ChannelCall<S extends LinkSession = LinkSession> {
  readonly done: boolean;
  readonly sent: boolean;
  begin(): void;
  attach(link: Link<S>): void;
  fail(error: TransportError): void;
  abort(error: TransportError): void;
}

/** A call as http2-streams.ts drives it: requests written, responses paused and resumed. */
export interface WireCall<Req, S extends LinkSession = LinkSession> extends ChannelCall<S> {
  /** Frames and sends one request (queued until the stream exists). */
  write(request: Req): void;
  /** Half-closes the request side. */
  end(): void;
  /** Stops reading responses: flow control holds the server back. */
  pause(): void;
  resume(): void;
}

/** Where a call's responses go. */
export interface Sink<Res> {
  /** One response. */
  push(response: Res): void;
  /** The final outcome: undefined for OK. Called once. */
  end(error: TransportError | undefined): void;
}

/** What a call needs of its channel. */
export interface CallHost<S extends LinkSession = LinkSession> {
  /** The call wants a connection: the channel attaches one to it, or fails it. */
  acquire(call: ChannelCall<S>): void;
  /** `link` can take no new streams: the next call connects afresh. */
  detach(link: Link<S>): void;
  /** The call finished. */
  forget(call: ChannelCall<S>): void;
  /** Aborts calls when their signal fires. */
  readonly aborts: AbortWatch;
  /** Fails calls whose deadline passed. */
  readonly deadlines: DeadlineWatch;
}

/** How a channel's connections are made and what calls run on them. */
export interface Wire<S extends LinkSession> {
  /**
   * Dials `endpoint`: then `events.ready` once the HTTP/2 handshake completed or `events.failed`
   * with why not; after ready, `events.lost` once the connection can take no new streams. Returns
   * a handle to abandon the attempt.
   */
  connect(endpoint: Endpoint, events: WireEvents<S>): { destroy(): void };
  /** A call of `method` reporting to `sink`, not started yet. */
  newCall<Req, Res>(
    host: CallHost<S>,
    method: MethodDescriptor<Req, Res>,
    options: ChannelCallOptions,
    sink: Sink<Res>,
    maxReceiveBytes: number,
    maxSendBytes: number,
  ): WireCall<Req, S>;
}

/** What a connection attempt and the connection it makes report to the channel. */
export interface WireEvents<S> {
  ready(session: S): void;
  failed(reason: string): void;
  /**
   * The connection can take no new streams: it dropped, closed, or was told to go away (`goaway`,
   * what the server said).
   */
  lost(session: S, goaway?: Goaway): void;
  /** The server said GOAWAY `too_many_pings`: ping half as often on later connections. */
  tooManyPings(): void;
}

/** Where a channel connects, and how. */
export interface Endpoint {
  readonly host: string;
  readonly port: number;
  /** The socket file, for a unix target (then host and port are unused). */
  readonly path?: string;
  /** The session's authority as `http2.connect()` takes it: scheme, host (or TLS name), port. */
  readonly authority: string;
  readonly tls: TlsOptions | undefined;
}
