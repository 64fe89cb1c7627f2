// One call on a stream of the h2 transport's own HTTP/2 connection (h2-connection.ts): the stream's
// events become the call's status and responses as call-base.ts reads them, with the outcomes
// node:http2's streams give the http2 transport (http2-call.ts), so failures classify alike.
import type { IncomingHttpHeaders } from 'node:http2';
import { CallBase, NO_FRAMES } from './call-base.js';
import { failure, noStreamsAllowed } from './failures.js';
import { CANCEL, NO_ERROR } from './h2/frames.js';
import type { H2Connection, H2Stream, H2StreamEvents } from './h2-connection.js';
import type { Link } from './http2-link.js';
import { bufferFull, RequestBufferFullError } from './request-bound.js';
import { GrpcStatus, type TransportError } from './types.js';

/** One call of an h2 channel; it is its stream's listener. */
export class H2Call<Req, Res> extends CallBase<Req, Res, H2Connection> implements H2StreamEvents {
  #link: Link<H2Connection> | undefined;
  #stream: H2Stream | undefined;
  #headersSeen = false;

  /** True once the stream's HEADERS were written: a stream queued by the server's limit is not. */
  get sent(): boolean {
    return this.#stream?.opened ?? false;
  }

  protected get stream(): H2Stream | undefined {
    return this.#stream;
  }

  /** Ends the call now with `error`, resetting its stream (RST_STREAM CANCEL). */
  abort(error: TransportError): void {
    if (this.done) return;
    this.finish(error);
    this.#stream?.cancel(CANCEL);
    this.#ended();
  }

  /** The channel has a ready connection: opens the stream, the request frames on it. */
  attach(link: Link<H2Connection>): void {
    if (this.done) return;
    let stream: H2Stream;
    try {
      stream = link.session.request(
        this.method.path,
        this.requestFields(),
        this,
        this.pending,
        this.halfClosed,
      );
    } catch (error) {
      if (error instanceof RequestBufferFullError) this.finish(bufferFull(error, false));
      else this.cannotStart(link, error);
      return;
    }
    this.pending = NO_FRAMES;
    this.#link = link;
    this.#stream = stream;
    link.callStarted();
    // A server that allows no streams at all would hold the call until its deadline.
    if (!stream.opened && link.session.maxConcurrentStreams === 0) this.abort(noStreamsAllowed());
  }

  onHeaders(headers: IncomingHttpHeaders): void {
    if (this.#headersSeen) this.trailersReceived(headers);
    else {
      this.#headersSeen = true;
      this.headersReceived(headers);
    }
  }

  onData(chunk: Buffer): void {
    this.received(chunk);
  }

  /** The server ended its side: the call is over, with its status or without one. */
  onEnd(): void {
    const stream = this.#stream!;
    // Our side may still be open (a bidi stream): the server's status ends it, as gRPC says.
    if (!stream.localEnded) stream.cancel(CANCEL);
    this.#ended();
    if (this.done || this.settleWithStatus()) return;
    this.settleWithoutStatus(NO_ERROR, undefined);
  }

  onReset(code: number): void {
    const goaway = this.#link?.goaway;
    this.#ended();
    if (this.done || this.settleWithStatus()) return;
    this.settleWithoutStatus(code, undefined, goaway);
  }

  onDropped(error: Error, unsent: boolean): void {
    const goaway = this.#link?.goaway;
    this.#ended();
    if (this.done || this.settleWithStatus()) return;
    if (!unsent) {
      this.settleDropped(error, goaway);
      return;
    }
    // The stream never left the client: the call may go to another connection.
    const stream = this.#stream!;
    this.#stream = undefined;
    this.pending = [...stream.queue];
    if (this.restarts-- > 0) this.channel.acquire(this);
    else {
      this.finish(
        failure(GrpcStatus.Unavailable, `Failed to start HTTP/2 stream: ${error.message}`, false),
      );
    }
  }

  /** A write on the open stream went beyond the connection's request bound: the call fails. */
  onRefused(error: RequestBufferFullError): void {
    this.#ended();
    this.finish(bufferFull(error, true));
  }

  /** The link counts the call's stream as ended, once. */
  #ended(): void {
    const link = this.#link;
    this.#link = undefined;
    link?.callEnded();
  }
}
