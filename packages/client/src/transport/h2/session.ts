// The role-neutral core of one HTTP/2 connection (RFC 9113) over a socket, under both the client's
// connection (h2-connection.ts) and the embedded server's (net/h2/connection.ts): the frame loop
// (the client preface for a server, CONTINUATION assembly and HPACK decoding with their limits),
// SETTINGS and their ACKs, PING, GOAWAY parsing, the connection's flow control both ways with
// window overflow detected, RST_STREAM counted against rapid reset, and the write queue: every
// frame produced in one tick goes out in one socket write, as most of node:http2's cost per call
// is its per-frame machinery, not the bytes. The roles own their streams; what happens on a
// stream reaches them through the abstract methods below, once the frame passed every check here.
import type { Duplex } from 'node:stream';
import {
  COMPRESSION_ERROR,
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
  headersFragment,
  INTERNAL_ERROR,
  MAX_FRAME_PAYLOAD,
  MAX_WINDOW,
  PREFACE,
  PROTOCOL_ERROR,
  SETTINGS_ENABLE_PUSH,
  SETTINGS_HEADER_TABLE_SIZE,
  SETTINGS_INITIAL_WINDOW_SIZE,
  SETTINGS_MAX_CONCURRENT_STREAMS,
  SETTINGS_MAX_FRAME_SIZE,
  windowUpdateFrame,
} from './frames.js';
import { hasOversizedString, MAX_CONTINUATIONS, MAX_STRING_LITERAL } from './header-limits.js';
import {
  DEFAULT_HEADER_TABLE_SIZE,
  DEFAULT_MAX_HEADER_LIST_SIZE,
  HeaderBlockDecoder,
  type HeaderField,
  HpackError,
} from './hpack.js';
import { H2ProtocolError } from './protocol-error.js';
import type { Flushable, WriteOrder } from './write-order.js';

/** SETTINGS_TIMEOUT (RFC 9113, 7): the peer's SETTINGS did not come in time. */
const SETTINGS_TIMEOUT = 0x4;
/** The largest SETTINGS_MAX_FRAME_SIZE a peer may announce. */
const LARGEST_FRAME = 16_777_215;
/** Writes larger than this are corked chunk by chunk rather than concatenated. */
const CONCAT_LIMIT = 64 * 1024;
const EMPTY = Buffer.alloc(0);

/** What one connection accepts from its peer before it ends the connection. */
export interface SessionLimits {
  /**
   * Most PING and SETTINGS ACKs queued or in socket writes not yet done (nghttp2's
   * max_outbound_ack, 1,000): a peer that floods PINGs and reads nothing is cut off there.
   */
  readonly maxPendingAcks?: number;
  /** Most CONTINUATION frames after one HEADERS frame (nghttp2's max_continuations, 8). */
  readonly maxContinuations?: number;
  /** Longest HPACK string literal as sent (nghttp2's 65,536): longer is COMPRESSION_ERROR. */
  readonly maxStringLiteral?: number;
  /** Largest decoded header list in octets: larger is ENHANCE_YOUR_CALM. */
  readonly maxHeaderListBytes?: number;
  /**
   * RST_STREAM frames a peer may send at once (nghttp2's stream_reset_burst, 1,000), refilled
   * at {@link resetsPerSecond}: beyond it, GOAWAY ENHANCE_YOUR_CALM (rapid reset, CVE-2023-44487).
   */
  readonly resetBurst?: number;
  /** RST_STREAM frames a second a peer may keep sending (nghttp2's stream_reset_rate, 33). */
  readonly resetsPerSecond?: number;
  /**
   * How long the peer has to send its preface and first SETTINGS, in ms (Go's HTTP/2 server
   * allows 10 s); 0 waits forever.
   */
  readonly settingsTimeoutMs?: number;
  /**
   * Octets written and not yet taken by the peer beyond which the connection stops reading
   * (the socket is paused until it drains); undefined: never stops.
   */
  readonly maxUnwrittenBytes?: number;
}

/** The defaults of {@link SessionLimits}. */
export const DEFAULT_LIMITS = {
  maxPendingAcks: 1000,
  maxContinuations: MAX_CONTINUATIONS,
  maxStringLiteral: MAX_STRING_LITERAL,
  maxHeaderListBytes: DEFAULT_MAX_HEADER_LIST_SIZE,
  resetBurst: 1000,
  resetsPerSecond: 33,
  settingsTimeoutMs: 10_000,
} as const;

/** How a role sets up its core. */
export interface SessionOptions {
  /** A server reads the client preface before the first frame. */
  readonly expectPreface: boolean;
  /** This side's connection receive window (a WINDOW_UPDATE raises it from 65,535 at the start). */
  readonly connectionWindow: number;
  /** The GOAWAY code for a flood of ACKs (the server sends INTERNAL_ERROR, as node:http2 does). */
  readonly ackFloodCode: number;
  /** Orders this connection's writes with others' at the end of a tick; else its own tick. */
  readonly writeOrder?: WriteOrder;
  readonly limits?: SessionLimits;
}

/** Whatever carries a flow control window toward the peer: every open stream. */
export interface SendWindowed {
  sendWindow: number;
}

/** A header block being received: its HEADERS frame, then CONTINUATION frames. */
interface OpenBlock {
  readonly streamId: number;
  readonly endStream: boolean;
  readonly fragments: Buffer[];
  length: number;
  continuations: number;
}

/** The core of one HTTP/2 connection; the client and server connections extend it. */
export abstract class H2Session implements Flushable {
  protected readonly duplex: Duplex;
  /** Set by the role once the connection ended: nothing is read or written any more. */
  protected ended = false;
  // The peer's settings, HTTP/2's defaults until its SETTINGS say otherwise.
  protected peerMaxFrame = MAX_FRAME_PAYLOAD;
  protected peerInitialWindow = DEFAULT_WINDOW;
  protected peerMaxStreams = Number.POSITIVE_INFINITY;
  /**
   * The peer's SETTINGS_HEADER_TABLE_SIZE: the dynamic table its decoder keeps for this side's
   * header blocks, in effect from this side's ACK on (queued before any block that follows).
   */
  protected peerHeaderTableSize = DEFAULT_HEADER_TABLE_SIZE;
  /** The peer acknowledged this side's SETTINGS. */
  protected settingsAcked = false;
  /** What the peer lets this side send on the connection. */
  #sendWindow = DEFAULT_WINDOW;
  readonly #connectionWindow: number;
  #receiveWindow: number;
  #unacked = 0;
  readonly #decoder: HeaderBlockDecoder;
  readonly #maxPendingAcks: number;
  readonly #maxContinuations: number;
  readonly #maxStringLiteral: number;
  readonly #resetBurst: number;
  readonly #resetsPerMs: number;
  readonly #maxUnwritten: number;
  readonly #ackFloodCode: number;
  readonly #writeOrder: WriteOrder | undefined;
  #resetTokens: number;
  #resetStamp = 0;
  #settingsTimer: NodeJS.Timeout | undefined;
  #prefacePending: boolean;
  #settingsSeen = false;
  /** Bytes of a frame cut by the end of a read (or left while reading is paused). */
  #rest: Buffer = EMPTY;
  #block: OpenBlock | undefined;
  #out: Buffer[] = [];
  #outBytes = 0;
  /** Of #outBytes, those queued while reading: the answers to the peer's frames. */
  #answerBytes = 0;
  #flushing = false;
  /** The peer's frames are being handled: what is queued now answers them. */
  #reading = false;
  /** Reading stopped until the socket drains (too much output unwritten). */
  #readPaused = false;
  /** ACKs queued for the next write. */
  #queuedAcks = 0;
  /** ACKs in socket writes not yet done (the peer is not reading, or the socket is backed up). */
  #unwrittenAcks = 0;

  constructor(socket: Duplex, options: SessionOptions) {
    this.duplex = socket;
    const limits = options.limits ?? {};
    this.#connectionWindow = options.connectionWindow;
    this.#receiveWindow = options.connectionWindow;
    this.#prefacePending = options.expectPreface;
    this.#ackFloodCode = options.ackFloodCode;
    this.#writeOrder = options.writeOrder;
    this.#maxPendingAcks = limits.maxPendingAcks ?? DEFAULT_LIMITS.maxPendingAcks;
    this.#maxContinuations = limits.maxContinuations ?? DEFAULT_LIMITS.maxContinuations;
    this.#maxStringLiteral = limits.maxStringLiteral ?? DEFAULT_LIMITS.maxStringLiteral;
    this.#decoder = new HeaderBlockDecoder(
      DEFAULT_HEADER_TABLE_SIZE,
      limits.maxHeaderListBytes ?? DEFAULT_LIMITS.maxHeaderListBytes,
    );
    this.#resetBurst = limits.resetBurst ?? DEFAULT_LIMITS.resetBurst;
    this.#resetTokens = this.#resetBurst;
    this.#resetsPerMs = (limits.resetsPerSecond ?? DEFAULT_LIMITS.resetsPerSecond) / 1000;
    this.#maxUnwritten = limits.maxUnwrittenBytes ?? Number.POSITIVE_INFINITY;
    const timeout = limits.settingsTimeoutMs ?? DEFAULT_LIMITS.settingsTimeoutMs;
    if (timeout > 0) {
      this.#settingsTimer = setTimeout(this.#settingsExpired, timeout, timeout);
      this.#settingsTimer.unref?.();
    }
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
  }

  /** What the peer lets this side send on the connection now. */
  get sendWindow(): number {
    return this.#sendWindow;
  }

  /** The peer's SETTINGS_MAX_FRAME_SIZE. */
  get maxFrame(): number {
    return this.peerMaxFrame;
  }

  /** PING and SETTINGS ACKs queued or in socket writes not yet done. */
  get pendingAcks(): number {
    return this.#queuedAcks + this.#unwrittenAcks;
  }

  /** Octets queued for the socket and in its writes not yet done. */
  get unwrittenBytes(): number {
    return this.#outBytes + this.duplex.writableLength;
  }

  /**
   * Octets queued while handling the peer's frames (ACKs, WINDOW_UPDATEs, DATA its window let go),
   * not written yet: they wait for the end of the read's turn, to go out with what it made.
   */
  get queuedAnswerBytes(): number {
    return this.#answerBytes;
  }

  /** Takes `n` octets of the connection's send window (DATA about to be queued). */
  take(n: number): void {
    this.#sendWindow -= n;
  }

  /** Queues bytes for the socket: everything queued in one tick goes out in one write. */
  queue(bytes: Buffer): void {
    if (this.ended) return;
    this.#out.push(bytes);
    this.#outBytes += bytes.length;
    if (this.#reading) this.#answerBytes += bytes.length;
    if (this.#flushing) return;
    this.#flushing = true;
    if (this.#writeOrder !== undefined) this.#writeOrder.schedule(this, this.#reading);
    // What answers a read (a PING or SETTINGS ACK, a WINDOW_UPDATE) waits for the promises the
    // read settled: the next request they make goes out in the same write (one syscall, not two).
    // A tick scheduled from a microtask runs once the microtasks queued with it have run.
    else if (this.#reading) queueMicrotask(this.#tickAfterMicrotasks);
    else process.nextTick(this.#tick);
  }

  readonly #tick = (): void => this.flush();
  readonly #tickAfterMicrotasks = (): void => void process.nextTick(this.#tick);

  /** Writes what is queued now (at the end of the tick it was queued in). */
  flush(): void {
    this.#flushing = false;
    const out = this.#out;
    if (this.ended || out.length === 0) return;
    this.#out = [];
    const bytes = this.#outBytes;
    this.#outBytes = 0;
    this.#answerBytes = 0;
    // ACKs count until their write is done, as they count in nghttp2's queue until node's write
    // in progress is done.
    const acks = this.#queuedAcks;
    this.#queuedAcks = 0;
    this.#unwrittenAcks += acks;
    const done = acks === 0 ? undefined : () => (this.#unwrittenAcks -= acks);
    const socket = this.duplex;
    if (out.length === 1) socket.write(out[0]!, done);
    else if (bytes <= CONCAT_LIMIT) socket.write(Buffer.concat(out, bytes), done);
    else {
      socket.cork();
      for (let i = 0; i < out.length; i++) {
        socket.write(out[i]!, i === out.length - 1 ? done : undefined);
      }
      socket.uncork();
    }
  }

  /** Takes what is queued and not yet written, for a last write (or to drop it). */
  protected takeOutput(): Buffer[] {
    const out = this.#out;
    this.#out = [];
    this.#outBytes = 0;
    this.#answerBytes = 0;
    this.#queuedAcks = 0;
    return out;
  }

  /** Stops the settings timer (the connection ended). */
  protected stopTimers(): void {
    if (this.#settingsTimer !== undefined) clearTimeout(this.#settingsTimer);
    this.#settingsTimer = undefined;
  }

  // What the roles do with what passed the core's checks.

  /** DATA on `streamId` (padding removed; `length` counted against the windows). */
  protected abstract onData(streamId: number, data: Buffer, length: number, end: boolean): void;
  /** A whole header block on `streamId`, decoded. */
  protected abstract onHeaders(streamId: number, endStream: boolean, fields: HeaderField[]): void;
  /** The peer reset `streamId` with `code`. */
  protected abstract onReset(streamId: number, code: number): void;
  /**
   * The peer's SETTINGS were applied and acknowledged; `windowDelta` was added to every open
   * stream's send window; `first`: the peer's preface SETTINGS.
   */
  protected abstract onSettings(windowDelta: number, first: boolean): void;
  /** A PING ACK with this payload. */
  protected abstract onPingAck(payload: Buffer): void;
  /** The peer said GOAWAY. */
  protected abstract onGoaway(lastStreamId: number, code: number, debug: Buffer): void;
  /** The connection's send window grew. */
  protected abstract onConnectionWindow(): void;
  /** A WINDOW_UPDATE of `increment` for `streamId` (0 is the role's stream error to raise). */
  protected abstract onStreamWindow(streamId: number, increment: number): void;
  /** A stream error (RFC 9113, 5.4.2): RST_STREAM `code` on the stream; the connection goes on. */
  protected abstract streamError(streamId: number, code: number): void;
  /** A connection error: the role sends GOAWAY and ends the connection. */
  protected abstract connectionError(error: H2ProtocolError): void;
  /** The open streams, whose send windows follow the peer's initial window. */
  protected abstract windowedStreams(): Iterable<SendWindowed>;

  readonly #settingsExpired = (ms: number): void => {
    this.#settingsTimer = undefined;
    if (this.ended || this.#settingsSeen) return;
    this.connectionError(
      new H2ProtocolError(SETTINGS_TIMEOUT, `no preface and SETTINGS from the peer in ${ms} ms`),
    );
  };

  #read(chunk: Buffer): void {
    if (this.ended) return;
    this.#reading = true;
    try {
      this.#readFrames(chunk);
    } catch (error) {
      this.#rest = EMPTY;
      this.connectionError(
        error instanceof H2ProtocolError
          ? error
          : new H2ProtocolError(
              INTERNAL_ERROR,
              String((error as Error)?.message ?? error),
              '',
              0,
              error,
            ),
      );
    } finally {
      this.#reading = false;
    }
  }

  readonly #resumeReading = (): void => {
    if (!this.#readPaused || this.ended) return;
    this.#readPaused = false;
    this.duplex.removeListener('drain', this.#resumeReading);
    this.duplex.resume();
    this.#read(EMPTY);
  };

  #readFrames(chunk: Buffer): void {
    let buffer = this.#rest.length > 0 ? Buffer.concat([this.#rest, chunk]) : chunk;
    let at = 0;
    if (this.#prefacePending) {
      const seen = Math.min(buffer.length, PREFACE.length);
      if (!buffer.subarray(0, seen).equals(PREFACE.subarray(0, seen))) {
        throw new H2ProtocolError(PROTOCOL_ERROR, 'invalid connection preface');
      }
      if (seen < PREFACE.length) {
        this.#rest = buffer;
        return;
      }
      this.#prefacePending = false;
      at = PREFACE.length;
    }
    while (buffer.length - at >= FRAME_HEADER_BYTES) {
      if (this.#readPaused) break;
      const length = (buffer[at]! << 16) | (buffer[at + 1]! << 8) | buffer[at + 2]!;
      if (length > MAX_FRAME_PAYLOAD) {
        throw new H2ProtocolError(FRAME_SIZE_ERROR, `frame of ${length} octets`);
      }
      const end = at + FRAME_HEADER_BYTES + length;
      if (end > buffer.length) break;
      const type = buffer[at + 3]!;
      const flags = buffer[at + 4]!;
      const streamId = buffer.readUInt32BE(at + 5) & 0x7fff_ffff;
      const payload = buffer.subarray(at + FRAME_HEADER_BYTES, end);
      at = end;
      this.#frame(type, flags, streamId, payload);
      if (this.ended) return;
      if (
        this.#maxUnwritten < Number.POSITIVE_INFINITY &&
        this.unwrittenBytes > this.#maxUnwritten
      ) {
        this.#pauseReading();
      }
    }
    buffer = at < buffer.length ? buffer.subarray(at) : EMPTY;
    // A cut frame is copied out of the chunk, so the chunk is not held for a few octets of it.
    this.#rest =
      buffer.length > 0 && buffer.length < FRAME_HEADER_BYTES ? Buffer.from(buffer) : buffer;
  }

  /** Too much waits to be written: the peer's next frames stay unread until the socket drains. */
  #pauseReading(): void {
    this.#readPaused = true;
    this.duplex.pause();
    this.duplex.once('drain', this.#resumeReading);
    // What is queued but not yet written makes the write that will drain.
    if (!this.#flushing && !this.duplex.writableNeedDrain) setImmediate(this.#resumeReading);
  }

  #frame(type: number, flags: number, streamId: number, payload: Buffer): void {
    if (!this.#settingsSeen) {
      // Each side's preface ends with (or is) a SETTINGS frame (RFC 9113, 3.4).
      if (type !== FRAME_SETTINGS || flags & FLAG_ACK) {
        throw new H2ProtocolError(PROTOCOL_ERROR, 'the preface has no SETTINGS frame');
      }
    }
    const block = this.#block;
    if (block !== undefined && (type !== FRAME_CONTINUATION || streamId !== block.streamId)) {
      throw new H2ProtocolError(PROTOCOL_ERROR, 'a header block was interrupted');
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
        if (streamId === 0) throw new H2ProtocolError(PROTOCOL_ERROR, 'PRIORITY on stream 0');
        if (payload.length !== 5) this.streamError(streamId, FRAME_SIZE_ERROR);
        return;
      case FRAME_RST_STREAM:
        this.#rstStream(streamId, payload);
        return;
      case FRAME_SETTINGS:
        this.#settings(flags, streamId, payload);
        return;
      case FRAME_PUSH_PROMISE:
        throw new H2ProtocolError(PROTOCOL_ERROR, 'PUSH_PROMISE, which neither side enables');
      case FRAME_PING:
        if (streamId !== 0) throw new H2ProtocolError(PROTOCOL_ERROR, 'PING on a stream');
        if (payload.length !== 8) throw new H2ProtocolError(FRAME_SIZE_ERROR, 'PING length');
        if (flags & FLAG_ACK) this.onPingAck(payload);
        else this.#ack(frameOf(FRAME_PING, FLAG_ACK, 0, payload));
        return;
      case FRAME_GOAWAY:
        if (streamId !== 0 || payload.length < 8) {
          throw new H2ProtocolError(PROTOCOL_ERROR, 'malformed GOAWAY');
        }
        this.onGoaway(
          payload.readUInt32BE(0) & 0x7fff_ffff,
          payload.readUInt32BE(4),
          payload.subarray(8),
        );
        return;
      case FRAME_WINDOW_UPDATE:
        this.#windowUpdate(streamId, payload);
        return;
      default:
      // Unknown frame types are ignored (RFC 9113, 4.1, 5.5).
    }
  }

  /**
   * Queues a PING or SETTINGS ACK, unless too many wait to go out: a peer that sends PINGs and
   * reads nothing would otherwise have every ACK buffered here.
   */
  #ack(frame: Buffer): void {
    if (this.#queuedAcks + this.#unwrittenAcks >= this.#maxPendingAcks) {
      // As nghttp2 does on a flood: what was queued is dropped, GOAWAY alone goes out.
      this.takeOutput();
      throw new H2ProtocolError(
        this.#ackFloodCode,
        `more than ${this.#maxPendingAcks} PING and SETTINGS ACKs unwritten (the peer does not read)`,
        '',
      );
    }
    this.#queuedAcks++;
    this.queue(frame);
  }

  #data(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new H2ProtocolError(PROTOCOL_ERROR, 'DATA on stream 0');
    // The whole payload, padding included, counts against the windows (RFC 9113, 6.9.1).
    const length = payload.length;
    this.#receiveWindow -= length;
    if (this.#receiveWindow < 0) {
      throw new H2ProtocolError(FLOW_CONTROL_ERROR, 'DATA beyond the connection window');
    }
    // Given back in one WINDOW_UPDATE per half window: each stream's own window bounds what a
    // role holds.
    this.#unacked += length;
    if (this.#unacked >= this.#connectionWindow / 2) {
      this.queue(windowUpdateFrame(0, this.#unacked));
      this.#receiveWindow += this.#unacked;
      this.#unacked = 0;
    }
    let data = payload;
    if (flags & FLAG_PADDED) {
      const padding = payload[0];
      if (padding === undefined || padding >= length) {
        throw new H2ProtocolError(PROTOCOL_ERROR, 'DATA padding longer than the frame');
      }
      data = payload.subarray(1, length - padding);
    }
    this.onData(streamId, data, length, (flags & FLAG_END_STREAM) !== 0);
  }

  #headers(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new H2ProtocolError(PROTOCOL_ERROR, 'HEADERS on stream 0');
    let fragment: Buffer;
    try {
      fragment = headersFragment(flags, payload).fragment;
    } catch {
      throw new H2ProtocolError(PROTOCOL_ERROR, 'HEADERS padding longer than the frame');
    }
    const endStream = (flags & FLAG_END_STREAM) !== 0;
    if (flags & FLAG_END_HEADERS) {
      this.#headerBlock(streamId, endStream, fragment);
      return;
    }
    // nghttp2 decodes as frames come: an oversized string fails before the block is complete.
    this.#checkStrings(streamId, fragment);
    this.#block = {
      streamId,
      endStream,
      fragments: [fragment],
      length: fragment.length,
      continuations: 0,
    };
  }

  #continuation(flags: number, payload: Buffer): void {
    const block = this.#block;
    if (block === undefined) {
      throw new H2ProtocolError(PROTOCOL_ERROR, 'CONTINUATION without a header block');
    }
    block.fragments.push(payload);
    block.length += payload.length;
    block.continuations++;
    // At most maxContinuations + 1 frames are held: what a block can make this side buffer.
    const bytes = Buffer.concat(block.fragments, block.length);
    this.#checkStrings(block.streamId, bytes);
    if (block.continuations > this.#maxContinuations) {
      this.#block = undefined;
      throw new H2ProtocolError(
        INTERNAL_ERROR,
        `a header block of more than ${this.#maxContinuations} CONTINUATION frames`,
        '',
        block.streamId,
      );
    }
    if (flags & FLAG_END_HEADERS) {
      this.#block = undefined;
      this.#headerBlock(block.streamId, block.endStream, bytes);
    }
  }

  #checkStrings(streamId: number, bytes: Buffer): void {
    if (!hasOversizedString(bytes, this.#maxStringLiteral)) return;
    this.#block = undefined;
    throw new H2ProtocolError(
      COMPRESSION_ERROR,
      `a header string longer than ${this.#maxStringLiteral} octets`,
      '',
      streamId,
    );
  }

  #headerBlock(streamId: number, endStream: boolean, bytes: Buffer): void {
    let fields: HeaderField[];
    try {
      // Decoded whatever the stream's state: the dynamic table must follow every block.
      fields = this.#decoder.decode(bytes);
    } catch (error) {
      // A whole block in one frame is checked for oversized strings only when it fails: the
      // hot path of every call does not scan its headers twice.
      this.#checkStrings(streamId, bytes);
      const message = error instanceof HpackError ? error.message : String(error);
      const list = message.includes('header list larger');
      throw new H2ProtocolError(
        list ? ENHANCE_YOUR_CALM : COMPRESSION_ERROR,
        `invalid header block: ${message}`,
        'invalid header block',
      );
    }
    this.onHeaders(streamId, endStream, fields);
  }

  #rstStream(streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new H2ProtocolError(PROTOCOL_ERROR, 'RST_STREAM on stream 0');
    if (payload.length !== 4) throw new H2ProtocolError(FRAME_SIZE_ERROR, 'RST_STREAM length');
    // A token bucket: a burst of resets, then a steady rate; more is a rapid reset attack.
    const now = performance.now();
    const tokens = Math.min(
      this.#resetBurst,
      this.#resetTokens + (now - this.#resetStamp) * this.#resetsPerMs,
    );
    this.#resetStamp = now;
    if (tokens < 1) {
      throw new H2ProtocolError(ENHANCE_YOUR_CALM, 'too many RST_STREAM frames');
    }
    this.#resetTokens = tokens - 1;
    this.onReset(streamId, payload.readUInt32BE(0));
  }

  #settings(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new H2ProtocolError(PROTOCOL_ERROR, 'SETTINGS on a stream');
    if (flags & FLAG_ACK) {
      if (payload.length !== 0) {
        throw new H2ProtocolError(FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload');
      }
      this.settingsAcked = true;
      return;
    }
    if (payload.length % 6 !== 0) {
      throw new H2ProtocolError(FRAME_SIZE_ERROR, 'SETTINGS length not a multiple of 6');
    }
    let windowDelta = 0;
    for (let at = 0; at < payload.length; at += 6) {
      const id = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      switch (id) {
        case SETTINGS_INITIAL_WINDOW_SIZE:
          if (value > MAX_WINDOW) {
            throw new H2ProtocolError(FLOW_CONTROL_ERROR, `initial window ${value} above 2^31-1`);
          }
          windowDelta += value - this.peerInitialWindow;
          this.peerInitialWindow = value;
          break;
        case SETTINGS_MAX_FRAME_SIZE:
          if (value < MAX_FRAME_PAYLOAD || value > LARGEST_FRAME) {
            throw new H2ProtocolError(PROTOCOL_ERROR, `max frame size ${value} out of range`);
          }
          this.peerMaxFrame = value;
          break;
        case SETTINGS_MAX_CONCURRENT_STREAMS:
          this.peerMaxStreams = value;
          break;
        case SETTINGS_ENABLE_PUSH:
          if (value > 1) throw new H2ProtocolError(PROTOCOL_ERROR, 'ENABLE_PUSH not 0 or 1');
          break;
        case SETTINGS_HEADER_TABLE_SIZE:
          this.peerHeaderTableSize = value;
          break;
        default:
        // The header list size is advisory; unknown settings are ignored (RFC 9113, 6.5.2).
      }
    }
    this.#ack(frameOf(FRAME_SETTINGS, FLAG_ACK, 0, EMPTY));
    if (windowDelta !== 0) {
      // A new initial window changes every open stream's window by the difference; one pushed
      // past 2^31-1 is a connection error (RFC 9113, 6.9.2).
      for (const stream of this.windowedStreams()) {
        stream.sendWindow += windowDelta;
        if (stream.sendWindow > MAX_WINDOW) {
          throw new H2ProtocolError(FLOW_CONTROL_ERROR, 'a stream window above 2^31-1');
        }
      }
    }
    const first = !this.#settingsSeen;
    if (first) {
      this.#settingsSeen = true;
      this.stopTimers();
    }
    this.onSettings(windowDelta, first);
  }

  #windowUpdate(streamId: number, payload: Buffer): void {
    if (payload.length !== 4) {
      throw new H2ProtocolError(FRAME_SIZE_ERROR, 'WINDOW_UPDATE is not 4 octets');
    }
    const increment = payload.readUInt32BE(0) & 0x7fff_ffff;
    if (streamId !== 0) {
      this.onStreamWindow(streamId, increment);
      return;
    }
    if (increment === 0) throw new H2ProtocolError(PROTOCOL_ERROR, 'WINDOW_UPDATE of 0');
    this.#sendWindow += increment;
    if (this.#sendWindow > MAX_WINDOW) {
      throw new H2ProtocolError(FLOW_CONTROL_ERROR, 'connection window above 2^31-1');
    }
    this.onConnectionWindow();
  }
}
