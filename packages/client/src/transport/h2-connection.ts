// The client side of one HTTP/2 connection (RFC 9113), spoken over a socket by the h2 transport
// itself rather than through node:http2: the preface and SETTINGS (both sides' honoured), HPACK
// header blocks (the server's dynamic table followed, CONTINUATION), flow control both ways, PING,
// GOAWAY and RST_STREAM, streams beyond the server's concurrency limit queued. Frames written in
// one tick go out in one socket write, so a unary call's HEADERS and DATA leave together.
import type { IncomingHttpHeaders } from 'node:http2';
import type { Duplex } from 'node:stream';
import {
  CANCEL,
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
  FRAME_PUSH_PROMISE,
  FRAME_RST_STREAM,
  FRAME_SETTINGS,
  FRAME_SIZE_ERROR,
  FRAME_WINDOW_UPDATE,
  frameOf,
  goawayFrame,
  headerFrames,
  headersFragment,
  MAX_FRAME_PAYLOAD,
  MAX_WINDOW,
  NO_ERROR,
  PREFACE,
  PROTOCOL_ERROR,
  REFUSED_STREAM,
  rstStreamFrame,
  SETTINGS_ENABLE_PUSH,
  SETTINGS_INITIAL_WINDOW_SIZE,
  SETTINGS_MAX_CONCURRENT_STREAMS,
  SETTINGS_MAX_FRAME_SIZE,
  settingsFrame,
  windowUpdateFrame,
  writeFrameHeader,
} from './h2/frames.js';
import { HeaderBlockDecoder, type HeaderField } from './h2/hpack.js';
import { type RequestTemplate, requestBlock, requestPrefix } from './h2/request-headers.js';

/** The receive window of each stream: how much a server may send before the client reads it. */
export const STREAM_WINDOW = 512 * 1024;
/** The receive window of the connection, across its streams. */
export const CONNECTION_WINDOW = 16 * 1024 * 1024;
/** Stream ids are odd and 31 bits: the last one a client can open. */
const LAST_STREAM_ID = 0x7fff_ffff;
/** A header block may not grow past this while CONTINUATION frames keep coming. */
const MAX_HEADER_BLOCK = 256 * 1024;
/** Writes larger than this are not concatenated into one buffer but corked. */
const CONCAT_LIMIT = 64 * 1024;
const EMPTY = Buffer.alloc(0);

/** What a stream reports. After onEnd, onReset or onDropped nothing more comes. */
export interface H2StreamEvents {
  /** A header block: the response headers, then possibly trailers (`endStream` set). */
  onHeaders(headers: IncomingHttpHeaders, endStream: boolean): void;
  /** DATA of the response. */
  onData(chunk: Buffer): void;
  /** The server ended its side (END_STREAM): everything it sent was reported. */
  onEnd(): void;
  /** The server reset the stream (or refused it in a GOAWAY: REFUSED_STREAM). */
  onReset(code: number): void;
  /**
   * The connection ended under the stream. `unsent`: the stream was still queued (the server's
   * concurrency limit), so nothing of it reached the server.
   */
  onDropped(error: Error, unsent: boolean): void;
}

/** What a connection reports to its owner. */
export interface H2ConnectionEvents {
  /** The server's first SETTINGS arrived: the handshake is complete. */
  onReady(): void;
  /** The server said GOAWAY; no new stream may be opened. */
  onGoaway(code: number, lastStreamId: number, debug: Buffer): void;
  /** The connection ended (an error, the socket closed, destroy()). Called once. */
  onClose(error: Error | undefined): void;
}

/** A connection error this side detected: GOAWAY with `code`, then the connection ends. */
class ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'ConnectionError';
  }
}

/** One request stream on an H2Connection. */
export class H2Stream {
  /** 0 until the stream is opened (its HEADERS written). */
  id = 0;
  readonly block: Buffer;
  readonly events: H2StreamEvents;
  /** What the server lets us send on it. */
  sendWindow = 0;
  /** What we let the server send; replenished as the data is read. */
  receiveWindow = STREAM_WINDOW;
  /** Bytes read since the last WINDOW_UPDATE. */
  unacked = 0;
  /** DATA waiting for the stream to open or for window. */
  readonly queue: Buffer[] = [];
  /** END_STREAM is to follow the queued data. */
  endQueued = false;
  localEnded = false;
  remoteEnded = false;
  closed = false;
  paused = false;
  /** What arrived while paused, to report on resume, in order. */
  held: Array<() => void> | undefined;
  readonly #connection: H2Connection;

  constructor(connection: H2Connection, block: Buffer, events: H2StreamEvents) {
    this.#connection = connection;
    this.block = block;
    this.events = events;
  }

  /** True once the stream was opened: its HEADERS are written (or about to be, this tick). */
  get opened(): boolean {
    return this.id !== 0;
  }

  /** Sends `data` (queued while the stream waits or lacks window); `end` half-closes after it. */
  write(data: Buffer, end = false): void {
    if (this.closed || this.endQueued) return;
    if (data.length > 0) this.queue.push(data);
    if (end) this.endQueued = true;
    if (this.opened) this.#connection.pump(this);
  }

  /** Half-closes the request side. */
  end(): void {
    this.write(EMPTY, true);
  }

  /** Ends the stream now: RST_STREAM `code` if it was opened; nothing more is reported. */
  cancel(code = CANCEL): void {
    this.held = undefined;
    this.#connection.reset(this, code);
  }

  /** Stops reporting DATA: what arrives is held, and its window not given back, until resume. */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    const held = this.held;
    while (held && held.length > 0 && !this.paused) held.shift()!();
  }

  /** Reports now, or after what is held when paused. */
  deliver(report: () => void): void {
    if (!this.paused && !this.held?.length) {
      report();
      return;
    }
    this.held ??= [];
    this.held.push(report);
  }
}

/** The client side of one HTTP/2 connection over `socket`. */
export class H2Connection {
  readonly #socket: Duplex;
  readonly #events: H2ConnectionEvents;
  readonly #template: RequestTemplate;
  /** The request header block prefix of each path, encoded once. */
  readonly #prefixes = new Map<string, Buffer>();
  readonly #decoder = new HeaderBlockDecoder();
  readonly #streams = new Map<number, H2Stream>();
  /** Streams waiting for the server's concurrency limit, in order. */
  readonly #waiting: H2Stream[] = [];
  /** Streams with data but no window. */
  readonly #blocked = new Set<H2Stream>();
  readonly #pings = new Map<bigint, (error: Error | null) => void>();
  #pingCount = 0n;
  #nextStreamId = 1;
  #ready = false;
  #goingAway = false;
  #destroyed = false;
  // The server's settings, HTTP/2's defaults until its SETTINGS say otherwise.
  #peerMaxFrame = MAX_FRAME_PAYLOAD;
  #peerInitialWindow = DEFAULT_WINDOW;
  #peerMaxStreams = Number.POSITIVE_INFINITY;
  /** What the server lets us send on the connection. */
  #sendWindow = DEFAULT_WINDOW;
  #receiveWindow = CONNECTION_WINDOW;
  #unacked = 0;
  /** Bytes of a frame cut by the end of a read. */
  #rest: Buffer = EMPTY;
  /** A header block being received in CONTINUATION frames. */
  #block: { streamId: number; endStream: boolean; fragments: Buffer[]; length: number } | undefined;
  #out: Buffer[] = [];
  #outBytes = 0;
  #flushing = false;

  constructor(socket: Duplex, template: RequestTemplate, events: H2ConnectionEvents) {
    this.#socket = socket;
    this.#template = template;
    this.#events = events;
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('error', (error: Error) => this.destroy(error));
    // The server's end of the byte stream ends the connection: no frame can follow.
    socket.on('end', () => this.destroy(new Error('the connection closed')));
    socket.on('close', () => this.destroy(new Error('the connection closed')));
    this.#send(PREFACE);
    this.#send(
      settingsFrame([
        [SETTINGS_ENABLE_PUSH, 0],
        [SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW],
      ]),
    );
    this.#send(windowUpdateFrame(0, CONNECTION_WINDOW - DEFAULT_WINDOW));
  }

  /** True once the connection ended: no stream can be opened, none is open. */
  get destroyed(): boolean {
    return this.#destroyed;
  }

  /** True while new streams may be opened: ready, and no GOAWAY received. */
  get open(): boolean {
    return this.#ready && !this.#goingAway && !this.#destroyed;
  }

  /** Streams open or waiting to open. */
  get streamCount(): number {
    return this.#streams.size + this.#waiting.length;
  }

  /** The server's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited until it says one). */
  get maxConcurrentStreams(): number {
    return this.#peerMaxStreams;
  }

  /**
   * A new request stream on `path` with the call's own header `fields` (grpc-timeout, metadata),
   * the request `data` first sent on it, and `end` to half-close after it. It opens at once, or once the server's concurrency limit lets it. Throws when the connection
   * takes no new streams (closed, or told to go away).
   */
  request(
    path: string,
    fields: ReadonlyArray<readonly [string, string]>,
    events: H2StreamEvents,
    data: readonly Buffer[],
    end: boolean,
  ): H2Stream {
    if (!this.open) throw new Error('the connection takes no new streams');
    let prefix = this.#prefixes.get(path);
    if (prefix === undefined) {
      prefix = requestPrefix(this.#template, path);
      this.#prefixes.set(path, prefix);
    }
    const stream = new H2Stream(this, requestBlock(prefix, fields), events);
    for (const chunk of data) if (chunk.length > 0) stream.queue.push(chunk);
    stream.endQueued = end;
    if (this.#streams.size < this.#peerMaxStreams && this.#waiting.length === 0) {
      this.#openStream(stream);
    } else this.#waiting.push(stream);
    return stream;
  }

  /** Sends a PING; `callback` runs with null on its ACK, or with the error that ended the wait. */
  ping(callback: (error: Error | null) => void): boolean {
    if (this.#destroyed) return false;
    const payload = Buffer.allocUnsafe(8);
    const key = ++this.#pingCount;
    payload.writeBigUInt64BE(key);
    this.#pings.set(key, callback);
    this.#send(frameOf(FRAME_PING, 0, 0, payload));
    return true;
  }

  /** Keeps the process alive for the socket (while calls are open). */
  ref(): void {
    (this.#socket as { ref?: () => void }).ref?.();
  }

  unref(): void {
    (this.#socket as { unref?: () => void }).unref?.();
  }

  /** Ends the connection at once: every stream is dropped with `error`. */
  destroy(error?: Error): void {
    this.#teardown(error, undefined);
  }

  /**
   * Ends the connection: the socket is destroyed, or with `last` ended after what is queued and
   * `last` were written (a GOAWAY, or the frames of the streams that just finished).
   */
  #teardown(error: Error | undefined, last: Buffer | undefined): void {
    if (this.#destroyed) return;
    if (last !== undefined) {
      this.#out.push(last);
      const out = Buffer.concat(this.#out);
      this.#socket.end(out.length > 0 ? out : undefined, () => this.#socket.destroy());
    } else this.#socket.destroy();
    this.#destroyed = true;
    this.#goingAway = true;
    this.#out = [];
    const reason = error ?? new Error('the connection was closed');
    const streams = [...this.#streams.values()];
    const waiting = this.#waiting.splice(0);
    this.#streams.clear();
    this.#blocked.clear();
    for (const stream of streams) this.#drop(stream, reason, false);
    for (const stream of waiting) this.#drop(stream, reason, true);
    const pings = [...this.#pings.values()];
    this.#pings.clear();
    for (const callback of pings) callback(reason);
    this.#events.onClose(error);
  }

  /** @internal Sends what `stream` has queued, as far as the windows allow. */
  pump(stream: H2Stream): void {
    const queue = stream.queue;
    while (queue.length > 0) {
      const head = queue[0]!;
      const size = Math.min(head.length, stream.sendWindow, this.#sendWindow, this.#peerMaxFrame);
      if (size <= 0) {
        this.#blocked.add(stream);
        return;
      }
      if (size === head.length) queue.shift();
      else queue[0] = head.subarray(size);
      stream.sendWindow -= size;
      this.#sendWindow -= size;
      const last = queue.length === 0 && stream.endQueued;
      this.#data(stream.id, size === head.length ? head : head.subarray(0, size), last);
      if (last) stream.localEnded = true;
    }
    this.#blocked.delete(stream);
    if (stream.endQueued && !stream.localEnded) {
      this.#data(stream.id, EMPTY, true);
      stream.localEnded = true;
    }
    if (stream.localEnded && stream.remoteEnded) this.#close(stream);
  }

  /** @internal Ends `stream` from this side: RST_STREAM if it was opened, else it never opens. */
  reset(stream: H2Stream, code: number): void {
    if (stream.closed) return;
    if (!stream.opened) {
      const at = this.#waiting.indexOf(stream);
      if (at >= 0) this.#waiting.splice(at, 1);
      stream.closed = true;
      return;
    }
    if (!this.#destroyed) this.#send(rstStreamFrame(stream.id, code));
    this.#close(stream);
  }

  #openStream(stream: H2Stream): void {
    if (this.#nextStreamId > LAST_STREAM_ID) {
      // Out of stream ids: this connection takes no more; the stream goes to the next one.
      this.#goAway();
      this.#drop(stream, new Error('no stream ids left on the connection'), true);
      return;
    }
    stream.id = this.#nextStreamId;
    this.#nextStreamId += 2;
    stream.sendWindow = this.#peerInitialWindow;
    this.#streams.set(stream.id, stream);
    const block = stream.block;
    // The common case, HEADERS and a request that fits the windows, in one buffer.
    const first = stream.queue[0];
    if (
      block.length <= this.#peerMaxFrame &&
      first !== undefined &&
      stream.queue.length === 1 &&
      stream.endQueued &&
      first.length <= Math.min(stream.sendWindow, this.#sendWindow, this.#peerMaxFrame)
    ) {
      const out = Buffer.allocUnsafe(2 * FRAME_HEADER_BYTES + block.length + first.length);
      writeFrameHeader(out, 0, block.length, FRAME_HEADERS, FLAG_END_HEADERS, stream.id);
      block.copy(out, FRAME_HEADER_BYTES);
      const at = FRAME_HEADER_BYTES + block.length;
      writeFrameHeader(out, at, first.length, FRAME_DATA, FLAG_END_STREAM, stream.id);
      first.copy(out, at + FRAME_HEADER_BYTES);
      stream.queue.length = 0;
      stream.sendWindow -= first.length;
      this.#sendWindow -= first.length;
      stream.localEnded = true;
      this.#send(out);
      return;
    }
    for (const frame of headerFrames(
      { streamId: stream.id, endStream: false, priority: undefined },
      block,
      this.#peerMaxFrame,
    )) {
      this.#send(frame);
    }
    this.pump(stream);
  }

  /** A DATA frame of `payload` on `streamId`. */
  #data(streamId: number, payload: Buffer, end: boolean): void {
    const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
    writeFrameHeader(header, 0, payload.length, FRAME_DATA, end ? FLAG_END_STREAM : 0, streamId);
    this.#send(header);
    if (payload.length > 0) this.#send(payload);
  }

  /** Queues bytes for the socket: everything queued in one tick goes out in one write. */
  #send(bytes: Buffer): void {
    if (this.#destroyed) return;
    this.#out.push(bytes);
    this.#outBytes += bytes.length;
    if (!this.#flushing) {
      this.#flushing = true;
      process.nextTick(this.#flush);
    }
  }

  readonly #flush = () => {
    this.#flushing = false;
    const out = this.#out;
    if (this.#destroyed || out.length === 0) return;
    this.#out = [];
    const bytes = this.#outBytes;
    this.#outBytes = 0;
    if (out.length === 1) this.#socket.write(out[0]);
    else if (bytes <= CONCAT_LIMIT) this.#socket.write(Buffer.concat(out, bytes));
    else {
      this.#socket.cork();
      for (const chunk of out) this.#socket.write(chunk);
      this.#socket.uncork();
    }
  };

  /** The stream is over on both sides (or reset): forgotten, and a waiting one may open. */
  #close(stream: H2Stream): void {
    if (stream.closed) return;
    stream.closed = true;
    this.#streams.delete(stream.id);
    this.#blocked.delete(stream);
    while (this.#waiting.length > 0 && this.#streams.size < this.#peerMaxStreams) {
      this.#openStream(this.#waiting.shift()!);
    }
    // After a graceful GOAWAY, the connection ends with its last stream.
    if (this.#goingAway && this.streamCount === 0 && !this.#destroyed) {
      this.#teardown(undefined, EMPTY);
    }
  }

  #drop(stream: H2Stream, error: Error, unsent: boolean): void {
    if (stream.closed) return;
    stream.closed = true;
    stream.deliver(() => stream.events.onDropped(error, unsent));
  }

  #goAway(): void {
    if (this.#goingAway) return;
    this.#goingAway = true;
    this.#events.onGoaway(NO_ERROR, this.#nextStreamId - 2, EMPTY);
  }

  #read(chunk: Buffer): void {
    let buffer = this.#rest.length > 0 ? Buffer.concat([this.#rest, chunk]) : chunk;
    let at = 0;
    try {
      while (buffer.length - at >= FRAME_HEADER_BYTES) {
        const length = (buffer[at]! << 16) | (buffer[at + 1]! << 8) | buffer[at + 2]!;
        if (length > MAX_FRAME_PAYLOAD) {
          throw new ConnectionError(FRAME_SIZE_ERROR, `frame of ${length} octets`);
        }
        const end = at + FRAME_HEADER_BYTES + length;
        if (end > buffer.length) break;
        const type = buffer[at + 3]!;
        const flags = buffer[at + 4]!;
        const streamId = buffer.readUInt32BE(at + 5) & 0x7fff_ffff;
        const payload = buffer.subarray(at + FRAME_HEADER_BYTES, end);
        at = end;
        this.#frame(type, flags, streamId, payload);
        if (this.#destroyed) return;
      }
    } catch (error) {
      this.#connectionError(error);
      return;
    }
    buffer = buffer.subarray(at);
    this.#rest = buffer.length > 0 ? Buffer.from(buffer) : EMPTY;
  }

  /** Tells the server why (GOAWAY with the error's code), then ends the connection. */
  #connectionError(error: unknown): void {
    const code = error instanceof ConnectionError ? error.code : PROTOCOL_ERROR;
    const reason = error instanceof Error ? error : new Error(String(error));
    // Last stream 0: a client accepts no server-initiated streams.
    this.#teardown(
      new Error(`HTTP/2 protocol error: ${reason.message}`),
      goawayFrame(0, code, reason.message),
    );
  }

  #frame(type: number, flags: number, streamId: number, payload: Buffer): void {
    if (!this.#ready && type !== FRAME_SETTINGS) {
      throw new ConnectionError(PROTOCOL_ERROR, 'the server did not start with SETTINGS');
    }
    if (
      this.#block !== undefined &&
      (type !== FRAME_CONTINUATION || streamId !== this.#block.streamId)
    ) {
      throw new ConnectionError(PROTOCOL_ERROR, 'a header block was interrupted');
    }
    switch (type) {
      case FRAME_DATA:
        this.#onData(flags, streamId, payload);
        return;
      case FRAME_HEADERS:
        this.#onHeaders(flags, streamId, payload);
        return;
      case FRAME_CONTINUATION:
        this.#onContinuation(flags, streamId, payload);
        return;
      case FRAME_RST_STREAM:
        this.#onReset(streamId, payload);
        return;
      case FRAME_SETTINGS:
        this.#onSettings(flags, streamId, payload);
        return;
      case FRAME_PING:
        this.#onPing(flags, streamId, payload);
        return;
      case FRAME_GOAWAY:
        this.#onGoaway(streamId, payload);
        return;
      case FRAME_WINDOW_UPDATE:
        this.#onWindowUpdate(streamId, payload);
        return;
      case FRAME_PUSH_PROMISE:
        throw new ConnectionError(PROTOCOL_ERROR, 'PUSH_PROMISE although push is disabled');
      default:
        // PRIORITY, and frame types this side does not know, are ignored (RFC 9113, 4.1, 5.5).
        return;
    }
  }

  #onData(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(PROTOCOL_ERROR, 'DATA on stream 0');
    const length = payload.length;
    this.#receiveWindow -= length;
    if (this.#receiveWindow < 0) {
      throw new ConnectionError(FLOW_CONTROL_ERROR, 'DATA beyond the connection window');
    }
    // The connection's window is given back at once: each stream's own window bounds what is held.
    this.#unacked += length;
    if (this.#unacked >= CONNECTION_WINDOW / 2) {
      this.#send(windowUpdateFrame(0, this.#unacked));
      this.#receiveWindow += this.#unacked;
      this.#unacked = 0;
    }
    let data = payload;
    if (flags & FLAG_PADDED) {
      const padding = payload[0];
      if (padding === undefined || padding >= length) {
        throw new ConnectionError(PROTOCOL_ERROR, 'bad DATA padding');
      }
      data = payload.subarray(1, length - padding);
    }
    const stream = this.#streams.get(streamId);
    if (!stream || stream.remoteEnded) return;
    stream.receiveWindow -= length;
    if (stream.receiveWindow < 0) {
      stream.events.onReset(FLOW_CONTROL_ERROR);
      this.reset(stream, FLOW_CONTROL_ERROR);
      return;
    }
    const end = (flags & FLAG_END_STREAM) !== 0;
    if (end) stream.remoteEnded = true;
    stream.deliver(() => {
      if (data.length > 0) stream.events.onData(data);
      if (end) this.#remoteEnd(stream);
      else this.#consumed(stream, length);
    });
  }

  /** `length` octets of `stream` were read: its window is given back once half is used. */
  #consumed(stream: H2Stream, length: number): void {
    stream.unacked += length;
    if (stream.closed || stream.remoteEnded || stream.unacked < STREAM_WINDOW / 2) return;
    this.#send(windowUpdateFrame(stream.id, stream.unacked));
    stream.receiveWindow += stream.unacked;
    stream.unacked = 0;
  }

  #remoteEnd(stream: H2Stream): void {
    if (stream.closed) return;
    stream.events.onEnd();
    if (stream.localEnded) this.#close(stream);
  }

  #onHeaders(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(PROTOCOL_ERROR, 'HEADERS on stream 0');
    let fragment: Buffer;
    try {
      fragment = headersFragment(flags, payload).fragment;
    } catch (error) {
      throw new ConnectionError(PROTOCOL_ERROR, (error as Error).message);
    }
    const endStream = (flags & FLAG_END_STREAM) !== 0;
    if (flags & FLAG_END_HEADERS) this.#headerBlock(streamId, endStream, fragment);
    else this.#block = { streamId, endStream, fragments: [fragment], length: fragment.length };
  }

  #onContinuation(flags: number, streamId: number, payload: Buffer): void {
    const block = this.#block;
    if (block === undefined) throw new ConnectionError(PROTOCOL_ERROR, 'CONTINUATION unexpected');
    block.fragments.push(payload);
    block.length += payload.length;
    if (block.length > MAX_HEADER_BLOCK) {
      throw new ConnectionError(ENHANCE_YOUR_CALM, 'header block too large');
    }
    if (flags & FLAG_END_HEADERS) {
      this.#block = undefined;
      this.#headerBlock(streamId, block.endStream, Buffer.concat(block.fragments, block.length));
    }
  }

  #headerBlock(streamId: number, endStream: boolean, fragment: Buffer): void {
    let fields: HeaderField[];
    try {
      // Decoded whatever the stream's state: the dynamic table must follow every block.
      fields = this.#decoder.decode(fragment);
    } catch (error) {
      throw new ConnectionError(COMPRESSION_ERROR, (error as Error).message);
    }
    const stream = this.#streams.get(streamId);
    if (!stream || stream.remoteEnded) return;
    const headers = headersOf(fields);
    if (endStream) stream.remoteEnded = true;
    stream.deliver(() => {
      stream.events.onHeaders(headers, endStream);
      if (endStream) this.#remoteEnd(stream);
    });
  }

  #onReset(streamId: number, payload: Buffer): void {
    if (streamId === 0 || payload.length !== 4) {
      throw new ConnectionError(PROTOCOL_ERROR, 'malformed RST_STREAM');
    }
    const stream = this.#streams.get(streamId);
    if (!stream) return;
    const code = payload.readUInt32BE(0);
    this.#close(stream);
    stream.deliver(() => stream.events.onReset(code));
  }

  #onSettings(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new ConnectionError(PROTOCOL_ERROR, 'SETTINGS on a stream');
    if (flags & FLAG_ACK) {
      if (payload.length !== 0) throw new ConnectionError(FRAME_SIZE_ERROR, 'SETTINGS ACK body');
      return;
    }
    if (payload.length % 6 !== 0) throw new ConnectionError(FRAME_SIZE_ERROR, 'SETTINGS length');
    for (let at = 0; at < payload.length; at += 6) {
      const id = payload.readUInt16BE(at);
      const value = payload.readUInt32BE(at + 2);
      switch (id) {
        case SETTINGS_MAX_CONCURRENT_STREAMS:
          this.#peerMaxStreams = value;
          break;
        case SETTINGS_INITIAL_WINDOW_SIZE: {
          if (value > MAX_WINDOW) {
            throw new ConnectionError(FLOW_CONTROL_ERROR, `initial window ${value}`);
          }
          // The change applies to every open stream's window (RFC 9113, 6.9.2).
          const delta = value - this.#peerInitialWindow;
          this.#peerInitialWindow = value;
          for (const stream of this.#streams.values()) stream.sendWindow += delta;
          break;
        }
        case SETTINGS_MAX_FRAME_SIZE:
          if (value < MAX_FRAME_PAYLOAD || value > 0xff_ffff) {
            throw new ConnectionError(PROTOCOL_ERROR, `max frame size ${value}`);
          }
          this.#peerMaxFrame = value;
          break;
        default:
          // The header table size only bounds a dynamic table our encoder never uses; the
          // others do not apply to a client.
          break;
      }
    }
    this.#send(frameOf(FRAME_SETTINGS, FLAG_ACK, 0, EMPTY));
    this.#unblock();
    while (this.#waiting.length > 0 && this.#streams.size < this.#peerMaxStreams) {
      this.#openStream(this.#waiting.shift()!);
    }
    if (!this.#ready) {
      this.#ready = true;
      this.#events.onReady();
    }
  }

  #onPing(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new ConnectionError(PROTOCOL_ERROR, 'PING on a stream');
    if (payload.length !== 8) throw new ConnectionError(FRAME_SIZE_ERROR, 'PING length');
    if (flags & FLAG_ACK) {
      const key = payload.readBigUInt64BE(0);
      const callback = this.#pings.get(key);
      this.#pings.delete(key);
      callback?.(null);
      return;
    }
    this.#send(frameOf(FRAME_PING, FLAG_ACK, 0, payload));
  }

  #onGoaway(streamId: number, payload: Buffer): void {
    if (streamId !== 0 || payload.length < 8) {
      throw new ConnectionError(PROTOCOL_ERROR, 'malformed GOAWAY');
    }
    const lastStreamId = payload.readUInt32BE(0) & 0x7fff_ffff;
    const code = payload.readUInt32BE(4);
    const debug = payload.subarray(8);
    const wasGoingAway = this.#goingAway;
    this.#goingAway = true;
    if (!wasGoingAway) this.#events.onGoaway(code, lastStreamId, Buffer.from(debug));
    // Streams the server never processed end as refused; queued ones never left.
    for (const stream of [...this.#streams.values()]) {
      if (stream.id <= lastStreamId) continue;
      this.#close(stream);
      stream.deliver(() => stream.events.onReset(REFUSED_STREAM));
    }
    const waiting = this.#waiting.splice(0);
    const gone = new Error(`the server sent GOAWAY with code ${code}`);
    for (const stream of waiting) this.#drop(stream, gone, true);
    if (code !== NO_ERROR) {
      this.#teardown(new Error(`Session closed with error code ${code}`), EMPTY);
    } else if (this.streamCount === 0) {
      this.#teardown(undefined, EMPTY);
    }
  }

  #onWindowUpdate(streamId: number, payload: Buffer): void {
    if (payload.length !== 4) throw new ConnectionError(FRAME_SIZE_ERROR, 'WINDOW_UPDATE length');
    const increment = payload.readUInt32BE(0) & 0x7fff_ffff;
    if (streamId === 0) {
      if (increment === 0) throw new ConnectionError(PROTOCOL_ERROR, 'WINDOW_UPDATE of 0');
      this.#sendWindow += increment;
      if (this.#sendWindow > MAX_WINDOW) {
        throw new ConnectionError(FLOW_CONTROL_ERROR, 'connection window above 2^31-1');
      }
      this.#unblock();
      return;
    }
    const stream = this.#streams.get(streamId);
    if (!stream) return;
    stream.sendWindow += increment;
    if (increment === 0 || stream.sendWindow > MAX_WINDOW) {
      const code = increment === 0 ? PROTOCOL_ERROR : FLOW_CONTROL_ERROR;
      this.reset(stream, code);
      stream.deliver(() => stream.events.onReset(code));
      return;
    }
    if (this.#blocked.has(stream)) this.pump(stream);
  }

  /** Streams waiting for window get what is there, in the order they started waiting. */
  #unblock(): void {
    for (const stream of [...this.#blocked]) {
      if (this.#sendWindow <= 0) return;
      this.pump(stream);
    }
  }
}

/** Header fields as node:http2 gives them: `:status` a number, repeated names an array. */
export function headersOf(fields: readonly HeaderField[]): IncomingHttpHeaders {
  const headers: Record<string, string | string[] | number> = {};
  for (const { name, value } of fields) {
    if (name === ':status') {
      headers[name] = Number(value);
      continue;
    }
    const seen = headers[name];
    if (seen === undefined) headers[name] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else headers[name] = [String(seen), value];
  }
  return headers as IncomingHttpHeaders;
}
