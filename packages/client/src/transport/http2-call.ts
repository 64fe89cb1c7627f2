// One call on a node:http2 stream: the request headers (path, deadline as grpc-timeout, metadata),
// the request and response message frames, the status from the trailers (or a trailers-only
// response, the HTTP status or the stream's reset code), and the local outcomes that win over the
// server's: deadline, abort (RST_STREAM CANCEL), message size limits, a dropped connection, the
// bound on request bytes the server has not taken. What does not depend on node:http2 is in
// call-base.ts.
import * as http2 from 'node:http2';
import type { MethodDescriptor } from '../generated/methods.js';
import { CallBase, NO_FRAMES } from './call-base.js';
import type { CallHost, Sink } from './channel-call.js';
import { failure, noStreamsAllowed } from './failures.js';
import type { Handed, Link } from './http2-link.js';
import { bufferFull, type RequestBufferFullError, refusal } from './request-bound.js';
import { type ChannelCallOptions, GrpcStatus, type TransportError } from './types.js';

const { NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM } = http2.constants;
const USER_AGENT = 'etcdkit-http2';
const CONTENT_TYPE = 'application/grpc+proto';

type Session = http2.ClientHttp2Session;

/**
 * One call on an Http2Channel over node:http2: waits for a connection, sends its request frames,
 * decodes the response frames and settles with the status from the trailers, or with a local
 * failure (deadline, abort, cancel, limits), which always wins over whatever the server still sends.
 */
export class Call<Req, Res> extends CallBase<Req, Res, Session> {
  #link: Link<Session> | undefined;
  #stream: http2.ClientHttp2Stream | undefined;
  #streamError: (Error & { code?: string }) | undefined;
  readonly #maxBuffered: number;
  /** The session's handed request bytes, this call's among them once its stream exists. */
  #handed: Handed | undefined;
  /** Request bytes this call handed to its stream. */
  #handedBytes = 0;

  constructor(
    channel: CallHost<Session>,
    method: MethodDescriptor<Req, Res>,
    options: ChannelCallOptions,
    sink: Sink<Res>,
    maxReceiveBytes: number,
    maxSendBytes: number,
    maxBufferedRequestBytes: number,
  ) {
    super(channel, method, options, sink, maxReceiveBytes, maxSendBytes);
    this.#maxBuffered = maxBufferedRequestBytes;
  }

  get sent(): boolean {
    return this.#stream !== undefined;
  }

  /** @internal The call's HTTP/2 stream, once it exists. */
  get stream(): http2.ClientHttp2Stream | undefined {
    return this.#stream;
  }

  /** Ends the call now with `error`, resetting its stream (RST_STREAM CANCEL). */
  abort(error: TransportError): void {
    if (this.done) return;
    this.finish(error);
    const stream = this.#stream;
    if (stream && !stream.destroyed) {
      stream.close(NGHTTP2_CANCEL);
      // Drain what is buffered so the stream can close even while it was paused.
      stream.resume();
    }
  }

  /** The channel has a ready connection: opens the HTTP/2 stream on it. */
  attach(link: Link<Session>): void {
    if (this.done) return;
    // A server that allows no streams at all would hold the call until its deadline.
    if (link.session.remoteSettings?.maxConcurrentStreams === 0) {
      this.fail(noStreamsAllowed());
      return;
    }
    const headers: http2.OutgoingHttpHeaders = {
      ':method': 'POST',
      ':path': this.method.path,
      'content-type': CONTENT_TYPE,
      te: 'trailers',
      'user-agent': USER_AGENT,
    };
    for (const [name, value] of this.requestFields()) headers[name] = value;
    const handed = link.handed;
    let bytes = 0;
    for (const frame of this.pending) bytes += frame.length;
    const refused = this.#refusal(handed, bytes);
    if (refused !== undefined) {
      this.finish(bufferFull(refused, false));
      return;
    }
    let stream: http2.ClientHttp2Stream;
    try {
      // A POST keeps the request side open: node's default, so no options object to copy.
      stream = link.session.request(headers);
    } catch (error) {
      // The session closed under us (GOAWAY, drop) before the stream existed: nothing was sent.
      this.cannotStart(link, error);
      return;
    }
    this.#link = link;
    this.#stream = stream;
    this.#handed = handed;
    this.#handedBytes = bytes;
    handed.bytes += bytes;
    handed.calls.add(this);
    link.callStarted();
    stream.on('response', (h) => this.headersReceived(h));
    stream.on('data', (chunk: Buffer) => this.received(chunk));
    stream.on('trailers', (t) => this.trailersReceived(t));
    stream.on('error', (error) => {
      this.#streamError ??= error;
    });
    stream.on('close', () => this.#onClose(stream, link));
    // A stream this side still writes to (a bidi stream) closes only after both sides ended: the
    // server's end (its status) must end the call at once, as the gRPC protocol says it does.
    if (!this.halfClosed) stream.once('end', () => this.#onEnd(stream));
    const pending = this.pending;
    this.pending = NO_FRAMES;
    // A unary call's one frame goes with the end of the request side, in one write.
    if (this.halfClosed && pending.length === 1) stream.end(pending[0]);
    else {
      for (const frame of pending) stream.write(frame);
      if (this.halfClosed) stream.end();
    }
  }

  /** A write on the open stream: refused, ending the call, beyond the request bound. */
  protected override send(stream: http2.ClientHttp2Stream, frame: Buffer): void {
    const handed = this.#handed!;
    const refused = this.#refusal(handed, frame.length);
    if (refused !== undefined) {
      this.abort(bufferFull(refused, true));
      return;
    }
    handed.bytes += frame.length;
    this.#handedBytes += frame.length;
    stream.write(frame);
  }

  /** Whether `bytes` more would take what the session holds unsent beyond the bound. */
  #refusal(handed: Handed, bytes: number): RequestBufferFullError | undefined {
    if (handed.bytes + bytes <= this.#maxBuffered) return undefined;
    return refusal(handed.unsent(), bytes, this.#maxBuffered);
  }

  /** The server ended its side (all its data was read): with a status, the call is over. */
  #onEnd(stream: http2.ClientHttp2Stream): void {
    if (this.done || !this.status || stream.destroyed) return;
    this.settleWithStatus();
    // Our side may still be open: reset it, so the stream closes and its link counts it ended.
    stream.close(NGHTTP2_CANCEL);
  }

  #onClose(stream: http2.ClientHttp2Stream, link: Link<Session>): void {
    link.callEnded();
    const handed = this.#handed!;
    handed.bytes -= this.#handedBytes;
    handed.calls.delete(this);
    if (this.done || this.settleWithStatus()) return;
    const rstCode = stream.rstCode ?? 0;
    if (stream.id === undefined || this.#streamError?.code === 'ERR_HTTP2_GOAWAY_SESSION') {
      // node:http2 never handed the stream to the connection (no id), or refused to after a
      // GOAWAY: nothing of the request was written.
      const why = link.goaway?.text ?? this.#streamError?.message ?? 'the connection closed';
      this.finish(failure(GrpcStatus.Unavailable, `Failed to start HTTP/2 stream: ${why}`, false));
      return;
    }
    // Above the GOAWAY's last stream: refused, even when node:http2 destroyed the session (a
    // GOAWAY with an error code) before nghttp2 closed the stream as REFUSED_STREAM.
    const goaway = link.goaway;
    const refused =
      rstCode === NGHTTP2_REFUSED_STREAM || stream.id > (goaway?.lastStreamId ?? stream.id);
    if (link.session.destroyed && !refused) {
      this.settleDropped(this.#streamError?.cause ?? this.#streamError, goaway);
      return;
    }
    this.settleWithoutStatus(refused ? NGHTTP2_REFUSED_STREAM : rstCode, this.#streamError, goaway);
  }

  /** The connection this call's stream uses, if it has one. */
  get link(): Link<Session> | undefined {
    return this.#link;
  }
}
