// One HTTP/1.x connection on the client port: requests one after another (pipelined ones too),
// each answered before the next is read. Every resource a peer could grow is bounded: the head
// it may send, the time it may take to send it, how long it may idle between requests, and the
// answers it may leave unread (reading stops until they drain).
import type { Socket } from 'node:net';
import { encodeAnswer, type HttpAnswer, statusText } from './answer.js';
import { headEnd, isFault, parseHead, type RequestHead } from './request-head.js';

/** Limits of one connection. */
export interface Http1Limits {
  /** The largest request head, request line included; beyond it: 431 and close. */
  readonly maxHeadBytes: number;
  /** How long a request head may take to arrive once it has begun. */
  readonly headTimeoutMs: number;
  /** How long a connection may wait for its next request. */
  readonly idleTimeoutMs: number;
  /** Answers written but not yet read by the peer beyond which reading stops until they drain. */
  readonly maxUnreadBytes: number;
  /** How long answers past {@link maxUnreadBytes} may stay unread before the connection is dropped. */
  readonly unreadTimeoutMs: number;
  /** The largest request body skipped to serve the next request; a larger one ends the connection. */
  readonly maxDiscardBytes: number;
}

/**
 * The defaults. Go's server (etcd's) accepts a 1 MiB head and sets no timeouts; a health check
 * needs a few hundred octets and answers at once, so these are far tighter.
 */
export const DEFAULT_HTTP1_LIMITS: Http1Limits = {
  maxHeadBytes: 64 * 1024,
  headTimeoutMs: 30_000,
  idleTimeoutMs: 120_000,
  maxUnreadBytes: 1024 * 1024,
  unreadTimeoutMs: 120_000,
  maxDiscardBytes: 256 * 1024,
};

/** Answers one request. */
export type Http1Handler = (head: RequestHead) => HttpAnswer;

/** Serves HTTP/1.x on `socket`, starting with the octets already read from it. */
export class Http1Connection {
  readonly #socket: Socket;
  readonly #handler: Http1Handler;
  readonly #limits: Http1Limits;
  #pending: Buffer;
  /** Body octets of the last request still to skip. */
  #discard = 0;
  #ended = false;
  #timer: NodeJS.Timeout | undefined;
  /** What the timer bounds: the wait for a request, the arrival of one begun, or unread answers. */
  #timing: 'idle' | 'head' | 'unread' | undefined;

  constructor(socket: Socket, handler: Http1Handler, limits: Http1Limits, first: Buffer) {
    this.#socket = socket;
    this.#handler = handler;
    this.#limits = limits;
    this.#pending = first;
    socket.on('data', (chunk: Buffer) => {
      this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
      this.#serve();
    });
    socket.on('drain', () => {
      if (this.#ended) return;
      this.#clearTimer();
      socket.resume();
      this.#serve();
    });
    socket.on('close', () => this.#stop());
    this.#serve();
  }

  #serve(): void {
    while (!this.#ended) {
      if (this.#discard > 0) {
        const skipped = Math.min(this.#discard, this.#pending.length);
        this.#discard -= skipped;
        this.#pending = this.#pending.subarray(skipped);
        if (this.#discard > 0) break;
      }
      // Past the socket's high-water mark too, so that a 'drain' is sure to come.
      const unread = Math.max(this.#limits.maxUnreadBytes, this.#socket.writableHighWaterMark);
      if (this.#socket.writableLength > unread) {
        // Resumed on 'drain': a peer that never reads holds at most this much of our answers,
        // and not for ever.
        this.#socket.pause();
        this.#clearTimer();
        this.#timing = 'unread';
        this.#timer = setTimeout(() => this.#socket.destroy(), this.#limits.unreadTimeoutMs);
        this.#timer.unref();
        return;
      }
      const end = headEnd(this.#pending);
      if (end < 0) {
        if (this.#pending.length > this.#limits.maxHeadBytes) this.#fail(431);
        break;
      }
      if (end > this.#limits.maxHeadBytes) {
        this.#fail(431);
        return;
      }
      const text = this.#pending.subarray(0, end).toString('latin1');
      this.#pending = this.#pending.subarray(end);
      this.#answer(text);
    }
    this.#arm();
  }

  #answer(text: string): void {
    const head = parseHead(text);
    if (isFault(head)) {
      if (head.answer) this.#fail(400, head.fault);
      else this.#end();
      return;
    }
    // A body too large to skip, or of unknown length: answer, then end the connection.
    const close = head.close || head.chunked || head.bodyBytes > this.#limits.maxDiscardBytes;
    const answer = this.#handler(head);
    this.#socket.write(
      encodeAnswer(answer, {
        version: head.version,
        close,
        headOnly: head.method === 'HEAD',
        now: new Date(),
      }),
    );
    // The next request gets its own head limit.
    this.#clearTimer();
    if (close) this.#end();
    else this.#discard = head.bodyBytes;
  }

  /**
   * Go's answer to a request it cannot read, then the end: the status line carries the detail
   * ("400 Bad Request: missing required Host header") and the body repeats it, with no Date.
   */
  #fail(status: number, detail?: string): void {
    const reason = detail === undefined ? statusText(status) : `${statusText(status)}: ${detail}`;
    this.#socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
        `Connection: close\r\n\r\n${status} ${reason}`,
    );
    this.#end();
  }

  /** Ends the connection once what was written is flushed, reading nothing more. */
  #end(): void {
    this.#ended = true;
    this.#pending = Buffer.alloc(0);
    this.#clearTimer();
    this.#socket.pause();
    this.#socket.end();
    // A peer that never reads our last answer must not hold the socket open.
    this.#timer = setTimeout(() => this.#socket.destroy(), this.#limits.headTimeoutMs);
    this.#timer.unref();
  }

  /** Waiting for a request: the idle limit when nothing of it came yet, else the head limit. */
  #arm(): void {
    if (this.#ended) return;
    const timing = this.#pending.length > 0 || this.#discard > 0 ? 'head' : 'idle';
    if (timing === this.#timing) return;
    this.#clearTimer();
    this.#timing = timing;
    const ms = timing === 'head' ? this.#limits.headTimeoutMs : this.#limits.idleTimeoutMs;
    this.#timer = setTimeout(() => this.#socket.destroy(), ms);
    this.#timer.unref();
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timing = undefined;
  }

  #stop(): void {
    this.#ended = true;
    this.#clearTimer();
    this.#pending = Buffer.alloc(0);
  }
}
