// What a gRPC call does whichever HTTP/2 implementation carries it (node:http2 in http2-call.ts,
// the h2 transport's own in h2-call.ts): the deadline and abort watches, request framing and the
// send limit, response frames decoded into responses, the status from the response headers or
// trailers, and one outcome, the first, reported to the sink.
import { constants, type IncomingHttpHeaders } from 'node:http2';
import type { MethodDescriptor } from '../generated/methods.js';
import type { CallHost, Sink, WireCall } from './channel-call.js';
import { abortedFailure, failure, requestTooLargeFailure } from './failures.js';
import { type Goaway, isProtocolViolation } from './goaway.js';
import {
  encodeTimeout,
  isReservedHeader,
  type ReceivedStatus,
  responseMetadata,
  statusFromHeaders,
  statusFromHttp,
  statusFromReset,
} from './grpc-status.js';
import { type GrpcMessageError, MessageReader } from './h2/grpc-message.js';
import type { Link, LinkSession } from './http2-link.js';
import { encodeRequestFrame } from './request-frames.js';
import { decodeResponse } from './response-decoders.js';
import { type ChannelCallOptions, GrpcStatus, type Metadata, TransportError } from './types.js';

const { NGHTTP2_REFUSED_STREAM: REFUSED_STREAM } = constants;
const OK_STATUS = String(GrpcStatus.OK);
const NO_METADATA: Metadata = Object.freeze({});
/** The status of every OK call: its details and metadata are never read. */
const OK_RECEIVED: ReceivedStatus = Object.freeze({
  code: GrpcStatus.OK,
  details: '',
  metadata: NO_METADATA,
});
/** What a call does with its stream, alike on node:http2's streams and the h2 transport's. */
export interface CallStream {
  write(frame: Buffer): unknown;
  end(): unknown;
  pause(): unknown;
  resume(): unknown;
}

/** The pending frames of a call whose stream exists or that ended: nothing is ever added to it. */
export const NO_FRAMES: Buffer[] = [];

/**
 * A call's transport-independent half. A subclass opens the HTTP/2 stream (`attach`), shows it
 * (`stream`: frames are written, the request side ended and reading paused on it) and feeds back what the stream receives (`headersReceived`,
 * `trailersReceived`, `received`, `settleWith...`). A local failure (deadline, abort, cancel,
 * limits) always wins over whatever the server still sends.
 */
export abstract class CallBase<Req, Res, S extends LinkSession> implements WireCall<Req, S> {
  protected readonly channel: CallHost<S>;
  protected readonly method: MethodDescriptor<Req, Res>;
  protected readonly options: ChannelCallOptions;
  readonly #sink: Sink<Res>;
  readonly #decoder: MessageReader;
  readonly #maxSendBytes: number;
  /** The response headers, once received. */
  protected headers: IncomingHttpHeaders | undefined;
  /** The server's status, once received. */
  protected status: ReceivedStatus | undefined;
  /** Request frames written before the stream exists. */
  protected pending: Buffer[] = [];
  protected halfClosed = false;
  /** Whether the channel may retry the stream's creation on a fresh connection once. */
  protected restarts = 1;
  #watchingDeadline = false;
  #watchingSignal = false;
  #done = false;

  constructor(
    channel: CallHost<S>,
    method: MethodDescriptor<Req, Res>,
    options: ChannelCallOptions,
    sink: Sink<Res>,
    maxReceiveBytes: number,
    maxSendBytes: number,
  ) {
    this.channel = channel;
    this.method = method;
    this.options = options;
    this.#sink = sink;
    this.#decoder = new MessageReader(maxReceiveBytes);
    this.#maxSendBytes = maxSendBytes;
  }

  /** True once the request was handed to an HTTP/2 stream on a ready connection. */
  abstract get sent(): boolean;
  abstract attach(link: Link<S>): void;
  abstract abort(error: TransportError): void;
  /** The call's HTTP/2 stream, once it exists. */
  protected abstract get stream(): CallStream | undefined;

  /** Pauses reading responses (the consumer lags): HTTP/2 flow control holds the server back. */
  pause(): void {
    this.stream?.pause();
  }

  resume(): void {
    this.stream?.resume();
  }

  get done(): boolean {
    return this.#done;
  }

  /** Starts the call: checks signal and deadline, then asks the channel for a connection. */
  begin(): void {
    if (this.#done) return;
    const { signal, deadline, signalOutlivesCall, closingSignal } = this.options;
    if (signal?.aborted || closingSignal?.aborted) {
      this.finish(abortedFailure(signal?.aborted ? signal : closingSignal!, false));
      return;
    }
    if (deadline !== undefined) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        this.finish(failure(GrpcStatus.DeadlineExceeded, 'Deadline exceeded', false));
        return;
      }
      this.channel.deadlines.add(this, deadline);
      this.#watchingDeadline = true;
    }
    if (signal) this.channel.aborts.add(signal, this, signalOutlivesCall);
    // Shared by every call: its one listener stays between calls.
    if (closingSignal) this.channel.aborts.add(closingSignal, this, true);
    this.#watchingSignal = signal !== undefined || closingSignal !== undefined;
    this.channel.acquire(this);
  }

  /** Frames and sends one request (queued until the stream exists). */
  write(request: Req): void {
    if (this.#done) return;
    let frame: Buffer;
    try {
      frame = encodeRequestFrame(this.method, request);
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
    const stream = this.stream;
    if (stream) this.send(stream, frame);
    else this.pending.push(frame);
  }

  /** Writes `frame` on the open stream; a transport bounding what it holds may refuse it. */
  protected send(stream: CallStream, frame: Buffer): void {
    stream.write(frame);
  }

  /** Half-closes the request side. */
  end(): void {
    if (this.halfClosed) return;
    this.halfClosed = true;
    this.stream?.end();
  }

  /** The channel has no connection for this call: it fails unsent. */
  fail(error: TransportError): void {
    this.finish(error);
  }

  /**
   * The stream could not be created on `link` (the connection closed or was told to go away):
   * nothing was sent, so the call asks the channel for a connection again, once.
   */
  protected cannotStart(link: Link<S>, error: unknown): void {
    this.channel.detach(link);
    if (this.restarts-- > 0) {
      this.channel.acquire(this);
      return;
    }
    this.finish(
      failure(
        GrpcStatus.Unavailable,
        `Failed to start HTTP/2 stream: ${(error as Error).message}`,
        false,
        error,
      ),
    );
  }

  /** The gRPC headers of the request: the deadline as grpc-timeout, then the metadata. */
  protected requestFields(): Array<[string, string]> {
    const fields: Array<[string, string]> = [];
    const { deadline, metadata } = this.options;
    if (deadline !== undefined) fields.push(['grpc-timeout', encodeTimeout(deadline - Date.now())]);
    if (metadata) {
      for (const key in metadata) {
        const name = key.toLowerCase();
        if (!isReservedHeader(name)) fields.push([name, metadata[key]!]);
      }
    }
    return fields;
  }

  /** The response headers; a trailers-only response carries the status in them. */
  protected headersReceived(headers: IncomingHttpHeaders): void {
    this.headers = headers;
    if (headers['grpc-status'] === undefined) return;
    const status = statusFromHeaders(headers, responseMetadata(headers));
    if (status) this.status = status;
  }

  protected trailersReceived(trailers: IncomingHttpHeaders): void {
    // Response metadata only reaches callers in a failure: an OK call's is never collected.
    if (trailers['grpc-status'] === OK_STATUS) {
      this.status = OK_RECEIVED;
      return;
    }
    const metadata = responseMetadata(this.headers, trailers);
    this.status = statusFromHeaders(trailers, metadata) ?? {
      code: GrpcStatus.Unknown,
      details: 'No status received',
      metadata,
    };
  }

  /** DATA of the response: the messages it completes go to the sink. */
  protected received(chunk: Buffer): void {
    if (this.#done) return;
    let messages: Buffer[];
    try {
      messages = this.#decoder.push(chunk);
    } catch (error) {
      const e = error as GrpcMessageError;
      this.abort(failure(e.code, e.message, true, e));
      return;
    }
    for (const bytes of messages) {
      let response: Res;
      try {
        response = decodeResponse(this.method, bytes);
      } catch (error) {
        this.abort(failure(GrpcStatus.Internal, 'Failed to parse server response', true, error));
        return;
      }
      this.#sink.push(response);
      if (this.#done) return;
    }
  }

  /** Ends the call with the server's status; false when none was received. */
  protected settleWithStatus(): boolean {
    const status = this.status;
    if (!status) return false;
    this.finish(
      status.code === GrpcStatus.OK ? undefined : new TransportError({ ...status, sent: true }),
    );
    return true;
  }

  /**
   * Ends a call whose stream closed without a status: by the HTTP status of a response that is not
   * gRPC's, or by the stream's reset code. A stream refused before any answer (REFUSED_STREAM, as
   * a reset or for being above the last-stream-id of the server's `goaway`) was not processed
   * (RFC 9113, 8.7): it fails unsent, so even a write may be retried.
   */
  protected settleWithoutStatus(rstCode: number, cause: unknown, goaway?: Goaway): void {
    const http = Number(this.headers?.[':status'] ?? 200);
    const mapped = http !== 200 ? statusFromHttp(http) : statusFromReset(rstCode);
    const refused = this.headers === undefined && rstCode === REFUSED_STREAM;
    const said = refused ? goaway : undefined;
    this.finish(
      new TransportError({
        code: mapped.code,
        details: said ? `${mapped.details} (${said.text})` : mapped.details,
        metadata: NO_METADATA,
        sent: !refused,
        protocolError: said?.protocolError,
        cause: said ? new Error(said.text, { cause }) : cause,
      }),
    );
  }

  /**
   * The connection went away under an open stream: Unavailable, sent. `goaway`, when the server
   * said one, tells why in its words; a broken protocol is flagged so it is not retried there.
   */
  protected settleDropped(reason: unknown, goaway?: Goaway): void {
    const lost = reason instanceof Error ? reason.message : '';
    const why = goaway ? `${lost || 'the connection closed'} (after ${goaway.text})` : lost;
    const protocolError = goaway?.protocolError ?? isProtocolViolation(reason);
    this.finish(
      new TransportError({
        code: GrpcStatus.Unavailable,
        details: why ? `Connection dropped: ${why}` : 'Connection dropped',
        metadata: NO_METADATA,
        sent: true,
        protocolError,
        cause: goaway ? new Error(goaway.text, { cause: reason }) : reason,
      }),
    );
  }

  protected finish(error: TransportError | undefined): void {
    if (this.#done) return;
    this.#done = true;
    if (this.#watchingDeadline) this.channel.deadlines.delete(this);
    if (this.#watchingSignal) {
      const { signal, closingSignal } = this.options;
      if (signal) this.channel.aborts.delete(signal, this);
      if (closingSignal) this.channel.aborts.delete(closingSignal, this);
    }
    this.pending = NO_FRAMES;
    this.channel.forget(this);
    this.#sink.end(error);
  }
}
