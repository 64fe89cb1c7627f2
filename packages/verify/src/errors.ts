// Typed failures of @etcdkit/verify itself; the client's EtcdErrors reach the caller unchanged.
import { EtcdError, GrpcStatus } from '@etcdkit/client';

/**
 * Base class of the errors @etcdkit/verify reports itself. An EtcdError, so one `instanceof
 * EtcdError` covers everything etcdkit throws; `code` is stable across releases.
 */
export class VerifyError<C extends string = string> extends EtcdError<C> {
  /** `cause` is the failure behind this one, when there is one. */
  constructor(code: C, message: string, options?: { readonly cause?: unknown }) {
    super(code, GrpcStatus.FailedPrecondition, message, { cause: options?.cause });
  }
}

/**
 * The target asked for cannot be started here: for real etcd, the binary given (or `etcd` on
 * PATH) does not run `--version`.
 */
export class TargetUnavailableError extends VerifyError<'TARGET_UNAVAILABLE'> {
  /** The kind of target that was asked for. */
  readonly target: string;

  /** `target` is the kind of target asked for; `cause` the failure behind it, if any. */
  constructor(target: string, message: string, options?: { readonly cause?: unknown }) {
    super('TARGET_UNAVAILABLE', message, options);
    this.target = target;
  }
}

/** A fault was asked for that the target cannot suffer, in a workload that needs it. */
export class FaultUnavailableError extends VerifyError<'FAULT_UNAVAILABLE'> {
  /** The fault asked for. */
  readonly fault: string;

  /** `fault` is the fault asked for. */
  constructor(fault: string, message: string) {
    super('FAULT_UNAVAILABLE', message);
    this.fault = fault;
  }
}
