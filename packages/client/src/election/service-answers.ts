// Lock and Election send every error as status Unknown with etcd's message: a known message is the
// server's definite answer (a typed error), not an OutcomeUnknownError (docs/locks-and-fencing.md).
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
