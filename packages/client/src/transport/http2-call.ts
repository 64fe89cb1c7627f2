// One call on an HTTP/2 stream: the request headers (path, deadline as grpc-timeout, metadata), the
// request and response message frames, the status from the trailers (or a trailers-only response,
// the HTTP status or the stream's reset code), and the local outcomes that win over the server's:
// deadline, abort (RST_STREAM CANCEL), message size limits, a dropped connection.
import * as http2 from 'node:http2';
import type { MethodDescriptor } from '../generated/methods.js';
import type { CallHost, Sink, WireCall } from './channel-call.js';
import { abortedFailure, failure, requestTooLargeFailure } from './failures.js';
import { FrameDecoder, type FrameError } from './grpc-frame.js';
import {
  encodeTimeout,
  isReservedHeader,
  type ReceivedStatus,
  responseMetadata,
  statusFromHeaders,
  statusFromHttp,
  statusFromReset,
} from './grpc-status.js';
import type { Link } from './http2-link.js';
import { encodeRequestFrame } from './request-frames.js';
import { decodeResponse } from './response-decoders.js';
import { type ChannelCallOptions, GrpcStatus, type Metadata, TransportError } from './types.js';

const { NGHTTP2_CANCEL, HTTP2_HEADER_STATUS } = http2.constants;
const USER_AGENT = 'etcdkit-http2';
const CONTENT_TYPE = 'application/grpc+proto';
const OK_STATUS = String(GrpcStatus.OK);
const NO_METADATA: Metadata = Object.freeze({});
/** The status of every OK call: its details and metadata are never read. */
const OK_RECEIVED: ReceivedStatus = Object.freeze({
  code: GrpcStatus.OK,
  details: '',
  metadata: NO_METADATA,
});
/** The pending frames of a call whose stream exists or that ended: nothing is ever added to it. */
const NO_FRAMES: Buffer[] = [];

/**
 * One call on an Http2Channel: waits for a connection, sends its request frames, decodes the
 * response frames and settles with the status from the trailers, or with a local failure
 * (deadline, abort, cancel, limits), which always wins over whatever the server still sends.
 */
export class Call<Req, Res> implements WireCall<Req, http2.ClientHttp2Session> {
  readonly #channel: CallHost<http2.ClientHttp2Session>;
  readonly #method: MethodDescriptor<Req, Res>;
  readonly #options: ChannelCallOptions;
  readonly #sink: Sink<Res>;
  readonly #decoder: FrameDecoder;
  readonly #maxSendBytes: number;
  #link: Link<http2.ClientHttp2Session> | undefined;
  #stream: http2.ClientHttp2Stream | undefined;
  #headers: http2.IncomingHttpHeaders | undefined;
  #status: ReceivedStatus | undefined;
  #streamError: Error | undefined;
  #watchingDeadline = false;
  /** Request frames written before the stream exists. */
  #pending: Buffer[] = [];
  #halfClosed = false;
  #done = false;
  /** Whether the channel may retry the stream's creation on a fresh connection once. */
  #restarts = 1;
  #watchingSignal = false;

  constructor(
    channel: CallHost<http2.ClientHttp2Session>,
    method: MethodDescriptor<Req, Res>,
    options: ChannelCallOptions,
    sink: Sink<Res>,
    maxReceiveBytes: number,
    maxSendBytes: number,
  ) {
    this.#channel = channel;
    this.#method = method;
    this.#options = options;
    this.#sink = sink;
    this.#decoder = new FrameDecoder(maxReceiveBytes);
    this.#maxSendBytes = maxSendBytes;
  }

  /** True once the request was handed to an HTTP/2 stream on a ready connection. */
  get sent(): boolean {
    return this.#stream !== undefined;
  }

  get done(): boolean {
    return this.#done;
  }

  /** Starts the call: checks signal and deadline, then asks the channel for a connection. */
  begin(): void {
    if (this.#done) return;
    const { signal, deadline } = this.#options;
    if (signal?.aborted) {
      this.#finish(abortedFailure(signal, false));
      return;
    }
    if (deadline !== undefined) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        this.#finish(failure(GrpcStatus.DeadlineExceeded, 'Deadline exceeded', false));
        return;
      }
      this.#channel.deadlines.add(this, deadline);
      this.#watchingDeadline = true;
    }
    if (signal) {
      this.#channel.aborts.add(signal, this);
      this.#watchingSignal = true;
    }
    this.#channel.acquire(this);
  }

  /** Frames and sends one request (queued until the stream exists). */
  write(request: Req): void {
    if (this.#done) return;
    let frame: Buffer;
    try {
      frame = encodeRequestFrame(this.#method, request);
    } catch (error) {
      this.abort(
        failure(GrpcStatus.Internal, 'Request message serialization failure', this.sent, error),
      );
      return;
    }
    if (frame.byteLength - 5 > this.#maxSendBytes) {
      this.abort(requestTooLargeFailure(frame.byteLength - 5, this.#maxSendBytes, this.sent));
      return;
    }
    if (this.#stream) this.#stream.write(frame);
    else this.#pending.push(frame);
  }

  /** Half-closes the request side. */
  end(): void {
    if (this.#halfClosed) return;
    this.#halfClosed = true;
    this.#stream?.end();
  }

  /** Ends the call now with `error`, resetting its stream (RST_STREAM CANCEL). */
  abort(error: TransportError): void {
    if (this.#done) return;
    this.#finish(error);
    const stream = this.#stream;
    if (stream && !stream.destroyed) {
      stream.close(NGHTTP2_CANCEL);
      // Drain what is buffered so the stream can close even while it was paused.
      stream.resume();
    }
  }

  /** Pauses reading responses (the consumer lags): HTTP/2 flow control holds the server back. */
  pause(): void {
    this.#stream?.pause();
  }

  resume(): void {
    this.#stream?.resume();
  }

  /** The channel has no connection for this call: it fails unsent. */
  fail(error: TransportError): void {
    this.#finish(error);
  }

  /** The channel has a ready connection: opens the HTTP/2 stream on it. */
  attach(link: Link<http2.ClientHttp2Session>): void {
    if (this.#done) return;
    const headers: http2.OutgoingHttpHeaders = {
      ':method': 'POST',
      ':path': this.#method.path,
      'content-type': CONTENT_TYPE,
      te: 'trailers',
      'user-agent': USER_AGENT,
    };
    const { deadline, metadata } = this.#options;
    if (deadline !== undefined) headers['grpc-timeout'] = encodeTimeout(deadline - Date.now());
    if (metadata) {
      for (const key in metadata) {
        const name = key.toLowerCase();
        if (!isReservedHeader(name)) headers[name] = metadata[key];
      }
    }
    let stream: http2.ClientHttp2Stream;
    try {
      // A POST keeps the request side open: node's default, so no options object to copy.
      stream = link.session.request(headers);
    } catch (error) {
      // The session closed under us (GOAWAY, drop) before the stream existed: nothing was sent.
      this.#channel.detach(link);
      if (this.#restarts-- > 0) {
        this.#channel.acquire(this);
        return;
      }
      this.#finish(
        failure(
          GrpcStatus.Unavailable,
          `Failed to start HTTP/2 stream: ${(error as Error).message}`,
          false,
          error,
        ),
      );
      return;
    }
    this.#link = link;
    this.#stream = stream;
    link.callStarted();
    stream.on('response', (h) => this.#onHeaders(h));
    stream.on('data', (chunk: Buffer) => this.#onData(chunk));
    stream.on('trailers', (t) => this.#onTrailers(t));
    stream.on('error', (error) => {
      this.#streamError ??= error;
    });
    stream.on('close', () => this.#onClose(stream, link));
    // A stream this side still writes to (a bidi stream) closes only after both sides ended: the
    // server's end (its status) must end the call at once, as the gRPC protocol says it does.
    if (!this.#halfClosed) stream.once('end', () => this.#onEnd(stream));
    const pending = this.#pending;
    this.#pending = NO_FRAMES;
    // A unary call's one frame goes with the end of the request side, in one write.
    if (this.#halfClosed && pending.length === 1) stream.end(pending[0]);
    else {
      for (const frame of pending) stream.write(frame);
      if (this.#halfClosed) stream.end();
    }
  }

  #onHeaders(headers: http2.IncomingHttpHeaders): void {
    this.#headers = headers;
    // A trailers-only response: the status is in the headers.
    if (headers['grpc-status'] === undefined) return;
    const status = statusFromHeaders(headers, responseMetadata(headers));
    if (status) this.#status = status;
  }

  #onTrailers(trailers: http2.IncomingHttpHeaders): void {
    // Response metadata only reaches callers in a failure: an OK call's is never collected.
    if (trailers['grpc-status'] === OK_STATUS) {
      this.#status = OK_RECEIVED;
      return;
    }
    const metadata = responseMetadata(this.#headers, trailers);
    this.#status = statusFromHeaders(trailers, metadata) ?? {
      code: GrpcStatus.Unknown,
      details: 'No status received',
      metadata,
    };
  }

  #onData(chunk: Buffer): void {
    if (this.#done) return;
    let messages: Buffer[];
    try {
      messages = this.#decoder.push(chunk);
    } catch (error) {
      const e = error as FrameError;
      this.abort(failure(e.code, e.message, true, e));
      return;
    }
    for (const bytes of messages) {
      let response: Res;
      try {
        response = decodeResponse(this.#method, bytes);
      } catch (error) {
        this.abort(failure(GrpcStatus.Internal, 'Failed to parse server response', true, error));
        return;
      }
      this.#sink.push(response);
      if (this.#done) return;
    }
  }

  /** The server ended its side (all its data was read): with a status, the call is over. */
  #onEnd(stream: http2.ClientHttp2Stream): void {
    const status = this.#status;
    if (this.#done || !status || stream.destroyed) return;
    this.#finish(
      status.code === GrpcStatus.OK ? undefined : new TransportError({ ...status, sent: true }),
    );
    // Our side may still be open: reset it, so the stream closes and its link counts it ended.
    stream.close(NGHTTP2_CANCEL);
  }

  #onClose(stream: http2.ClientHttp2Stream, link: Link<http2.ClientHttp2Session>): void {
    link.callEnded();
    if (this.#done) return;
    const status = this.#status;
    if (status) {
      this.#finish(
        status.code === GrpcStatus.OK ? undefined : new TransportError({ ...status, sent: true }),
      );
      return;
    }
    if (link.session.destroyed) {
      const reason = this.#streamError?.cause ?? this.#streamError;
      const why = reason instanceof Error && reason.message ? `: ${reason.message}` : '';
      this.#finish(failure(GrpcStatus.Unavailable, `Connection dropped${why}`, true, reason));
      return;
    }
    const http = Number(this.#headers?.[HTTP2_HEADER_STATUS] ?? 200);
    const mapped = http !== 200 ? statusFromHttp(http) : statusFromReset(stream.rstCode ?? 0);
    this.#finish(failure(mapped.code, mapped.details, true, this.#streamError));
  }

  #finish(error: TransportError | undefined): void {
    if (this.#done) return;
    this.#done = true;
    if (this.#watchingDeadline) this.#channel.deadlines.delete(this);
    if (this.#watchingSignal) this.#channel.aborts.delete(this.#options.signal!, this);
    this.#pending = NO_FRAMES;
    this.#channel.forget(this);
    this.#sink.end(error);
  }

  /** The connection this call's stream uses, if it has one. */
  get link(): Link<http2.ClientHttp2Session> | undefined {
    return this.#link;
  }
}
