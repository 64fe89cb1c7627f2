// The server side of one HTTP/2 connection (RFC 9113) over a socket, without node:http2, as a
// role over the connection core (@etcdkit/client/h2's session.ts, which reads and checks frames,
// answers SETTINGS and PING, keeps the connection windows and writes through the server's
// WriteOrder once per tick): streams the client opens, their DATA and windows, RST_STREAM, and
// GOAWAY both ways. Beyond its limits (session.ts's SessionLimits, and maxUnsentBytes here)
// a connection stops taking new work rather than buffering it.
import type { Socket } from 'node:net';
import {
  CANCEL,
  DEFAULT_WINDOW,
  ENHANCE_YOUR_CALM,
  FLOW_CONTROL_ERROR,
  goawayFrame,
  H2ProtocolError,
  H2Session,
  type HeaderField,
  INTERNAL_ERROR,
  MAX_DECODED_LIST,
  MAX_HEADER_PAIRS,
  MAX_WINDOW,
  NO_ERROR,
  PROTOCOL_ERROR,
  REFUSED_STREAM,
  rstStreamFrame,
  SETTINGS_INITIAL_WINDOW_SIZE,
  type SessionLimits,
  settingsFrame,
  type WriteOrder,
  windowUpdateFrame,
} from '@etcdkit/client/h2';
import { type ResponseBlock, ResponseBlockEncoder } from './response-headers.js';
import { H2Stream, type StreamLink } from './stream.js';

/** STREAM_CLOSED (RFC 9113, 7): a frame for a stream the peer already ended. */
const STREAM_CLOSED = 0x5;
/** How long a connection ended with GOAWAY waits for the peer to close before it is destroyed. */
const LINGER_MS = 1000;
/**
 * Octets a connection may have queued for a socket the peer does not read before it stops
 * reading the peer's frames (until the socket drains).
 */
export const DEFAULT_MAX_UNWRITTEN_BYTES = 4 * 1024 * 1024;
/**
 * Octets of answers a connection may hold for windows the peer does not open before it refuses
 * new requests (REFUSED_STREAM: the client may send them again). Large, as a client reading a
 * large Range answer opens its windows only as it reads.
 */
export const DEFAULT_MAX_UNSENT_BYTES = 64 * 1024 * 1024;

/** Windows this side announces, and the limits of the connection core (session.ts). */
export interface ConnectionOptions extends SessionLimits {
  /** SETTINGS_INITIAL_WINDOW_SIZE: what the peer may send on a stream before a WINDOW_UPDATE. */
  readonly streamWindow?: number;
  /** The connection's receive window (raised from 65,535 with a WINDOW_UPDATE at the start). */
  readonly connectionWindow?: number;
  /** See {@link DEFAULT_MAX_UNWRITTEN_BYTES} (a SessionLimits option, defaulted here). */
  readonly maxUnwrittenBytes?: number;
  /** Answers held for the peer's windows beyond which new requests are refused (64 MiB). */
  readonly maxUnsentBytes?: number;
}

/** What the connection tells its server. */
export interface ConnectionEvents {
  /**
   * The peer opened `stream` with these request headers; the callee sets `stream.sink`.
   * `endStream`: the request has no body (the sink's `streamEnd` is called right after).
   */
  stream(stream: H2Stream, fields: HeaderField[], endStream: boolean): void;
  /** The socket is closed; every stream has been reset. */
  close(error: Error | undefined): void;
}

/** The server side of one HTTP/2 connection. */
export class H2ServerConnection extends H2Session implements StreamLink {
  readonly #socket: Socket;
  readonly #events: ConnectionEvents;
  readonly #streams = new Map<number, H2Stream>();
  readonly #streamWindow: number;
  readonly #maxUnsent: number;
  #lastStreamId = 0;
  /** Set once this side sent GOAWAY: streams above it are not served. */
  #goawayLastId: number | undefined;
  #peerGoaway = false;
  #closeReported = false;
  readonly #waiting = new Set<H2Stream>();
  /** Octets streams hold that their windows do not let out yet. */
  #unsent = 0;
  /** This side's HPACK state, as the peer's decoder follows it. */
  readonly #blocks = new ResponseBlockEncoder();

  /** `writeOrder`: the server's order of writes across its connections, at the end of a tick. */
  constructor(
    socket: Socket,
    events: ConnectionEvents,
    options: ConnectionOptions,
    writeOrder: WriteOrder,
  ) {
    const connectionWindow = options.connectionWindow ?? DEFAULT_WINDOW;
    const maxUnwritten = options.maxUnwrittenBytes ?? DEFAULT_MAX_UNWRITTEN_BYTES;
    super(socket, {
      expectPreface: true,
      connectionWindow,
      // nghttp2's word for an ACK flood, as node:http2 sends it under grpc-js's server.
      ackFloodCode: INTERNAL_ERROR,
      writeOrder,
      limits: {
        maxHeaderListBytes: MAX_DECODED_LIST,
        ...options,
        maxUnwrittenBytes: maxUnwritten,
      },
    });
    this.#socket = socket;
    this.#events = events;
    this.#streamWindow = options.streamWindow ?? DEFAULT_WINDOW;
    this.#maxUnsent = options.maxUnsentBytes ?? DEFAULT_MAX_UNSENT_BYTES;
    socket.setNoDelay(true);
    socket.on('error', (error: Error) => this.#lost(error));
    socket.on('close', () => this.#lost(undefined));
    // The server's preface: SETTINGS, then the connection window if it is not the default. At
    // the defaults the SETTINGS frame is empty, as node:http2 sends it under grpc-js's server
    // (a server's SETTINGS_ENABLE_PUSH means nothing to a client).
    const settings: [number, number][] = [];
    if (this.#streamWindow !== DEFAULT_WINDOW) {
      settings.push([SETTINGS_INITIAL_WINDOW_SIZE, this.#streamWindow]);
    }
    this.queue(settingsFrame(settings));
    if (connectionWindow > DEFAULT_WINDOW) {
      this.queue(windowUpdateFrame(0, connectionWindow - DEFAULT_WINDOW));
    }
  }

  /** The socket this connection runs on. */
  get socket(): Socket {
    return this.#socket;
  }

  /** Streams open now. */
  get openStreams(): number {
    return this.#streams.size;
  }

  /** Octets of answers held by streams until the peer's windows let them out. */
  get unsentBytes(): number {
    return this.#unsent;
  }

  // StreamLink, for the streams (queue, sendWindow, take and maxFrame come from the core).

  encodeBlock(block: ResponseBlock): Buffer {
    return this.#blocks.encode(block);
  }

  blocked(stream: H2Stream): void {
    this.#waiting.add(stream);
  }

  unsent(delta: number): void {
    this.#unsent += delta;
  }

  closed(stream: H2Stream): void {
    this.#streams.delete(stream.id);
    this.#waiting.delete(stream);
    this.#endIfIdle();
  }

  giveBack(stream: H2Stream): void {
    // One WINDOW_UPDATE per half window, not per frame; none while the stream's owner is paused
    // (the connection window is still given back: other streams go on).
    if (stream.receivePaused || stream.remoteEnded || stream.closed) return;
    if (stream.unacknowledged < this.#streamWindow / 2) return;
    this.queue(windowUpdateFrame(stream.id, stream.unacknowledged));
    stream.receiveWindow += stream.unacknowledged;
    stream.unacknowledged = 0;
  }

  /**
   * Graceful close: GOAWAY with the last stream opened, no new streams; the socket ends once the
   * open ones are over.
   */
  close(): void {
    if (this.ended || this.#goawayLastId !== undefined) return;
    this.#goawayLastId = this.#lastStreamId;
    this.queue(goawayFrame(this.#lastStreamId, NO_ERROR));
    this.#endIfIdle();
  }

  /** Closes the socket at once; open streams are reset. */
  destroy(): void {
    this.#socket.destroy();
    this.#lost(undefined);
  }

  /** Ends the socket once GOAWAY went either way and no stream is open. */
  #endIfIdle(): void {
    if (this.#streams.size > 0 || this.ended) return;
    if (this.#goawayLastId === undefined && !this.#peerGoaway) return;
    this.#finish();
  }

  /** Writes what is queued, ends the socket, and destroys it if the peer does not close. */
  #finish(): void {
    if (this.ended) return;
    this.flush();
    this.ended = true;
    this.stopTimers();
    this.#socket.end();
    setTimeout(() => this.#socket.destroy(), LINGER_MS).unref();
  }

  /** A connection error (RFC 9113, 5.4.1): GOAWAY with `code`, every stream reset, the end. */
  #fail(code: number, debug: string): void {
    if (this.ended) return;
    this.queue(goawayFrame(this.#lastStreamId, code, debug));
    this.flush();
    this.#resetAll(code);
    this.#finish();
  }

  #lost(error: Error | undefined): void {
    this.ended = true;
    this.stopTimers();
    this.#resetAll(CANCEL);
    if (this.#closeReported) return;
    this.#closeReported = true;
    this.#events.close(error);
  }

  #resetAll(code: number): void {
    for (const stream of [...this.#streams.values()]) stream.forget(code);
  }

  // The connection core's reports.

  protected connectionError(error: H2ProtocolError): void {
    // A header block that failed counts as received, as nghttp2 counts it: GOAWAY names it.
    const { streamId } = error;
    if (streamId % 2 === 1 && streamId > this.#lastStreamId) this.#lastStreamId = streamId;
    this.#fail(error.code, error.debug);
  }

  protected windowedStreams(): Iterable<H2Stream> {
    return this.#streams.values();
  }

  /** A stream error: RST_STREAM `code` on it (the stream, if open, is over). */
  protected streamError(streamId: number, code: number): void {
    const stream = this.#streams.get(streamId);
    if (stream === undefined) {
      this.queue(rstStreamFrame(streamId, code));
      return;
    }
    stream.reset(code);
    stream.sink?.streamReset(code);
  }

  protected onData(streamId: number, data: Buffer, length: number, endStream: boolean): void {
    const stream = this.#streams.get(streamId);
    if (stream === undefined) {
      // A stream never opened is an error; one already over (reset or answered) is ignored.
      if (streamId > this.#lastStreamId) {
        throw new H2ProtocolError(PROTOCOL_ERROR, 'DATA on an idle stream');
      }
      return;
    }
    if (stream.remoteEnded) {
      this.streamError(streamId, STREAM_CLOSED);
      return;
    }
    stream.receiveWindow -= length;
    if (stream.receiveWindow < 0) {
      this.streamError(streamId, FLOW_CONTROL_ERROR);
      return;
    }
    if (!endStream) {
      stream.unacknowledged += length;
      this.giveBack(stream);
    }
    if (data.length > 0) stream.sink?.streamData(data);
    if (endStream && !stream.closed) {
      stream.remoteEnd();
      stream.sink?.streamEnd();
    }
  }

  protected onHeaders(streamId: number, endStream: boolean, fields: HeaderField[]): void {
    const open = this.#streams.get(streamId);
    if (fields.length > MAX_HEADER_PAIRS) {
      // node:http2 resets the stream for too many fields; the connection goes on.
      if (open === undefined && streamId % 2 === 1 && streamId > this.#lastStreamId) {
        this.#lastStreamId = streamId;
      }
      this.streamError(streamId, ENHANCE_YOUR_CALM);
      return;
    }
    if (open !== undefined) {
      // Trailers: they must end the stream (RFC 9113, 8.1); gRPC requests carry none anyway.
      if (!endStream || open.remoteEnded) {
        this.streamError(streamId, PROTOCOL_ERROR);
        return;
      }
      open.remoteEnd();
      open.sink?.streamEnd();
      return;
    }
    if (streamId % 2 === 0) {
      throw new H2ProtocolError(PROTOCOL_ERROR, 'a client opened an even stream');
    }
    // Headers on a stream already over (answered or reset here) are the peer's late trailers.
    if (streamId <= this.#lastStreamId) return;
    // Counted as seen even when refused: its DATA is then ignored, not a protocol error.
    this.#lastStreamId = streamId;
    // After GOAWAY, streams the peer opened before it saw it are refused (RFC 9113, 6.8): the
    // client may retry them elsewhere. So are new requests while the answers already made wait
    // for windows the peer does not open: it gets no more work done here until it reads.
    if (this.#goawayLastId !== undefined || this.#peerGoaway || this.#unsent > this.#maxUnsent) {
      this.queue(rstStreamFrame(streamId, REFUSED_STREAM));
      return;
    }
    // Until the peer ACKs our SETTINGS it may still count on the default window (6.5.3).
    const receiveWindow = this.settingsAcked
      ? this.#streamWindow
      : Math.max(this.#streamWindow, DEFAULT_WINDOW);
    const stream = new H2Stream(streamId, this, this.peerInitialWindow, receiveWindow);
    this.#streams.set(streamId, stream);
    if (endStream) stream.remoteEnded = true;
    this.#events.stream(stream, fields, endStream);
    if (endStream && !stream.closed) stream.sink?.streamEnd();
  }

  protected onReset(streamId: number, code: number): void {
    if (streamId > this.#lastStreamId) {
      throw new H2ProtocolError(PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
    }
    this.#streams.get(streamId)?.forget(code);
  }

  protected onSettings(windowDelta: number): void {
    // The ACK is queued by now: blocks from here on are decoded under the new table size.
    this.#blocks.peerTableSize(this.peerHeaderTableSize);
    if (windowDelta > 0) for (const stream of [...this.#streams.values()]) stream.pump();
  }

  protected onPingAck(): void {
    // This side sends no PING (grpc-js's server keeps no keepalive by default): an ACK is
    // unsolicited, which node:http2 takes for a connection error.
    throw new H2ProtocolError(INTERNAL_ERROR, 'a PING ACK for no PING', '');
  }

  protected onGoaway(): void {
    this.#peerGoaway = true;
    this.#endIfIdle();
  }

  protected onConnectionWindow(): void {
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const stream of waiting) {
      if (this.sendWindow <= 0) this.#waiting.add(stream);
      else stream.pump();
    }
  }

  protected onStreamWindow(streamId: number, increment: number): void {
    const stream = this.#streams.get(streamId);
    if (stream === undefined) {
      if (streamId > this.#lastStreamId) {
        throw new H2ProtocolError(PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
      }
      return;
    }
    if (increment === 0) {
      this.streamError(streamId, PROTOCOL_ERROR);
      return;
    }
    stream.sendWindow += increment;
    if (stream.sendWindow > MAX_WINDOW) {
      this.streamError(streamId, FLOW_CONTROL_ERROR);
      return;
    }
    stream.pump();
  }
}
