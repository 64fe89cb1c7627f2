// The TransportErrors a transport raises itself, as opposed to the ones a server's status becomes.
// Both transports raise these the same way.
import { GrpcStatus, TransportError } from './types.js';

/** A TransportError decided on the client: no response metadata. */
export function failure(
  code: GrpcStatus,
  details: string,
  sent: boolean,
  cause?: unknown,
): TransportError {
  return new TransportError({ code, details, metadata: {}, sent, cause });
}

/** A Cancelled TransportError for an aborted signal; `cause` is the signal's reason. */
export function abortedFailure(signal: AbortSignal, sent: boolean): TransportError {
  return failure(GrpcStatus.Cancelled, 'the call was aborted', sent, signal.reason);
}

/** What writing to a bidirectional stream that has ended throws: Cancelled, and not sent. */
export function streamEndedFailure(): TransportError {
  return failure(GrpcStatus.Cancelled, 'the stream has ended', false);
}
