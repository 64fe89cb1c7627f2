// The h2 transport: gRPC over HTTP/2 spoken by the client itself over a node:net or node:tls socket
// (ALPN h2), without node:http2. The channel lifecycle (http2-channel.ts), keepalive pings
// (http2-link.ts) and what callers get for a call (http2-streams.ts) are the http2 transport's;
// h2-connection.ts is the HTTP/2 connection, h2-call.ts one call on one of its streams.
import type { TLSSocket } from 'node:tls';
import type { Wire } from './channel-call.js';
import { goawayOf } from './goaway.js';
import { ENHANCE_YOUR_CALM } from './h2/frames.js';
import { H2Call } from './h2-call.js';
import { H2Connection, type H2ConnectionLimits } from './h2-connection.js';
import { Http2Channel } from './http2-channel.js';
import { CONNECT_TIMEOUT_MS, dial } from './http2-connect.js';
import { requestBound } from './request-bound.js';
import type { Channel, ChannelOptions, Transport } from './types.js';

const USER_AGENT = 'etcdkit-h2';
const CONTENT_TYPE = 'application/grpc+proto';

/**
 * Connections are H2Connections over a socket this side dials, with `limits`; calls are H2Calls.
 */
const h2Wire = (limits: H2ConnectionLimits): Wire<H2Connection> => ({
  connect(endpoint, events) {
    const socket = dial(endpoint);
    let ready = false;
    const connection = new H2Connection(
      socket,
      {
        scheme: endpoint.tls ? 'https' : 'http',
        authority: new URL(endpoint.authority).host,
        contentType: CONTENT_TYPE,
        userAgent: USER_AGENT,
      },
      {
        onReady: () => {
          ready = true;
          clearTimeout(timer);
          events.ready(connection);
        },
        onGoaway: (code, lastStreamId, debug) => {
          if (code === ENHANCE_YOUR_CALM && debug.toString() === 'too_many_pings') {
            events.tooManyPings();
          }
          if (ready) events.lost(connection, goawayOf(code, lastStreamId, debug));
        },
        onClose: (error) => {
          clearTimeout(timer);
          if (ready) events.lost(connection);
          else events.failed(error?.message || 'connection closed before the HTTP/2 handshake');
        },
      },
      limits,
    );
    connection.unref();
    if (endpoint.tls) {
      // A server that negotiated another protocol does not speak HTTP/2 on this socket.
      socket.once('secureConnect', () => {
        const protocol = (socket as TLSSocket).alpnProtocol;
        if (protocol && protocol !== 'h2') {
          connection.destroy(new Error(`the server negotiated ${protocol}, not h2`));
        }
      });
    }
    const timer = setTimeout(
      () => connection.destroy(new Error(`no HTTP/2 handshake within ${CONNECT_TIMEOUT_MS} ms`)),
      CONNECT_TIMEOUT_MS,
    );
    timer.unref();
    return connection;
  },
  newCall: (host, method, options, sink, maxReceiveBytes, maxSendBytes) =>
    new H2Call(host, method, options, sink, maxReceiveBytes, maxSendBytes),
});

/** Options of {@link H2Transport}. */
export interface H2TransportOptions {
  /**
   * Request bytes one connection may hold that its server has not taken (DATA waiting for the
   * server's flow-control windows or concurrency limit, bytes its socket has not read), in octets;
   * default 64 MiB. A call that would go beyond it is refused on that connection before any byte
   * of it is written: the client retries it as any unsent call (on another endpoint when there is
   * one), then fails with `UnavailableError` (a write: `WriteNotAppliedError`) whose message names
   * the bound; a stream write beyond it ends the stream. One request is always taken while nothing
   * is held, so a bound below one message refuses nothing alone.
   */
  readonly maxBufferedRequestBytes?: number;
}

/**
 * The default transport: gRPC over HTTP/2 spoken by the client itself over a TCP, TLS (ALPN h2) or
 * unix socket, without node:http2, one HTTP/2 connection per channel. It honours the same contract
 * as {@link Http2Transport} and {@link GrpcJsTransport} (connectivity states, the `sent` flag,
 * deadlines, cancellation, message size limits, TLS with client certificates, keepalive pings
 * while calls are open) with the least client CPU per call (docs/guarantees.md#transports). A
 * client without a `transport` option uses it; `transport: 'http2'` or `'grpc-js'` selects another.
 */
export class H2Transport implements Transport {
  /** Identifies the implementation in logs and tests. */
  readonly name = 'h2';
  readonly #wire: Wire<H2Connection>;

  constructor(options: H2TransportOptions = {}) {
    this.#wire = h2Wire({ maxBufferedRequestBytes: requestBound(options.maxBufferedRequestBytes) });
  }

  /** Creates a channel to one endpoint; it connects lazily. */
  open(options: ChannelOptions): Channel {
    return new Http2Channel(options, this.#wire);
  }
}
