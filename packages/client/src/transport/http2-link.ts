// One HTTP/2 connection of an Http2Channel, with the calls open on it and its keepalive pings.
import type { Goaway } from './goaway.js';

/**
 * What a link needs of its connection: a node:http2 session, or the h2 transport's own
 * H2Connection, which has the same surface.
 */
export interface LinkSession {
  readonly destroyed: boolean;
  destroy(error?: Error): void;
  /** Sends a PING; `callback` runs with its answer (or the error that ended the wait). */
  ping(callback: (error: Error | null) => void): boolean;
  ref(): void;
  unref(): void;
}

/** What the request bound reads of a call holding a node:http2 stream. */
interface HandedCall {
  readonly stream: { readonly writableLength: number } | undefined;
}

/**
 * The request bytes a connection's calls handed to their streams, and those calls. node:http2
 * keeps what the server has not taken (closed windows, a socket it does not read) in each stream's
 * writable buffer; the handed total, never less, spares summing them until it nears the bound.
 */
export class Handed {
  bytes = 0;
  readonly calls = new Set<HandedCall>();

  /** Request bytes node:http2 still holds for this connection's streams. */
  unsent(): number {
    let bytes = 0;
    for (const call of this.calls) bytes += call.stream?.writableLength ?? 0;
    return bytes;
  }
}

/**
 * One HTTP/2 connection of a channel, with its keepalive pings. Pings are sent only while calls
 * are open (etcd refuses pings on idle connections), one interval after the last answer; a ping
 * unanswered within the timeout destroys the connection, failing its calls with Unavailable.
 */
export class Link<S extends LinkSession = LinkSession> {
  readonly session: S;
  /** Calls with an HTTP/2 stream on this connection. */
  active = 0;
  /** The server's GOAWAY on this connection, once it said one: its calls' failures quote it. */
  goaway: Goaway | undefined;
  /** The request bytes its node:http2 calls handed (the h2 transport's connection counts its own). */
  readonly handed = new Handed();
  readonly #intervalMs: number;
  readonly #timeoutMs: number;
  #timer: NodeJS.Timeout | undefined;
  /** The interval passed while no call was open: ping as soon as one starts. */
  #due = false;

  constructor(session: S, intervalMs: number, timeoutMs: number) {
    this.session = session;
    this.#intervalMs = intervalMs;
    this.#timeoutMs = timeoutMs;
    this.#schedule();
  }

  callStarted(): void {
    if (this.active++ === 0) this.session.ref();
    if (this.#due) {
      this.#due = false;
      this.#ping();
    }
  }

  callEnded(): void {
    if (--this.active === 0 && !this.session.destroyed) this.session.unref();
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#due = false;
  }

  #schedule(): void {
    if (this.#intervalMs <= 0 || this.session.destroyed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.active > 0) this.#ping();
      else this.#due = true;
    }, this.#intervalMs);
    this.#timer.unref();
  }

  #ping(): void {
    if (this.session.destroyed) return;
    const lost = new Error(`keepalive ping not answered within ${this.#timeoutMs} ms`);
    this.#timer = setTimeout(() => this.session.destroy(lost), this.#timeoutMs);
    this.#timer.unref();
    try {
      const sent = this.session.ping((error) => {
        clearTimeout(this.#timer);
        this.#timer = undefined;
        if (error) this.session.destroy(error);
        else this.#schedule();
      });
      if (!sent) this.session.destroy(new Error('keepalive ping could not be sent'));
    } catch (error) {
      this.session.destroy(error as Error);
    }
  }
}
