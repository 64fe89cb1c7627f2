// The bound every transport puts on request bytes its server has not taken (closed flow-control
// windows, a socket it does not read): beyond it a call fails at once, unsent, instead of buffering
// without end. Each transport measures what it can see; the refusal reads alike on all of them.
import { InvalidConfigError } from '../errors.js';
import { failure } from './failures.js';
import { GrpcStatus, type TransportError } from './types.js';

/**
 * The default of `maxBufferedRequestBytes`: 64 MiB, the server role's bound on answers held for
 * windows, about 40 requests of etcd's largest (1.5 MiB).
 */
export const DEFAULT_MAX_BUFFERED_REQUEST_BYTES = 64 * 1024 * 1024;

/**
 * A request refused because the connection already holds as many request bytes as it may
 * (`maxBufferedRequestBytes`): the server is not taking what was sent (closed windows, a socket
 * it does not read). Nothing of the refused request was written.
 */
export class RequestBufferFullError extends Error {
  constructor(
    /** Request octets the connection held. */
    readonly buffered: number,
    /** Octets of the refused request. */
    readonly bytes: number,
    /** The bound, maxBufferedRequestBytes. */
    readonly limit: number,
  ) {
    super(
      `the server is not taking this connection's requests: ${buffered} bytes wait for its ` +
        `flow-control window or its reads, and ${bytes} more would exceed the client's bound of ` +
        `${limit} (maxBufferedRequestBytes)`,
    );
    this.name = 'RequestBufferFullError';
  }
}

/**
 * The refusal of `bytes` more while `buffered` are held, or undefined when they fit. One request
 * is always taken while nothing is held, so a bound below one message does not refuse every call.
 */
export function refusal(
  buffered: number,
  bytes: number,
  limit: number,
): RequestBufferFullError | undefined {
  if (buffered > 0 && buffered + bytes > limit) {
    return new RequestBufferFullError(buffered, bytes, limit);
  }
  return undefined;
}

/**
 * The connection holds as many request bytes as it may: Unavailable (this server is not taking
 * requests; another endpoint may), unsent when the refused request never reached a stream.
 */
export function bufferFull(error: RequestBufferFullError, sent: boolean): TransportError {
  return failure(GrpcStatus.Unavailable, error.message, sent, error);
}

/** A transport's `maxBufferedRequestBytes` option, checked: its value or the default. */
export function requestBound(bound: number | undefined): number {
  if (bound === undefined) return DEFAULT_MAX_BUFFERED_REQUEST_BYTES;
  if (!(Number.isSafeInteger(bound) && bound > 0)) {
    throw new InvalidConfigError(
      `maxBufferedRequestBytes must be a positive integer number of bytes, got ${String(bound)}`,
    );
  }
  return bound;
}
