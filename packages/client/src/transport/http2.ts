// The lean transport: gRPC framed by hand over one node:http2 session per channel. It implements
// the same contract as the @grpc/grpc-js transport (connectivity states, `sent`, deadlines,
// cancellation, limits, TLS, keepalive pings while calls are open) with less CPU per call, because
// it has no resolver, load balancer, interceptor or filter layers to go through.
//
// http2-channel.ts holds a channel's connection lifecycle (shared with the h2 transport),
// http2-connect.ts how it dials and handshakes, http2-link.ts a connection's keepalive pings,
// http2-call.ts one call on an HTTP/2 stream, http2-streams.ts what callers get for a call (a
// promise, or a stream with bounded buffering).
import * as http2 from 'node:http2';
import type { Wire } from './channel-call.js';
import { goawayOf } from './goaway.js';
import { Call } from './http2-call.js';
import { Http2Channel } from './http2-channel.js';
import { connectSession } from './http2-connect.js';
import { requestBound } from './request-bound.js';
import type { Channel, ChannelOptions, Transport } from './types.js';

export { Http2Channel };

const { NGHTTP2_ENHANCE_YOUR_CALM } = http2.constants;

/**
 * Connections are node:http2 sessions; calls are Calls on their streams, holding at most
 * `maxBufferedRequestBytes` the server has not taken per session.
 */
const nodeHttp2Wire = (maxBufferedRequestBytes: number): Wire<http2.ClientHttp2Session> => ({
  connect(endpoint, events) {
    return connectSession(
      endpoint,
      (session, socket) => {
        // Errors end the session; its calls learn it from their streams' close.
        session.on('error', () => {});
        socket.on('error', (error) => session.destroy(error));
        socket.once('close', () => {
          session.destroy();
          events.lost(session);
        });
        session.once('goaway', (code: number, lastStreamId: number, data?: Buffer) => {
          if (code === NGHTTP2_ENHANCE_YOUR_CALM && data?.toString() === 'too_many_pings') {
            events.tooManyPings();
          }
          events.lost(session, goawayOf(code, lastStreamId, data));
        });
        session.once('close', () => events.lost(session));
        events.ready(session);
      },
      events.failed,
    );
  },
  newCall: (host, method, options, sink, maxReceiveBytes, maxSendBytes) =>
    new Call(host, method, options, sink, maxReceiveBytes, maxSendBytes, maxBufferedRequestBytes),
});

/** Options of {@link Http2Transport}. */
export interface Http2TransportOptions {
  /**
   * Request bytes one connection may hold that its server has not taken (what node:http2 keeps in
   * its streams' buffers while the server's flow-control windows are closed or its socket is not
   * read), in octets; default 64 MiB. A call that would go beyond it is refused before any byte of
   * it is written: the client retries it as any unsent call (on another endpoint when there is
   * one), then fails with `UnavailableError` (a write: `WriteNotAppliedError`) whose message names
   * the bound; a stream write beyond it ends the stream. One request is always taken while nothing
   * is held. The same option as the h2 transport's.
   */
  readonly maxBufferedRequestBytes?: number;
}

/**
 * gRPC framed directly over `node:http2`, one HTTP/2 connection per channel. It honours the same
 * contract as {@link H2Transport}, the default, and {@link GrpcJsTransport} (connectivity states,
 * the `sent` flag, deadlines, cancellation, message size limits, TLS with client certificates,
 * keepalive pings while calls are open), with less client CPU per call than grpc-js and more than
 * h2 (docs/guarantees.md#transports). Selected with `transport: 'http2'`.
 */
export class Http2Transport implements Transport {
  /** Identifies the implementation in logs and tests. */
  readonly name = 'http2';
  readonly #wire: Wire<http2.ClientHttp2Session>;

  /** Throws InvalidConfigError when maxBufferedRequestBytes is not a positive integer. */
  constructor(options: Http2TransportOptions = {}) {
    this.#wire = nodeHttp2Wire(requestBound(options.maxBufferedRequestBytes));
  }

  /** Creates a channel to one endpoint; it connects lazily. */
  open(options: ChannelOptions): Channel {
    return new Http2Channel(options, this.#wire);
  }
}
