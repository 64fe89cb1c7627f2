// What the callers of an Http2Channel get for a call: the promise of a unary call, and the server
// and bidirectional streams, whose responses are buffered (boundedly) in a ResponseQueue.

import type { ChannelCall, Sink, WireCall } from './channel-call.js';
import { failure, streamEndedFailure } from './failures.js';
import { ResponseQueue } from './response-queue.js';
import { type BidiStream, GrpcStatus, type ServerStream, type TransportError } from './types.js';

/** Responses buffered per stream before the HTTP/2 stream is paused (flow control applies). */
const HIGH_WATER_MARK = 16;

/** Makes a call of the method at hand on the channel, reporting to `sink`; not started yet. */
type NewCall<Req, Res> = (sink: Sink<Res>) => WireCall<Req>;
/** Starts a call on the channel. */
type OpenCall = (call: ChannelCall) => void;

function cancelledOnClient(sent: boolean): TransportError {
  return failure(GrpcStatus.Cancelled, 'Cancelled on client', sent);
}

/** Settles a unary call's promise: more or fewer than one response fails the call. */
class UnarySink<Res> implements Sink<Res> {
  /** The call reporting here, set as soon as it exists. */
  call: ChannelCall | undefined;
  #response: Res | undefined;
  #received = 0;
  readonly #resolve: (response: Res) => void;
  readonly #reject: (error: TransportError) => void;

  constructor(resolve: (response: Res) => void, reject: (error: TransportError) => void) {
    this.#resolve = resolve;
    this.#reject = reject;
  }

  push(response: Res): void {
    if (++this.#received > 1) {
      this.call?.abort(failure(GrpcStatus.Unimplemented, 'Too many responses received', true));
    } else this.#response = response;
  }

  end(error: TransportError | undefined): void {
    if (error) this.#reject(error);
    else if (this.#received === 0) {
      this.#reject(failure(GrpcStatus.Unimplemented, 'No message received', true));
    } else this.#resolve(this.#response as Res);
  }
}

/** One request, one response. */
export function unaryCall<Req, Res>(
  request: Req,
  newCall: NewCall<Req, Res>,
  open: OpenCall,
): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    // A sink object rather than closures: this runs for every call.
    const sink = new UnarySink<Res>(resolve, reject);
    const call = newCall(sink);
    sink.call = call;
    // The request is framed (and checked against the send limit) before any connection.
    call.write(request);
    call.end();
    open(call);
  });
}

/**
 * A call whose responses go to a ResponseQueue: the call is paused while HIGH_WATER_MARK responses
 * wait for the consumer; an iteration left early cancels the call.
 */
function queuedCall<Req, Res>(newCall: NewCall<Req, Res>) {
  let call: WireCall<Req> | undefined;
  const queue = new ResponseQueue<Res>(
    { pause: () => call?.pause(), resume: () => call?.resume() },
    () => {
      if (call && !call.done) call.abort(cancelledOnClient(call.sent));
    },
    HIGH_WATER_MARK,
  );
  call = newCall(queue);
  return { call, queue };
}

/** One request, a stream of responses. */
export function serverStreamCall<Req, Res>(
  request: Req,
  newCall: NewCall<Req, Res>,
  open: OpenCall,
): ServerStream<Res> {
  const { call, queue } = queuedCall(newCall);
  call.write(request);
  call.end();
  open(call);
  return {
    cancel: () => call.abort(cancelledOnClient(call.sent)),
    [Symbol.asyncIterator]: () => queue,
  };
}

/** A stream of requests (written until `end()`) and a stream of responses. */
export function bidiStreamCall<Req, Res>(
  newCall: NewCall<Req, Res>,
  open: OpenCall,
): BidiStream<Req, Res> {
  const { call, queue } = queuedCall(newCall);
  open(call);
  let ended = false;
  return {
    write: (request: Req) => {
      if (call.done || ended) throw streamEndedFailure();
      call.write(request);
    },
    end: () => {
      ended = true;
      call.end();
    },
    cancel: () => call.abort(cancelledOnClient(call.sent)),
    [Symbol.asyncIterator]: () => queue,
  };
}
