// etcd's Lock and Election services run etcd's own client on the server, whose errors reach the
// caller with status Unknown whatever they mean ("election: not leader", "etcdserver: requested
// lease not found"...). Under the `write` policy the connection must read Unknown after sending
// as "may have been applied" and reports OutcomeUnknownError. For these services, an Unknown that
// carries a known etcd message is the server's definite answer, so the caller gets that typed
// error instead. Messages that mean the server could not finish (leader changed, request timed
// out, server stopped...) stay OutcomeUnknownError: the write inside may have been applied.
import { EtcdError, OutcomeUnknownError, serverErrorClass } from '../errors.js';
import { GrpcStatus } from '../transport/types.js';

/** Statuses of known etcd errors after which a write may or may not have been applied. */
const UNFINISHED = new Set<GrpcStatus>([
  GrpcStatus.Unavailable,
  GrpcStatus.DeadlineExceeded,
  GrpcStatus.Internal,
  GrpcStatus.Cancelled,
  GrpcStatus.DataLoss,
]);

/** `call`, with an OutcomeUnknownError that wraps a definite server answer replaced by it. */
export async function withServiceAnswers<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    throw definiteAnswer(error) ?? error;
  }
}

function definiteAnswer(error: unknown): EtcdError | undefined {
  if (!(error instanceof OutcomeUnknownError)) return undefined;
  const { cause } = error;
  if (!(cause instanceof EtcdError) || cause.grpcStatus !== GrpcStatus.Unknown) return undefined;
  const known = serverErrorClass(cause.message);
  if (known === undefined || UNFINISHED.has(known.defaultStatus)) return undefined;
  return cause;
}
