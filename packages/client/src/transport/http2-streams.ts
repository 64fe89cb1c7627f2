// What the callers of an Http2Channel get for a call: the promise of a unary call, and the server
// and bidirectional streams, whose responses are buffered (boundedly) in a ResponseQueue.
import { failure, streamEndedFailure } from './failures.js';
import type { Call, ChannelCall, Sink } from './http2-call.js';
import { ResponseQueue } from './response-queue.js';
import { type BidiStream, GrpcStatus, type ServerStream, type TransportError } from './types.js';

/** Responses buffered per stream before the HTTP/2 stream is paused (flow control applies). */
const HIGH_WATER_MARK = 16;

/** Makes a call of the method at hand on the channel, reporting to `sink`; not started yet. */
type NewCall<Req, Res> = (sink: Sink<Res>) => Call<Req, Res>;
/** Starts a call on the channel. */
type OpenCall = (call: ChannelCall) => void;

function cancelledOnClient(sent: boolean): TransportError {
  return failure(GrpcStatus.Cancelled, 'Cancelled on client', sent);
}

/** One request, one response: more or fewer than one response fails the call. */
export function unaryCall<Req, Res>(
  request: Req,
  newCall: NewCall<Req, Res>,
  open: OpenCall,
): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    let response: Res | undefined;
    let received = 0;
    const call = newCall({
      push: (res) => {
        if (++received > 1) {
          call.abort(failure(GrpcStatus.Unimplemented, 'Too many responses received', true));
        } else response = res;
      },
      end: (error) => {
        if (error) reject(error);
        else if (received === 0)
          reject(failure(GrpcStatus.Unimplemented, 'No message received', true));
        else resolve(response as Res);
      },
    });
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
  let call: Call<Req, Res> | undefined;
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
