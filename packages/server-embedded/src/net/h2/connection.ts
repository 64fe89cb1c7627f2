// The server side of one HTTP/2 connection (RFC 9113) over a socket, without node:http2: the
// client preface, SETTINGS both ways, PING, flow control in both directions, header blocks with
// CONTINUATION, RST_STREAM and GOAWAY. Every frame produced in one tick goes out in one socket
// write, as the client's own transport (h2-connection.ts) does: most of node:http2's cost per
// call is its per-frame and per-stream machinery, not the bytes.
import type { Socket } from 'node:net';
import {
  CANCEL,
  COMPRESSION_ERROR,
  DEFAULT_HEADER_TABLE_SIZE,
  DEFAULT_WINDOW,
  ENHANCE_YOUR_CALM,
  FLAG_ACK,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FLAG_PADDED,
  FLOW_CONTROL_ERROR,
  FRAME_CONTINUATION,
  FRAME_DATA,
  FRAME_GOAWAY,
  FRAME_HEADER_BYTES,
  FRAME_HEADERS,
  FRAME_PING,
  FRAME_PRIORITY,
  FRAME_PUSH_PROMISE,
  FRAME_RST_STREAM,
  FRAME_SETTINGS,
  FRAME_SIZE_ERROR,
  FRAME_WINDOW_UPDATE,
  frameOf,
  goawayFrame,
  HeaderBlockDecoder,
  type HeaderField,
  HpackError,
  headersFragment,
  INTERNAL_ERROR,
  MAX_FRAME_PAYLOAD,
  MAX_WINDOW,
  NO_ERROR,
  PREFACE,
  PROTOCOL_ERROR,
  REFUSED_STREAM,
  rstStreamFrame,
  SETTINGS_ENABLE_PUSH,
  SETTINGS_INITIAL_WINDOW_SIZE,
  SETTINGS_MAX_FRAME_SIZE,
  settingsFrame,
  windowUpdateFrame,
} from '@etcdkit/client/h2';
import {
  hasOversizedString,
  MAX_CONTINUATIONS,
  MAX_DECODED_LIST,
  MAX_HEADER_PAIRS,
} from './header-limits.js';
import { H2Stream, type StreamLink } from './stream.js';
import type { Flushable, WriteOrder } from './write-order.js';

/** STREAM_CLOSED (RFC 9113, 7): a frame for a stream the peer already ended. */
const STREAM_CLOSED = 0x5;
/** The largest SETTINGS_MAX_FRAME_SIZE a peer may announce. */
const LARGEST_FRAME = 16_777_215;
/** Writes larger than this are corked chunk by chunk rather than concatenated. */
const CONCAT_LIMIT = 64 * 1024;
/**
 * Most PING and SETTINGS ACKs waiting to go out (nghttp2's default max_outbound_ack, under
 * grpc-js's server): one more is a flood, ended with GOAWAY INTERNAL_ERROR as node ends it.
 */
const MAX_OUTBOUND_ACKS = 1000;
/** How long a connection ended with GOAWAY waits for the peer to close before it is destroyed. */
const LINGER_MS = 1000;
const EMPTY = Buffer.alloc(0);

/** Windows this side announces. */
export interface ConnectionOptions {
  /** SETTINGS_INITIAL_WINDOW_SIZE: what the peer may send on a stream before a WINDOW_UPDATE. */
  readonly streamWindow?: number;
  /** The connection's receive window (raised from 65,535 with a WINDOW_UPDATE at the start). */
  readonly connectionWindow?: number;
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

/** A header block being received: its HEADERS frame, then CONTINUATION frames. */
interface OpenBlock {
  readonly streamId: number;
  readonly endStream: boolean;
  readonly fragments: Buffer[];
  length: number;
  continuations: number;
}

/** The server side of one HTTP/2 connection. */
export class H2ServerConnection implements StreamLink, Flushable {
  readonly #socket: Socket;
  readonly #events: ConnectionEvents;
  readonly #streams = new Map<number, H2Stream>();
  readonly #decoder = new HeaderBlockDecoder(DEFAULT_HEADER_TABLE_SIZE, MAX_DECODED_LIST);
  readonly #streamWindow: number;
  readonly #connectionWindow: number;
  #rest: Buffer = EMPTY;
  #prefaceSeen = false;
  #settingsSeen = false;
  /** The peer acknowledged this side's SETTINGS: its stream window is in force. */
  #settingsAcked = false;
  #block: OpenBlock | undefined;
  #lastStreamId = 0;
  /** Set once this side sent GOAWAY: streams above it are not served. */
  #goawayLastId: number | undefined;
  #peerGoaway = false;
  #destroyed = false;
  #closeReported = false;
  /** The peer's SETTINGS_INITIAL_WINDOW_SIZE. */
  #peerStreamWindow = DEFAULT_WINDOW;
  #sendWindow = DEFAULT_WINDOW;
  #receiveWindow: number;
  #unacknowledged = 0;
  #maxFrame = MAX_FRAME_PAYLOAD;
  readonly #waiting = new Set<H2Stream>();
  #out: Buffer[] = [];
  #outBytes = 0;
  #flushing = false;
  /** Frames of the peer are being handled: what is queued now answers them. */
  #reading = false;
  readonly #writeOrder: WriteOrder;
  /** ACKs queued for the next write. */
  #queuedAcks = 0;
  /** ACKs in socket writes not yet done (the peer is not reading, or the socket is backed up). */
  #unwrittenAcks = 0;

  /** `writeOrder`: the server's order of writes across its connections, at the end of a tick. */
  constructor(
    socket: Socket,
    events: ConnectionEvents,
    options: ConnectionOptions,
    writeOrder: WriteOrder,
  ) {
    this.#socket = socket;
    this.#writeOrder = writeOrder;
    this.#events = events;
    this.#streamWindow = options.streamWindow ?? DEFAULT_WINDOW;
    this.#connectionWindow = options.connectionWindow ?? DEFAULT_WINDOW;
    this.#receiveWindow = this.#connectionWindow;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
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
    if (this.#connectionWindow > DEFAULT_WINDOW) {
      this.queue(windowUpdateFrame(0, this.#connectionWindow - DEFAULT_WINDOW));
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

  // StreamLink, for the streams.
  get sendWindow(): number {
    return this.#sendWindow;
  }

  get maxFrame(): number {
    return this.#maxFrame;
  }

  take(n: number): void {
    this.#sendWindow -= n;
  }

  blocked(stream: H2Stream): void {
    this.#waiting.add(stream);
  }

  closed(stream: H2Stream): void {
    this.#streams.delete(stream.id);
    this.#waiting.delete(stream);
    this.#endIfIdle();
  }

  giveBack(stream: H2Stream): void {
    // One WINDOW_UPDATE per half window, not per frame; none while the stream's owner is paused
    // (the connection window is still given back above: other streams go on).
    if (stream.receivePaused || stream.remoteEnded || stream.closed) return;
    if (stream.unacknowledged < this.#streamWindow / 2) return;
    this.queue(windowUpdateFrame(stream.id, stream.unacknowledged));
    stream.receiveWindow += stream.unacknowledged;
    stream.unacknowledged = 0;
  }

  queue(bytes: Buffer): void {
    if (this.#destroyed) return;
    this.#out.push(bytes);
    this.#outBytes += bytes.length;
    if (!this.#flushing) {
      this.#flushing = true;
      this.#writeOrder.schedule(this, this.#reading);
    }
  }

  /**
   * Graceful close: GOAWAY with the last stream opened, no new streams; the socket ends once the
   * open ones are over.
   */
  close(): void {
    if (this.#destroyed || this.#goawayLastId !== undefined) return;
    this.#goawayLastId = this.#lastStreamId;
    this.queue(goawayFrame(this.#lastStreamId, NO_ERROR));
    this.#endIfIdle();
  }

  /** Closes the socket at once; open streams are reset. */
  destroy(): void {
    this.#socket.destroy();
    this.#lost(undefined);
  }

  /** Writes what is queued now (the server's {@link WriteOrder} calls it at the end of a tick). */
  flush(): void {
    this.#flushing = false;
    const out = this.#out;
    if (this.#destroyed || out.length === 0) return;
    this.#out = [];
    const bytes = this.#outBytes;
    this.#outBytes = 0;
    // ACKs count until their write is done, as they count in nghttp2's queue until node's write
    // in progress is done.
    const acks = this.#queuedAcks;
    this.#queuedAcks = 0;
    this.#unwrittenAcks += acks;
    const done = acks === 0 ? undefined : () => (this.#unwrittenAcks -= acks);
    if (out.length === 1) this.#socket.write(out[0]!, done);
    else if (bytes <= CONCAT_LIMIT) this.#socket.write(Buffer.concat(out, bytes), done);
    else {
      this.#socket.cork();
      for (let i = 0; i < out.length; i++) {
        this.#socket.write(out[i]!, i === out.length - 1 ? done : undefined);
      }
      this.#socket.uncork();
    }
  }

  /**
   * Queues a PING or SETTINGS ACK, unless too many wait to go out: a peer that sends PINGs and
   * reads nothing would otherwise have every ACK buffered here.
   */
  #ack(frame: Buffer): void {
    if (this.#queuedAcks + this.#unwrittenAcks >= MAX_OUTBOUND_ACKS) {
      // As nghttp2 does on a flood: what was queued is dropped, GOAWAY alone goes out.
      this.#out = [];
      this.#outBytes = 0;
      this.#queuedAcks = 0;
      this.#fail(INTERNAL_ERROR, '');
      return;
    }
    this.#queuedAcks++;
    this.queue(frame);
  }

  /** Ends the socket once GOAWAY went either way and no stream is open. */
  #endIfIdle(): void {
    if (this.#streams.size > 0 || this.#destroyed) return;
    if (this.#goawayLastId === undefined && !this.#peerGoaway) return;
    this.#finish();
  }

  /** Writes what is queued, ends the socket, and destroys it if the peer does not close. */
  #finish(): void {
    if (this.#destroyed) return;
    this.flush();
    this.#destroyed = true;
    this.#socket.end();
    setTimeout(() => this.#socket.destroy(), LINGER_MS).unref();
  }

  /** A connection error (RFC 9113, 5.4.1): GOAWAY with `code`, every stream reset, the end. */
  #fail(code: number, debug: string): void {
    if (this.#destroyed) return;
    this.queue(goawayFrame(this.#lastStreamId, code, debug));
    this.flush();
    this.#resetAll(code);
    this.#finish();
  }

  #lost(error: Error | undefined): void {
    this.#destroyed = true;
    this.#resetAll(CANCEL);
    if (this.#closeReported) return;
    this.#closeReported = true;
    this.#events.close(error);
  }

  #resetAll(code: number): void {
    for (const stream of [...this.#streams.values()]) stream.forget(code);
  }

  #read(chunk: Buffer): void {
    if (this.#destroyed) return;
    this.#reading = true;
    try {
      this.#readFrames(chunk);
    } finally {
      this.#reading = false;
    }
  }

  #readFrames(chunk: Buffer): void {
    let buffer = this.#rest.length > 0 ? Buffer.concat([this.#rest, chunk]) : chunk;
    let offset = 0;
    if (!this.#prefaceSeen) {
      const seen = Math.min(buffer.length, PREFACE.length);
      if (!buffer.subarray(0, seen).equals(PREFACE.subarray(0, seen))) {
        this.#fail(PROTOCOL_ERROR, 'invalid connection preface');
        return;
      }
      if (seen < PREFACE.length) {
        this.#rest = buffer;
        return;
      }
      this.#prefaceSeen = true;
      offset = PREFACE.length;
    }
    while (buffer.length - offset >= FRAME_HEADER_BYTES) {
      const length = buffer.readUIntBE(offset, 3);
      if (length > MAX_FRAME_PAYLOAD) {
        this.#fail(FRAME_SIZE_ERROR, 'frame larger than SETTINGS_MAX_FRAME_SIZE');
        return;
      }
      const end = offset + FRAME_HEADER_BYTES + length;
      if (end > buffer.length) break;
      const type = buffer[offset + 3]!;
      const flags = buffer[offset + 4]!;
      const streamId = buffer.readUInt32BE(offset + 5) & 0x7fff_ffff;
      const payload = buffer.subarray(offset + FRAME_HEADER_BYTES, end);
      offset = end;
      this.#frame(type, flags, streamId, payload);
      if (this.#destroyed) return;
    }
    if (offset < buffer.length) buffer = buffer.subarray(offset);
    else buffer = EMPTY;
    this.#rest = buffer;
  }

  #frame(type: number, flags: number, streamId: number, payload: Buffer): void {
    if (!this.#settingsSeen) {
      // The client preface ends with a SETTINGS frame (RFC 9113, 3.4).
      if (type !== FRAME_SETTINGS || flags & FLAG_ACK) {
        this.#fail(PROTOCOL_ERROR, 'the preface has no SETTINGS frame');
        return;
      }
      this.#settingsSeen = true;
    }
    if (
      this.#block !== undefined &&
      (type !== FRAME_CONTINUATION || streamId !== this.#block.streamId)
    ) {
      this.#fail(PROTOCOL_ERROR, 'a header block was interrupted');
      return;
    }
    switch (type) {
      case FRAME_DATA:
        this.#data(flags, streamId, payload);
        return;
      case FRAME_HEADERS:
        this.#headers(flags, streamId, payload);
        return;
      case FRAME_CONTINUATION:
        this.#continuation(flags, payload);
        return;
      case FRAME_PRIORITY:
        // Priorities are ignored (RFC 9113 deprecates them); only the frame's shape matters.
        if (streamId === 0) this.#fail(PROTOCOL_ERROR, 'PRIORITY on stream 0');
        else if (payload.length !== 5) this.#streamError(streamId, FRAME_SIZE_ERROR);
        return;
      case FRAME_RST_STREAM:
        this.#rstStream(streamId, payload);
        return;
      case FRAME_SETTINGS:
        this.#settings(flags, streamId, payload);
        return;
      case FRAME_PUSH_PROMISE:
        this.#fail(PROTOCOL_ERROR, 'PUSH_PROMISE from a client');
        return;
      case FRAME_PING:
        if (streamId !== 0) this.#fail(PROTOCOL_ERROR, 'PING on a stream');
        else if (payload.length !== 8) this.#fail(FRAME_SIZE_ERROR, 'PING is not 8 octets');
        else if ((flags & FLAG_ACK) === 0) this.#ack(frameOf(FRAME_PING, FLAG_ACK, 0, payload));
        // This side sends no PING (grpc-js's server keeps no keepalive by default): an ACK is
        // unsolicited, which node:http2 takes for a connection error.
        else this.#fail(INTERNAL_ERROR, '');
        return;
      case FRAME_GOAWAY:
        if (streamId !== 0) this.#fail(PROTOCOL_ERROR, 'GOAWAY on a stream');
        else {
          this.#peerGoaway = true;
          this.#endIfIdle();
        }
        return;
      case FRAME_WINDOW_UPDATE:
        this.#windowUpdate(streamId, payload);
        return;
      default:
      // Unknown frame types are ignored (RFC 9113, 4.1).
    }
  }

  /** A stream error: RST_STREAM `code` on it (the stream, if open, is over). */
  #streamError(streamId: number, code: number): void {
    const stream = this.#streams.get(streamId);
    if (stream === undefined) {
      this.queue(rstStreamFrame(streamId, code));
      return;
    }
    stream.reset(code);
    stream.sink?.streamReset(code);
  }

  #data(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) {
      this.#fail(PROTOCOL_ERROR, 'DATA on stream 0');
      return;
    }
    // The whole payload, padding included, counts against the windows (RFC 9113, 6.9.1).
    const length = payload.length;
    this.#receiveWindow -= length;
    if (this.#receiveWindow < 0) {
      this.#fail(FLOW_CONTROL_ERROR, 'DATA beyond the connection window');
      return;
    }
    this.#unacknowledged += length;
    // Given back in one WINDOW_UPDATE per half window, not per frame.
    if (this.#unacknowledged >= this.#connectionWindow / 2) {
      this.queue(windowUpdateFrame(0, this.#unacknowledged));
      this.#receiveWindow += this.#unacknowledged;
      this.#unacknowledged = 0;
    }
    let data = payload;
    if (flags & FLAG_PADDED) {
      const padding = payload[0];
      if (padding === undefined || padding >= length) {
        this.#fail(PROTOCOL_ERROR, 'DATA padding longer than the frame');
        return;
      }
      data = payload.subarray(1, length - padding);
    }
    const stream = this.#streams.get(streamId);
    if (stream === undefined) {
      // A stream never opened is an error; one already over (reset or answered) is ignored.
      if (streamId > this.#lastStreamId) this.#fail(PROTOCOL_ERROR, 'DATA on an idle stream');
      return;
    }
    if (stream.remoteEnded) {
      this.#streamError(streamId, STREAM_CLOSED);
      return;
    }
    stream.receiveWindow -= length;
    if (stream.receiveWindow < 0) {
      this.#streamError(streamId, FLOW_CONTROL_ERROR);
      return;
    }
    const endStream = (flags & FLAG_END_STREAM) !== 0;
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

  #headers(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) {
      this.#fail(PROTOCOL_ERROR, 'HEADERS on stream 0');
      return;
    }
    let fragment: Buffer;
    try {
      fragment = headersFragment(flags, payload).fragment;
    } catch {
      this.#fail(PROTOCOL_ERROR, 'HEADERS padding longer than the frame');
      return;
    }
    const block: OpenBlock = {
      streamId,
      endStream: (flags & FLAG_END_STREAM) !== 0,
      fragments: [fragment],
      length: fragment.length,
      continuations: 0,
    };
    // nghttp2 decodes as frames come: an oversized string fails before the block is complete.
    if (hasOversizedString(fragment)) this.#failBlock(block, COMPRESSION_ERROR);
    else if (flags & FLAG_END_HEADERS) this.#headerBlock(block, fragment);
    else this.#block = block;
  }

  /**
   * A connection error for a header block, as nghttp2 raises it: its stream already counts as
   * received, so GOAWAY names it as the last stream, with no debug data (as node sends it).
   */
  #failBlock(block: OpenBlock, code: number): void {
    this.#block = undefined;
    const { streamId } = block;
    if (streamId % 2 === 1 && streamId > this.#lastStreamId) this.#lastStreamId = streamId;
    this.#fail(code, '');
  }

  #continuation(flags: number, payload: Buffer): void {
    const block = this.#block;
    if (block === undefined) {
      this.#fail(PROTOCOL_ERROR, 'CONTINUATION without a header block');
      return;
    }
    block.fragments.push(payload);
    block.length += payload.length;
    block.continuations++;
    // At most 9 frames are held: what a block can make the server buffer is bounded.
    const bytes = Buffer.concat(block.fragments, block.length);
    if (hasOversizedString(bytes)) {
      this.#failBlock(block, COMPRESSION_ERROR);
      return;
    }
    if (block.continuations > MAX_CONTINUATIONS) {
      this.#failBlock(block, INTERNAL_ERROR);
      return;
    }
    if (flags & FLAG_END_HEADERS) {
      this.#block = undefined;
      this.#headerBlock(block, bytes);
    }
  }

  #headerBlock(block: OpenBlock, bytes: Buffer): void {
    let fields: HeaderField[];
    try {
      // Decoded even when the stream is not served: the dynamic table must follow the peer's.
      fields = this.#decoder.decode(bytes);
    } catch (error) {
      const list = error instanceof HpackError && error.message.includes('header list larger');
      this.#fail(list ? ENHANCE_YOUR_CALM : COMPRESSION_ERROR, 'invalid header block');
      return;
    }
    const { streamId, endStream } = block;
    const open = this.#streams.get(streamId);
    if (fields.length > MAX_HEADER_PAIRS) {
      // node:http2 resets the stream for too many fields; the connection goes on.
      if (open === undefined && streamId % 2 === 1 && streamId > this.#lastStreamId) {
        this.#lastStreamId = streamId;
      }
      this.#streamError(streamId, ENHANCE_YOUR_CALM);
      return;
    }
    if (open !== undefined) {
      // Trailers: they must end the stream (RFC 9113, 8.1); gRPC requests carry none anyway.
      if (!endStream || open.remoteEnded) {
        this.#streamError(streamId, PROTOCOL_ERROR);
        return;
      }
      open.remoteEnd();
      open.sink?.streamEnd();
      return;
    }
    if (streamId % 2 === 0) {
      this.#fail(PROTOCOL_ERROR, 'a client opened an even stream');
      return;
    }
    // Headers on a stream already over (answered or reset here) are the peer's late trailers.
    if (streamId <= this.#lastStreamId) return;
    // Counted as seen even when refused: its DATA is then ignored, not a protocol error.
    this.#lastStreamId = streamId;
    // After GOAWAY, streams the peer opened before it saw it are refused (RFC 9113, 6.8): the
    // client may retry them elsewhere.
    if (this.#goawayLastId !== undefined || this.#peerGoaway) {
      this.queue(rstStreamFrame(streamId, REFUSED_STREAM));
      return;
    }
    // Until the peer ACKs our SETTINGS it may still count on the default window (6.5.3).
    const receiveWindow = this.#settingsAcked
      ? this.#streamWindow
      : Math.max(this.#streamWindow, DEFAULT_WINDOW);
    const stream = new H2Stream(streamId, this, this.#peerStreamWindow, receiveWindow);
    this.#streams.set(streamId, stream);
    if (endStream) stream.remoteEnded = true;
    this.#events.stream(stream, fields, endStream);
    if (endStream && !stream.closed) stream.sink?.streamEnd();
  }

  #rstStream(streamId: number, payload: Buffer): void {
    if (streamId === 0) {
      this.#fail(PROTOCOL_ERROR, 'RST_STREAM on stream 0');
      return;
    }
    if (payload.length !== 4) {
      this.#fail(FRAME_SIZE_ERROR, 'RST_STREAM is not 4 octets');
      return;
    }
    if (streamId > this.#lastStreamId) {
      this.#fail(PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
      return;
    }
    this.#streams.get(streamId)?.forget(payload.readUInt32BE(0));
  }

  #settings(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) {
      this.#fail(PROTOCOL_ERROR, 'SETTINGS on a stream');
      return;
    }
    if (flags & FLAG_ACK) {
      if (payload.length !== 0) this.#fail(FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload');
      else this.#settingsAcked = true;
      return;
    }
    if (payload.length % 6 !== 0) {
      this.#fail(FRAME_SIZE_ERROR, 'SETTINGS length not a multiple of 6');
      return;
    }
    let windowDelta = 0;
    for (let offset = 0; offset < payload.length; offset += 6) {
      const id = payload.readUInt16BE(offset);
      const value = payload.readUInt32BE(offset + 2);
      if (id === SETTINGS_INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) {
          this.#fail(FLOW_CONTROL_ERROR, 'SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1');
          return;
        }
        windowDelta += value - this.#peerStreamWindow;
        this.#peerStreamWindow = value;
      } else if (id === SETTINGS_MAX_FRAME_SIZE) {
        if (value < MAX_FRAME_PAYLOAD || value > LARGEST_FRAME) {
          this.#fail(PROTOCOL_ERROR, 'SETTINGS_MAX_FRAME_SIZE out of range');
          return;
        }
        this.#maxFrame = value;
      } else if (id === SETTINGS_ENABLE_PUSH && value > 1) {
        this.#fail(PROTOCOL_ERROR, 'SETTINGS_ENABLE_PUSH not 0 or 1');
        return;
      }
      // The header table size needs nothing: responses never use the dynamic table.
    }
    this.#ack(frameOf(FRAME_SETTINGS, FLAG_ACK, 0, EMPTY));
    if (windowDelta !== 0) {
      // A new initial window changes every open stream's window by the difference (6.9.2).
      for (const stream of this.#streams.values()) {
        stream.sendWindow += windowDelta;
        if (stream.sendWindow > MAX_WINDOW) {
          this.#fail(FLOW_CONTROL_ERROR, 'a stream window above 2^31-1');
          return;
        }
      }
      if (windowDelta > 0) for (const stream of [...this.#streams.values()]) stream.pump();
    }
  }

  #windowUpdate(streamId: number, payload: Buffer): void {
    if (payload.length !== 4) {
      this.#fail(FRAME_SIZE_ERROR, 'WINDOW_UPDATE is not 4 octets');
      return;
    }
    const increment = payload.readUInt32BE(0) & 0x7fff_ffff;
    if (streamId === 0) {
      if (increment === 0) {
        this.#fail(PROTOCOL_ERROR, 'WINDOW_UPDATE of 0');
        return;
      }
      this.#sendWindow += increment;
      if (this.#sendWindow > MAX_WINDOW) {
        this.#fail(FLOW_CONTROL_ERROR, 'connection window above 2^31-1');
        return;
      }
      const waiting = [...this.#waiting];
      this.#waiting.clear();
      for (const stream of waiting) {
        if (this.#sendWindow <= 0) {
          this.#waiting.add(stream);
        } else stream.pump();
      }
      return;
    }
    const stream = this.#streams.get(streamId);
    if (stream === undefined) {
      if (streamId > this.#lastStreamId)
        this.#fail(PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
      return;
    }
    if (increment === 0) {
      this.#streamError(streamId, PROTOCOL_ERROR);
      return;
    }
    stream.sendWindow += increment;
    if (stream.sendWindow > MAX_WINDOW) {
      this.#streamError(streamId, FLOW_CONTROL_ERROR);
      return;
    }
    stream.pump();
  }
}
