// The typed failures of runStm that are not etcd's own: giving up after repeated conflicts, and a
// transaction too large for one etcd txn.
import { EtcdError, GrpcStatus, TooManyTxnOpsError } from '@etcdkit/client';

/** Stable code of {@link StmConflictError}. */
export const STM_CONFLICT = 'STM_CONFLICT' as const;

/**
 * An STM transaction conflicted with concurrent writers on every attempt: `attempts` runs of
 * `apply` each found, at commit, that something it read (or, at `serializable-snapshot`, wrote)
 * had changed. Nothing was written. Code `STM_CONFLICT`. Raise `maxRetries`, or reduce contention
 * on the keys involved.
 */
export class StmConflictError extends EtcdError<typeof STM_CONFLICT> {
  /** How many times `apply` ran and its commit failed. */
  readonly attempts: number;

  /** @internal */
  constructor(attempts: number) {
    super(
      STM_CONFLICT,
      GrpcStatus.Aborted,
      `STM transaction gave up after ${attempts} conflicting attempts; nothing was written`,
    );
    this.attempts = attempts;
  }
}

/**
 * An STM commit would exceed etcd's limit of ops per txn side (`--max-txn-ops`, 128 by default):
 * too many keys written, or too many keys to validate (keys read, plus, at
 * `serializable-snapshot`, keys written without being read). Detected before anything is sent;
 * nothing was written. It is a {@link TooManyTxnOpsError} (code `TOO_MANY_TXN_OPS`), like the
 * server's own refusal. Split the work into smaller transactions.
 */
export class StmTooManyOpsError extends TooManyTxnOpsError {
  /** Keys the commit would write. */
  readonly writes: number;
  /** Compares the commit would send. */
  readonly compares: number;
  /** The limit that was applied (the `maxTxnOps` option). */
  readonly limit: number;

  /** @internal */
  constructor(writes: number, compares: number, limit: number) {
    super({
      message:
        `STM commit needs ${writes} writes and ${compares} compares, over the limit of ` +
        `${limit} per txn side; nothing was sent`,
    });
    this.writes = writes;
    this.compares = compares;
    this.limit = limit;
  }
}
