// One HTTP/2 stream of the server's own connection (connection.ts): what it still has to send and
// may not yet (its DATA waits for the peer's flow control windows, trailers wait behind the DATA),
// and what the connection tells its owner (the gRPC call) about the peer's side.
import {
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_DATA,
  FRAME_HEADER_BYTES,
  FRAME_HEADERS,
  headerFrames,
  NO_ERROR,
  rstStreamFrame,
  writeFrameHeader,
} from '@etcdkit/client/h2';
import type { ResponseBlock } from './response-headers.js';

/** Bytes queued on a stream beyond which `write` asks its caller to wait for a drain. */
export const STREAM_HIGH_WATER = 64 * 1024;

/** What the owner of a stream hears from the connection. */
export interface StreamSink {
  /** DATA payload (padding removed), in order. */
  streamData(chunk: Buffer): void;
  /** The peer ended its side (END_STREAM). */
  streamEnd(): void;
  /** The stream is gone before the owner ended it: RST_STREAM `code` or connection loss. */
  streamReset(code: number): void;
  /** The bytes queued fell below {@link STREAM_HIGH_WATER} after a write said to wait. */
  streamDrain(): void;
}

/** What a stream needs of its connection. */
export interface StreamLink {
  /** Queues a frame (or frame pieces) for the next socket write. */
  queue(bytes: Buffer): void;
  /** The octets of a header block about to be queued (in socket order: HPACK state is shared). */
  encodeBlock(block: ResponseBlock): Buffer;
  /** The connection's send window, in octets. */
  readonly sendWindow: number;
  /** Takes `n` octets of the connection's send window. */
  take(n: number): void;
  /** The peer's SETTINGS_MAX_FRAME_SIZE. */
  readonly maxFrame: number;
  /** The stream waits for the connection window to open. */
  blocked(stream: H2Stream): void;
  /** Octets held by streams, not yet framed, changed by `delta`. */
  unsent(delta: number): void;
  /** The stream is over: to be forgotten. */
  closed(stream: H2Stream): void;
  /** Gives back the stream's received octets with a WINDOW_UPDATE if they are due. */
  giveBack(stream: H2Stream): void;
}

/** One stream the peer opened, from the server's side. */
export class H2Stream {
  /** Set by whoever serves the stream, as soon as it is opened. */
  sink: StreamSink | undefined;
  /** Octets the peer lets this stream send. */
  sendWindow: number;
  /** Octets the peer may still send on this stream before a WINDOW_UPDATE. */
  receiveWindow: number;
  /** Octets received and not yet given back with a WINDOW_UPDATE. */
  unacknowledged = 0;
  /** The owner holds what it received: the window is not given back until it resumes. */
  receivePaused = false;
  /** The peer sent END_STREAM. */
  remoteEnded = false;
  /** This side sent END_STREAM (or reset the stream). */
  localEnded = false;
  /** Gone from the connection: nothing is sent or delivered any more. */
  closed = false;
  readonly #link: StreamLink;
  readonly #queue: Buffer[] = [];
  #queuedBytes = 0;
  /**
   * The trailers' header block, sent with END_STREAM once the queue is empty (encoded then: other
   * streams' blocks may go out first and change the peer's dynamic table).
   */
  #trailers: ResponseBlock | undefined;
  #wantsDrain = false;

  constructor(
    /** The stream identifier. */
    readonly id: number,
    link: StreamLink,
    sendWindow: number,
    receiveWindow: number,
  ) {
    this.#link = link;
    this.sendWindow = sendWindow;
    this.receiveWindow = receiveWindow;
  }

  /** Bytes written and not yet framed (waiting for a window). */
  get queuedBytes(): number {
    return this.#queuedBytes;
  }

  /** Sends a header block (the response headers; `endStream` for a trailers-only response). */
  respond(block: ResponseBlock, endStream: boolean): void {
    if (this.localEnded || this.closed) return;
    this.#sendBlock(block, endStream);
    if (endStream) this.#ended();
  }

  /**
   * Queues DATA; sent as far as the windows allow. False when the caller should wait for the
   * sink's drain before writing more (the bytes are queued all the same).
   */
  write(bytes: Buffer): boolean {
    if (this.localEnded || this.closed) return false;
    if (bytes.length > 0) {
      this.#queue.push(bytes);
      this.#queuedBytes += bytes.length;
      this.#link.unsent(bytes.length);
      this.pump();
    }
    const room = this.#queuedBytes < STREAM_HIGH_WATER;
    if (!room) this.#wantsDrain = true;
    return room;
  }

  /** Ends the stream with a trailers block, after everything written. */
  end(trailers: ResponseBlock): void {
    if (this.localEnded || this.closed || this.#trailers !== undefined) return;
    this.#trailers = trailers;
    this.pump();
  }

  /** Ends the stream at once with RST_STREAM `code`; what is queued is dropped. */
  reset(code: number): void {
    if (this.closed) return;
    this.#drop();
    this.#link.queue(rstStreamFrame(this.id, code));
    this.localEnded = true;
    this.#close();
  }

  /** The connection is done with this stream without a word to the peer (RST received, loss). */
  forget(code: number): void {
    if (this.closed) return;
    this.#drop();
    this.#close();
    this.sink?.streamReset(code);
  }

  /** Frames as much queued DATA as the windows allow, then the trailers if all is out. */
  pump(): void {
    const link = this.#link;
    while (this.#queue.length > 0) {
      const room = Math.min(this.sendWindow, link.sendWindow, link.maxFrame);
      if (room <= 0) {
        if (this.sendWindow > 0) link.blocked(this);
        break;
      }
      const first = this.#queue[0]!;
      const n = Math.min(room, first.length);
      const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
      writeFrameHeader(header, 0, n, FRAME_DATA, 0, this.id);
      link.queue(header);
      if (n === first.length) {
        this.#queue.shift();
        link.queue(first);
      } else {
        this.#queue[0] = first.subarray(n);
        link.queue(first.subarray(0, n));
      }
      this.#queuedBytes -= n;
      link.unsent(-n);
      this.sendWindow -= n;
      link.take(n);
    }
    if (this.#wantsDrain && this.#queuedBytes < STREAM_HIGH_WATER) {
      this.#wantsDrain = false;
      this.sink?.streamDrain();
    }
    if (this.#queue.length === 0 && this.#trailers !== undefined && !this.localEnded) {
      this.#sendBlock(this.#trailers, true);
      this.#trailers = undefined;
      this.#ended();
    }
  }

  /**
   * Stops giving back the receive window: a peer that keeps sending stops at the window's end,
   * which bounds what the owner holds meanwhile.
   */
  pauseReceive(): void {
    this.receivePaused = true;
  }

  /** Gives back what was withheld and goes on doing so as data comes. */
  resumeReceive(): void {
    if (!this.receivePaused) return;
    this.receivePaused = false;
    this.#link.giveBack(this);
  }

  /** The peer ended its side. */
  remoteEnd(): void {
    this.remoteEnded = true;
    if (this.localEnded) this.#close();
  }

  #sendBlock(response: ResponseBlock, endStream: boolean): void {
    const link = this.#link;
    const block = link.encodeBlock(response);
    if (block.length <= link.maxFrame) {
      // The usual case, without headerFrames' copies: one HEADERS frame.
      const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
      const flags = FLAG_END_HEADERS | (endStream ? FLAG_END_STREAM : 0);
      writeFrameHeader(header, 0, block.length, FRAME_HEADERS, flags, this.id);
      link.queue(header);
      link.queue(block);
      return;
    }
    for (const piece of headerFrames(
      { streamId: this.id, endStream, priority: undefined },
      block,
      this.#link.maxFrame,
    )) {
      this.#link.queue(piece);
    }
  }

  /** END_STREAM went out: a peer still sending is asked to stop without error (RFC 9113, 8.1). */
  #ended(): void {
    this.localEnded = true;
    if (!this.remoteEnded) this.#link.queue(rstStreamFrame(this.id, NO_ERROR));
    this.#close();
  }

  #drop(): void {
    this.#link.unsent(-this.#queuedBytes);
    this.#queue.length = 0;
    this.#queuedBytes = 0;
    this.#trailers = undefined;
  }

  #close(): void {
    if (this.closed) return;
    this.closed = true;
    this.#link.closed(this);
  }
}
