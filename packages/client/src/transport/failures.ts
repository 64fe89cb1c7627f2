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

/**
 * The server's SETTINGS allow no stream at all (MAX_CONCURRENT_STREAMS 0): the call fails unsent
 * at once rather than wait until its deadline, and is not retried on the same server.
 */
export function noStreamsAllowed(): TransportError {
  return new TransportError({
    code: GrpcStatus.Unavailable,
    details: 'the server allows no streams on its connection (SETTINGS_MAX_CONCURRENT_STREAMS = 0)',
    metadata: {},
    sent: false,
    protocolError: true,
  });
}

/** A Cancelled TransportError for an aborted signal; `cause` is the signal's reason. */
export function abortedFailure(signal: AbortSignal, sent: boolean): TransportError {
  return failure(GrpcStatus.Cancelled, 'the call was aborted', sent, signal.reason);
}

/** What writing to a bidirectional stream that has ended throws: Cancelled, and not sent. */
export function streamEndedFailure(): TransportError {
  return failure(GrpcStatus.Cancelled, 'the stream has ended', false);
}

/**
 * A request larger than the client's send limit (`maxCallSendMsgSize`), refused before sending.
 * Both numbers are the client's; etcd's own limit (--max-request-bytes) is only named.
 */
export function requestTooLargeFailure(
  bytes: number,
  limit: number,
  sent: boolean,
): TransportError {
  return failure(
    GrpcStatus.ResourceExhausted,
    `request too large: ${bytes} bytes exceed the client's send limit of ${limit} bytes ` +
      "(maxCallSendMsgSize); etcd's own limit is --max-request-bytes, 1.5 MiB by default",
    sent,
  );
}
