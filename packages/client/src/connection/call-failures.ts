// What a failed attempt means: retried or not, at once or after a backoff, the endpoint in backoff
// or not (the retry judge's verdict, with the token and ordering rules on top), and the errors the
// connection words itself.

import { etcdErrorVariants } from '../error-table.js';
import {
  DeadlineExceededError,
  OrderViolationError,
  RequestTooLargeError,
  toEtcdError,
} from '../errors.js';
import type { MethodDescriptor } from '../generated/methods.js';
import { GrpcStatus, TransportError } from '../transport/types.js';
import type { CallScope } from './call-scope.js';
import { AttemptFailure, type CallState, triedCount } from './call-state.js';
import type { EndpointPool, PooledEndpoint } from './endpoint-pool.js';
import { judge } from './retry.js';
import type { RetryPolicy } from './types.js';

/** Turns a failed attempt into an AttemptFailure under the retry policy. */
export function attemptFailure(
  pool: EndpointPool,
  authenticated: boolean,
  error: unknown,
  policy: RetryPolicy,
  scope: CallScope,
  state: CallState,
  endpoint: PooledEndpoint,
  token: string | undefined,
): AttemptFailure {
  if (scope.aborted) {
    // A write that left the client may be applied whatever stopped it: the retry loop then
    // reports the abort inside an OutcomeUnknownError.
    if (state.write && error instanceof TransportError && error.sent) state.ambiguous = true;
    return new AttemptFailure(scope.abortError(), false, false);
  }
  if (!(error instanceof TransportError)) {
    return new AttemptFailure(toEtcdError(error), false, false);
  }
  const verdict = judge(ownDeadline(error, scope), policy);
  if (verdict.ambiguous) state.ambiguous = true;
  if (
    authenticated &&
    !state.authRetried &&
    // Compared by code: the error classes are matched by message, possibly to a base class.
    (verdict.error.code === 'INVALID_AUTH_TOKEN' || verdict.error.code === 'USER_EMPTY')
  ) {
    // The server rejected the call before applying it: safe to retry once, even for writes.
    state.authRetried = true;
    state.staleToken = token ?? '';
    return new AttemptFailure(verdict.error, true, true);
  }
  if (verdict.endpointFailed) pool.failed(endpoint);
  const untried = triedCount(state) < pool.endpoints.length;
  // A protocol error is retried only where it has not been met yet.
  const retry = verdict.retry && (untried || !verdict.elsewhereOnly);
  return new AttemptFailure(verdict.error, retry, retry && verdict.endpointFailed && untried);
}

/**
 * A serializable read answered below the revision this client saw (`ordering`): the endpoint
 * lags. The retry goes at once to an endpoint this call has not tried (which becomes the current
 * one, as after a failure, but without a backoff: the member is healthy, only behind); once all
 * were tried, after a retry backoff to any but this one. Past the bound, OrderViolationError.
 */
export function staleAnswer(
  pool: EndpointPool,
  maxSwitches: number | undefined,
  floor: bigint,
  answered: bigint,
  state: CallState,
  endpoint: PooledEndpoint,
): AttemptFailure {
  const error = new OrderViolationError(floor, answered, endpoint.target);
  const count = pool.endpoints.length;
  const bound = maxSwitches ?? count;
  if (++state.violations > bound) return new AttemptFailure(error, false, false);
  const untried = triedCount(state) < count;
  // Every endpoint tried: start over, avoiding only the one that just answered stale.
  if (!untried) state.tried = new Set([endpoint]);
  return new AttemptFailure(error, true, untried);
}

/**
 * An open stream failed. When the failure says the endpoint cannot serve (Unavailable: a dropped
 * connection, or etcd's "no leader" from a member cut off from its leader, which also ends the
 * require-leader streams open on it), the endpoint goes into backoff as after a unary call, so
 * the stream's owner (the watch hub, the lease keeper) reopens it on the next endpoint instead of
 * the same member. The channel stays open: other calls on it are not disturbed.
 */
export function streamFailed(pool: EndpointPool, error: unknown, endpoint: PooledEndpoint): void {
  if (error instanceof TransportError && judge(error, 'read').endpointFailed) {
    pool.failed(endpoint);
  }
}

/**
 * etcd's refusal of a request over its --max-request-bytes, with the request's size: only the
 * failure path encodes the request again to tell it.
 */
export function tooLargeError<Req>(
  error: unknown,
  method: MethodDescriptor<Req, unknown>,
  request: Req,
): unknown {
  if (
    !(error instanceof RequestTooLargeError) ||
    error.message !== RequestTooLargeError.etcdMessage
  )
    return error;
  const bytes = method.request.encode(request).finish().byteLength;
  return new RequestTooLargeError({
    message:
      `${RequestTooLargeError.etcdMessage}: the server refused a request of ${bytes} bytes; ` +
      "etcd's limit is --max-request-bytes, 1.5 MiB by default",
    grpcStatus: error.grpcStatus,
    metadata: error.metadata,
    cause: error.cause,
  });
}

/**
 * A deadline error in the client's words: the method, the deadline it was given and, when the
 * deadline passed while connecting, the endpoint. `cause` keeps what the transport reported.
 */
export function deadlineError(
  error: DeadlineExceededError,
  method: string,
  scope: CallScope,
  state: CallState,
): DeadlineExceededError {
  // A DeadlineExceeded status without a deadline of ours is the server's: its words stay.
  if (!Number.isFinite(scope.timeoutMs)) return error;
  const where = state.connectingTo === undefined ? '' : ` (connecting to ${state.connectingTo})`;
  return new DeadlineExceededError({
    message: `deadline exceeded: ${method} got no answer within its ${scope.timeoutMs} ms deadline${where}`,
    grpcStatus: error.grpcStatus,
    metadata: error.metadata,
    cause: error.cause,
  });
}

/**
 * The failure as the caller's deadline explains it. etcd hands a handler's expired context to
 * gRPC as it is (Unknown "context deadline exceeded"): the Lock and Election services do when the
 * deadline the client sent (grpc-timeout) runs out on the server. On a busy client that answer can
 * be read before the client's own timer fires. Once the call's deadline has passed it is that
 * deadline's doing, so it is reported as DeadlineExceeded; before, it is etcd's own request
 * timeout (a proposal without a leader), as `toEtcdError` types it. So is a call never sent for
 * want of a connection, or cancelled by the server, once its deadline has passed.
 */
function ownDeadline(error: TransportError, scope: CallScope): TransportError {
  if (Date.now() < scope.deadline) return error;
  // The channel's wait for a connection ends at the call's deadline too, with Unavailable; on a
  // loaded client its timer can fire before the call's own.
  const unconnected = error.code === GrpcStatus.Unavailable && !error.sent;
  const proposalTimeout =
    error.code === GrpcStatus.Unknown &&
    error.details === etcdErrorVariants.PROPOSAL_TIMEOUT.message;
  // grpc-go's server resets a stream whose grpc-timeout ran out (RST_STREAM CANCEL, seen on etcd
  // 3.5's Lock service): that reset can be read before the client's own timer fires.
  const cancelledByServer = error.code === GrpcStatus.Cancelled;
  if (!unconnected && !proposalTimeout && !cancelledByServer) return error;
  return new TransportError({
    code: GrpcStatus.DeadlineExceeded,
    details: error.details,
    metadata: error.metadata,
    sent: error.sent,
    cause: error,
  });
}
