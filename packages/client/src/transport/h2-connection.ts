// The client side of one HTTP/2 connection (RFC 9113), spoken over a socket by the h2 transport
// itself rather than through node:http2. The connection core (h2/session.ts) reads and checks the
// frames, answers SETTINGS and PING, keeps the connection windows and writes once per tick; this
// role opens request streams (beyond the server's concurrency limit they wait), sends their DATA
// within the windows, and reports what the server says on each. A unary call's HEADERS and DATA
// leave in one buffer. What the server does not take (its windows closed, its socket not read) is
// held up to a bound, as the server role bounds its answers: beyond it, requests are refused.
import type { IncomingHttpHeaders } from 'node:http2';
import type { Duplex } from 'node:stream';
import {
  CANCEL,
  DEFAULT_WINDOW,
  ENHANCE_YOUR_CALM,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FLOW_CONTROL_ERROR,
  FRAME_DATA,
  FRAME_HEADER_BYTES,
  FRAME_HEADERS,
  FRAME_PING,
  frameOf,
  goawayFrame,
  headerFrames,
  MAX_WINDOW,
  NO_ERROR,
  PREFACE,
  PROTOCOL_ERROR,
  REFUSED_STREAM,
  rstStreamFrame,
  SETTINGS_ENABLE_PUSH,
  SETTINGS_INITIAL_WINDOW_SIZE,
  settingsFrame,
  windowUpdateFrame,
  writeFrameHeader,
} from './h2/frames.js';
import type { HeaderField } from './h2/hpack.js';
import type { H2ProtocolError } from './h2/protocol-error.js';
import { type RequestTemplate, requestBlock, requestPrefix } from './h2/request-headers.js';
import { H2Session, type SessionLimits } from './h2/session.js';
import {
  DEFAULT_MAX_BUFFERED_REQUEST_BYTES,
  RequestBufferFullError,
  refusal,
} from './request-bound.js';

export { DEFAULT_MAX_BUFFERED_REQUEST_BYTES, RequestBufferFullError };

/** The receive window of each stream: how much a server may send before the client reads it. */
export const STREAM_WINDOW = 512 * 1024;
/** The receive window of the connection, across its streams. */
export const CONNECTION_WINDOW = 16 * 1024 * 1024;
/** Stream ids are odd and 31 bits: the last one a client can open. */
const LAST_STREAM_ID = 0x7fff_ffff;
const EMPTY = Buffer.alloc(0);

/** What the client role accepts from a server: the core's limits, and its own request bound. */
export interface H2ConnectionLimits extends SessionLimits {
  /**
   * Request octets the connection may hold that the server has not taken: DATA waiting for its
   * flow-control windows or its concurrency limit, and bytes queued for the socket or in its
   * buffer (a server that does not read). A request or stream write that would go beyond it is
   * refused with {@link RequestBufferFullError}; one is always taken when nothing is held.
   * Default {@link DEFAULT_MAX_BUFFERED_REQUEST_BYTES}.
   */
  readonly maxBufferedRequestBytes?: number;
}

/** What a stream reports. After onEnd, onReset, onDropped or onRefused nothing more comes. */
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
  /**
   * A write on the open stream would have gone beyond the connection's request bound: the stream
   * was reset (CANCEL), the write dropped.
   */
  onRefused(error: RequestBufferFullError): void;
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
  /** Octets in `queue`, counted in the connection's held request bytes. */
  queuedBytes = 0;
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
    if (data.length > 0) {
      const refused = this.#connection.hold(this, [data]);
      if (refused !== undefined) {
        this.cancel(CANCEL);
        this.events.onRefused(refused);
        return;
      }
    }
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

  /** Whether a report made now goes out at once (not paused, nothing held before it). */
  get reportsNow(): boolean {
    return !this.paused && (this.held === undefined || this.held.length === 0);
  }

  /** Reports now, or after what is held when paused. */
  deliver(report: () => void): void {
    if (this.reportsNow) {
      report();
      return;
    }
    this.held ??= [];
    this.held.push(report);
  }
}

/** The client side of one HTTP/2 connection over `socket`, over the connection core. */
export class H2Connection extends H2Session {
  readonly #events: H2ConnectionEvents;
  readonly #template: RequestTemplate;
  /** The request header block prefix of each path, encoded once. */
  readonly #prefixes = new Map<string, Buffer>();
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
  readonly #maxBuffered: number;
  /** Request octets in the streams' queues (waiting for windows or to open). */
  #held = 0;

  /**
   * `limits`: what the server may make this side hold (session.ts, DEFAULT_LIMITS; and
   * maxBufferedRequestBytes).
   */
  constructor(
    socket: Duplex,
    template: RequestTemplate,
    events: H2ConnectionEvents,
    limits?: H2ConnectionLimits,
  ) {
    super(socket, {
      expectPreface: false,
      connectionWindow: CONNECTION_WINDOW,
      ackFloodCode: ENHANCE_YOUR_CALM,
      limits,
    });
    this.#template = template;
    this.#events = events;
    this.#maxBuffered = limits?.maxBufferedRequestBytes ?? DEFAULT_MAX_BUFFERED_REQUEST_BYTES;
    socket.on('error', (error: Error) => this.destroy(error));
    // The server's end of the byte stream ends the connection: no frame can follow.
    socket.on('end', () => this.destroy(new Error('the connection closed')));
    socket.on('close', () => this.destroy(new Error('the connection closed')));
    this.queue(PREFACE);
    this.queue(
      settingsFrame([
        [SETTINGS_ENABLE_PUSH, 0],
        [SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW],
      ]),
    );
    this.queue(windowUpdateFrame(0, CONNECTION_WINDOW - DEFAULT_WINDOW));
  }

  /** True once the connection ended: no stream can be opened, none is open. */
  get destroyed(): boolean {
    return this.ended;
  }

  /** True while new streams may be opened: ready, and no GOAWAY received. */
  get open(): boolean {
    return this.#ready && !this.#goingAway && !this.ended;
  }

  /** Streams open or waiting to open. */
  get streamCount(): number {
    return this.#streams.size + this.#waiting.length;
  }

  /**
   * Request octets the server has not taken: held for its windows or its concurrency limit, queued
   * for the socket or in the socket's buffer.
   */
  get bufferedRequestBytes(): number {
    return this.#held + this.unwrittenBytes - this.queuedAnswerBytes;
  }

  /** The server's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited until it says one). */
  get maxConcurrentStreams(): number {
    return this.peerMaxStreams;
  }

  /**
   * A new request stream on `path` with the call's own header `fields` (grpc-timeout, metadata),
   * the request `data` first sent on it, and `end` to half-close after it. It opens at once, or
   * once the server's concurrency limit lets it. Throws when the connection takes no new streams
   * (closed, or told to go away), and RequestBufferFullError when `data` would take the request
   * bytes the connection holds beyond maxBufferedRequestBytes.
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
    const refused = this.hold(stream, data);
    if (refused !== undefined) throw refused;
    stream.endQueued = end;
    if (this.#streams.size < this.peerMaxStreams && this.#waiting.length === 0) {
      this.#openStream(stream);
    } else this.#waiting.push(stream);
    return stream;
  }

  /** Sends a PING; `callback` runs with null on its ACK, or with the error that ended the wait. */
  ping(callback: (error: Error | null) => void): boolean {
    if (this.ended) return false;
    const payload = Buffer.allocUnsafe(8);
    const key = ++this.#pingCount;
    payload.writeBigUInt64BE(key);
    this.#pings.set(key, callback);
    this.queue(frameOf(FRAME_PING, 0, 0, payload));
    return true;
  }

  /** Keeps the process alive for the socket (while calls are open). */
  ref(): void {
    (this.duplex as { ref?: () => void }).ref?.();
  }

  unref(): void {
    (this.duplex as { unref?: () => void }).unref?.();
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
    if (this.ended) return;
    const socket = this.duplex;
    const out = this.takeOutput();
    if (last !== undefined) {
      out.push(last);
      const bytes = Buffer.concat(out);
      socket.end(bytes.length > 0 ? bytes : undefined, () => socket.destroy());
    } else socket.destroy();
    this.ended = true;
    this.stopTimers();
    this.#goingAway = true;
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

  /**
   * @internal Queues `data` on `stream`, counted against maxBufferedRequestBytes; returns the
   * error instead when it would go beyond (nothing is queued then). One request is always taken
   * while nothing is held, so a bound below one message does not refuse every call.
   */
  hold(stream: H2Stream, data: readonly Buffer[]): RequestBufferFullError | undefined {
    let bytes = 0;
    for (const chunk of data) bytes += chunk.length;
    const refused = refusal(this.bufferedRequestBytes, bytes, this.#maxBuffered);
    if (refused !== undefined) return refused;
    for (const chunk of data) if (chunk.length > 0) stream.queue.push(chunk);
    stream.queuedBytes += bytes;
    this.#held += bytes;
    return undefined;
  }

  /** What `stream` still queued is no longer held (the stream ended, or moves elsewhere). */
  #release(stream: H2Stream): void {
    this.#held -= stream.queuedBytes;
    stream.queuedBytes = 0;
  }

  /** @internal Sends what `stream` has queued, as far as the windows allow. */
  pump(stream: H2Stream): void {
    const queue = stream.queue;
    while (queue.length > 0) {
      const head = queue[0]!;
      const size = Math.min(head.length, stream.sendWindow, this.sendWindow, this.peerMaxFrame);
      if (size <= 0) {
        this.#blocked.add(stream);
        return;
      }
      if (size === head.length) queue.shift();
      else queue[0] = head.subarray(size);
      stream.queuedBytes -= size;
      this.#held -= size;
      stream.sendWindow -= size;
      this.take(size);
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
      this.#release(stream);
      return;
    }
    if (!this.ended) this.queue(rstStreamFrame(stream.id, code));
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
    stream.sendWindow = this.peerInitialWindow;
    this.#streams.set(stream.id, stream);
    const block = stream.block;
    // The common case, HEADERS and a request that fits the windows, in one buffer.
    const first = stream.queue[0];
    if (
      block.length <= this.peerMaxFrame &&
      first !== undefined &&
      stream.queue.length === 1 &&
      stream.endQueued &&
      first.length <= Math.min(stream.sendWindow, this.sendWindow, this.peerMaxFrame)
    ) {
      const out = Buffer.allocUnsafe(2 * FRAME_HEADER_BYTES + block.length + first.length);
      writeFrameHeader(out, 0, block.length, FRAME_HEADERS, FLAG_END_HEADERS, stream.id);
      block.copy(out, FRAME_HEADER_BYTES);
      const at = FRAME_HEADER_BYTES + block.length;
      writeFrameHeader(out, at, first.length, FRAME_DATA, FLAG_END_STREAM, stream.id);
      first.copy(out, at + FRAME_HEADER_BYTES);
      stream.queue.length = 0;
      this.#release(stream);
      stream.sendWindow -= first.length;
      this.take(first.length);
      stream.localEnded = true;
      this.queue(out);
      return;
    }
    for (const frame of headerFrames(
      { streamId: stream.id, endStream: false, priority: undefined },
      block,
      this.peerMaxFrame,
    )) {
      this.queue(frame);
    }
    this.pump(stream);
  }

  /** A DATA frame of `payload` on `streamId`. */
  #data(streamId: number, payload: Buffer, end: boolean): void {
    const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
    writeFrameHeader(header, 0, payload.length, FRAME_DATA, end ? FLAG_END_STREAM : 0, streamId);
    this.queue(header);
    if (payload.length > 0) this.queue(payload);
  }

  /** The stream is over on both sides (or reset): forgotten, and a waiting one may open. */
  #close(stream: H2Stream): void {
    if (stream.closed) return;
    stream.closed = true;
    this.#release(stream);
    this.#streams.delete(stream.id);
    this.#blocked.delete(stream);
    this.#openWaiting();
    // After a graceful GOAWAY, the connection ends with its last stream.
    if (this.#goingAway && this.streamCount === 0 && !this.ended) {
      this.#teardown(undefined, EMPTY);
    }
  }

  /** Opens waiting streams as far as the server's concurrency limit allows. */
  #openWaiting(): void {
    while (this.#waiting.length > 0 && this.#streams.size < this.peerMaxStreams) {
      this.#openStream(this.#waiting.shift()!);
    }
  }

  #drop(stream: H2Stream, error: Error, unsent: boolean): void {
    if (stream.closed) return;
    stream.closed = true;
    this.#release(stream);
    stream.deliver(() => stream.events.onDropped(error, unsent));
  }

  #goAway(): void {
    if (this.#goingAway) return;
    this.#goingAway = true;
    this.#events.onGoaway(NO_ERROR, this.#nextStreamId - 2, EMPTY);
  }

  // The connection core's reports.

  /** Tells the server why (GOAWAY with the error's code), then ends the connection. */
  protected connectionError(error: H2ProtocolError): void {
    // Last stream 0: a client accepts no server-initiated streams.
    this.#teardown(
      new Error(`HTTP/2 protocol error: ${error.message}`, { cause: error }),
      goawayFrame(0, error.code, error.debug),
    );
  }

  protected streamError(streamId: number, code: number): void {
    const stream = this.#streams.get(streamId);
    if (stream === undefined) return;
    this.reset(stream, code);
    stream.deliver(() => stream.events.onReset(code));
  }

  protected windowedStreams(): Iterable<H2Stream> {
    return this.#streams.values();
  }

  protected onData(streamId: number, data: Buffer, length: number, end: boolean): void {
    const stream = this.#streams.get(streamId);
    if (!stream || stream.remoteEnded) return;
    stream.receiveWindow -= length;
    if (stream.receiveWindow < 0) {
      this.streamError(streamId, FLOW_CONTROL_ERROR);
      return;
    }
    if (end) stream.remoteEnded = true;
    // Reported at once unless paused: no closure per frame on the path of every response.
    if (stream.reportsNow) this.#reportData(stream, data, length, end);
    else stream.deliver(() => this.#reportData(stream, data, length, end));
  }

  #reportData(stream: H2Stream, data: Buffer, length: number, end: boolean): void {
    if (data.length > 0) stream.events.onData(data);
    if (end) this.#remoteEnd(stream);
    else this.#consumed(stream, length);
  }

  /** `length` octets of `stream` were read: its window is given back once half is used. */
  #consumed(stream: H2Stream, length: number): void {
    stream.unacked += length;
    if (stream.closed || stream.remoteEnded || stream.unacked < STREAM_WINDOW / 2) return;
    this.queue(windowUpdateFrame(stream.id, stream.unacked));
    stream.receiveWindow += stream.unacked;
    stream.unacked = 0;
  }

  #remoteEnd(stream: H2Stream): void {
    if (stream.closed) return;
    stream.events.onEnd();
    if (stream.localEnded) this.#close(stream);
  }

  protected onHeaders(streamId: number, endStream: boolean, fields: HeaderField[]): void {
    const stream = this.#streams.get(streamId);
    if (!stream || stream.remoteEnded) return;
    const headers = headersOf(fields);
    if (endStream) stream.remoteEnded = true;
    if (stream.reportsNow) this.#reportHeaders(stream, headers, endStream);
    else stream.deliver(() => this.#reportHeaders(stream, headers, endStream));
  }

  #reportHeaders(stream: H2Stream, headers: IncomingHttpHeaders, endStream: boolean): void {
    stream.events.onHeaders(headers, endStream);
    if (endStream) this.#remoteEnd(stream);
  }

  protected onReset(streamId: number, code: number): void {
    const stream = this.#streams.get(streamId);
    if (!stream) return;
    this.#close(stream);
    stream.deliver(() => stream.events.onReset(code));
  }

  protected onSettings(_windowDelta: number, first: boolean): void {
    this.#unblock();
    this.#openWaiting();
    if (first) {
      this.#ready = true;
      this.#events.onReady();
    }
  }

  protected onPingAck(payload: Buffer): void {
    const key = payload.readBigUInt64BE(0);
    const callback = this.#pings.get(key);
    this.#pings.delete(key);
    callback?.(null);
  }

  protected onGoaway(lastStreamId: number, code: number, debug: Buffer): void {
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

  protected onConnectionWindow(): void {
    this.#unblock();
  }

  protected onStreamWindow(streamId: number, increment: number): void {
    const stream = this.#streams.get(streamId);
    if (!stream) return;
    stream.sendWindow += increment;
    if (increment === 0 || stream.sendWindow > MAX_WINDOW) {
      this.streamError(streamId, increment === 0 ? PROTOCOL_ERROR : FLOW_CONTROL_ERROR);
      return;
    }
    if (this.#blocked.has(stream)) this.pump(stream);
  }

  /** Streams waiting for window get what is there, in the order they started waiting. */
  #unblock(): void {
    for (const stream of [...this.#blocked]) {
      if (this.sendWindow <= 0) return;
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
