// The retry policy as a pure function: given how an attempt failed and what kind of call it was,
// decide whether to retry and which typed error the caller sees otherwise.
import {
  type EtcdError,
  fromTransportError,
  OutcomeUnknownError,
  WriteNotAppliedError,
} from '../errors.js';
import { GrpcStatus, type TransportError } from '../transport/types.js';
import type { RetryPolicy } from './types.js';

/** What to do after a failed attempt. */
export interface Verdict {
  /** Try again (within the retry budget). */
  readonly retry: boolean;
  /** The error to report if the call is not (or no longer) retried. */
  readonly error: EtcdError;
  /** The endpoint looks unusable (connection failure or Unavailable answer): fail over. */
  readonly endpointFailed: boolean;
  /**
   * A write reached a server and failed without a definite answer: it may have been applied. A
   * guarded write is still retried, but if it finally fails the caller must learn the outcome is
   * unknown, whatever the last attempt said.
   */
  readonly ambiguous: boolean;
  /**
   * Retry only on another endpoint, one this call has not tried: the failure (a protocol error)
   * would recur on a new connection to the same one.
   */
  readonly elsewhereOnly: boolean;
}

/**
 * Codes after which a write that reached a server may or may not have been applied. (Unavailable
 * covers both dropped connections and etcd's "request timed out" and "leader changed"; its "no
 * leader" is judged apart: it comes before anything is proposed.)
 */
const OUTCOME_UNKNOWN = new Set<GrpcStatus>([
  GrpcStatus.Unavailable,
  GrpcStatus.DeadlineExceeded,
  GrpcStatus.Internal,
  GrpcStatus.Unknown,
  GrpcStatus.Cancelled,
  GrpcStatus.DataLoss,
]);

/**
 * Refusals by the member reached, before it does anything, of a call another member can serve:
 * "no leader" (a require-leader call on a member cut off from its leader) and "rpc not supported
 * for learner" (anything but a serializable read or a status on a learner). Both come as
 * Unavailable; the call goes to another endpoint whatever its policy, since nothing was applied.
 */
const ANOTHER_MEMBER_MAY_SERVE = new Set<string>(['NO_LEADER', 'NOT_SUPPORTED_FOR_LEARNER']);

/**
 * etcd's refusals of a membership change (or a leadership transfer) by its checks before proposing
 * anything: the outcome is known, nothing changed. etcd sends the first as Unavailable and the
 * second as Unknown (its gRPC error mapping misses it), which would otherwise read as "may have been
 * applied"; retrying at once would meet the same members.
 */
const REFUSED_BEFORE_PROPOSAL = new Set<string>(['UNHEALTHY', 'MEMBER_NOT_ENOUGH_STARTED']);

/**
 * Applies the retry policy to one failed attempt:
 * - not processed by any server (no connection, never written, or a stream the server refused:
 *   REFUSED_STREAM, above a GOAWAY's last-stream-id), or refused with "etcdserver: no leader" or
 *   "rpc not supported for learner" (etcd refuses those before it does anything): retried for
 *   every policy, on another endpoint; a write given up on that way is a WriteNotAppliedError;
 * - an HTTP/2 protocol error: retried at once on an endpoint the call has not tried, never on the
 *   same one (a new connection would meet it again); a write sent before it, OutcomeUnknownError;
 * - Unavailable after send: `read` and `guarded-write` are retried, a `write` becomes
 *   OutcomeUnknownError;
 * - DeadlineExceeded, Internal, Unknown, Cancelled, DataLoss after send: never retried; for a
 *   `write` they become OutcomeUnknownError (cause: the typed error), otherwise the typed error;
 * - "unhealthy cluster" and "not enough started members", refused by etcd's reconfiguration checks
 *   before proposing: never retried, reported as is (the endpoint is fine, the cluster is not);
 * - anything else is an answer with a definite meaning (InvalidArgument, NotFound,
 *   FailedPrecondition, OutOfRange, PermissionDenied, ResourceExhausted...): reported as is.
 */
export function judge(failure: TransportError, policy: RetryPolicy): Verdict {
  const typed = fromTransportError(failure);
  const endpointFailed = failure.code === GrpcStatus.Unavailable || failure.protocolError;
  const elsewhereOnly = failure.protocolError;
  if (!failure.sent) {
    const retry = failure.code === GrpcStatus.Unavailable;
    return {
      retry,
      error: retry && policy !== 'read' ? notApplied(typed) : typed,
      endpointFailed,
      ambiguous: false,
      elsewhereOnly,
    };
  }
  if (ANOTHER_MEMBER_MAY_SERVE.has(typed.code)) {
    return { retry: true, error: typed, endpointFailed: true, ambiguous: false, elsewhereOnly };
  }
  if (REFUSED_BEFORE_PROPOSAL.has(typed.code)) {
    return { retry: false, error: typed, endpointFailed: false, ambiguous: false, elsewhereOnly };
  }
  const unknownOutcome = OUTCOME_UNKNOWN.has(failure.code) || failure.protocolError;
  const ambiguous = policy !== 'read' && unknownOutcome;
  if (policy === 'write' && unknownOutcome) {
    return {
      retry: false,
      error: outcomeUnknown(typed),
      endpointFailed,
      ambiguous,
      elsewhereOnly,
    };
  }
  if ((failure.code === GrpcStatus.Unavailable || elsewhereOnly) && policy !== 'write') {
    return { retry: true, error: typed, endpointFailed, ambiguous, elsewhereOnly };
  }
  return { retry: false, error: typed, endpointFailed, ambiguous, elsewhereOnly };
}

/** The write may have been applied; `cause` is why the client cannot tell. */
export function outcomeUnknown(cause: EtcdError): OutcomeUnknownError {
  return new OutcomeUnknownError({
    message: `the write may or may not have been applied: ${cause.message}`,
    metadata: cause.metadata,
    cause,
  });
}

/** The write was certainly not applied; `cause` is why it was not. */
export function notApplied(cause: EtcdError): WriteNotAppliedError {
  return new WriteNotAppliedError({
    message: `the write was not applied: ${cause.message}`,
    metadata: cause.metadata,
    cause,
  });
}

/**
 * What the owner of a long-lived stream (the watch, the lease keepalive, an observation) does after
 * it failed: open a new one, refresh the auth token first (once), or give up.
 */
export type StreamFailure = 'resume' | 'token' | 'permanent';

/** Failures a new stream would meet again: the client closed or the caller aborted, the caller's
 * own input, a method the server lacks, credentials refused. */
const PERMANENT_CODES = new Set<string>([
  'CLIENT_CLOSED',
  'ABORTED',
  'INVALID_ARGUMENT',
  'UNIMPLEMENTED',
  'AUTH_FAILED',
]);
const PERMANENT_STATUSES = new Set<GrpcStatus>([
  GrpcStatus.InvalidArgument,
  GrpcStatus.Unimplemented,
]);

/** Refusals a fresh token may cure (etcd 3.4 answers an expired token with "permission denied"). */
const TOKEN_CODES = new Set<string>([
  'INVALID_AUTH_TOKEN',
  'USER_EMPTY',
  'PERMISSION_DENIED',
  'AUTH_OLD_REVISION',
]);
const TOKEN_STATUSES = new Set<GrpcStatus>([
  GrpcStatus.PermissionDenied,
  GrpcStatus.Unauthenticated,
]);

/** The give-up predicate of every long-lived stream: how `error`, which ended one, is met. */
export function streamFailure(error: EtcdError): StreamFailure {
  if (PERMANENT_CODES.has(error.code)) return 'permanent';
  if (TOKEN_CODES.has(error.code) || TOKEN_STATUSES.has(error.grpcStatus)) return 'token';
  if (PERMANENT_STATUSES.has(error.grpcStatus)) return 'permanent';
  return 'resume';
}
