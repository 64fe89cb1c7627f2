// Why a lease handle stopped vouching for its lease: the reason of `lease.signal`, of the `lost`
// event and of `lease.lost`.
import { EtcdError, type EtcdErrorInit } from '../errors.js';
import { GrpcStatus } from '../transport/types.js';

/**
 * Why a lease handle ended:
 * - `expired`: a keepalive reply said TTL 0: the server no longer knows the lease (it expired, or
 *   someone else revoked it). Its keys are gone.
 * - `timeout`: no keepalive reply arrived within the lease's TTL since the last successful refresh
 *   (the server is unreachable, or the connection is half-open). The lease may already have expired
 *   on the server; the client stopped refreshing it.
 * - `revoked`: `revoke()` (or `await using` disposal) was called on this handle.
 * - `released`: `release()` was called, or the keepalive's own signal aborted: the lease lives on
 *   until its TTL runs out, unless someone else keeps it alive.
 * - `client-closed`: the client was closed; the lease expires after its TTL.
 */
export type LeaseLostReason = 'expired' | 'timeout' | 'revoked' | 'released' | 'client-closed';

const STATUS: Readonly<Record<LeaseLostReason, GrpcStatus>> = {
  expired: GrpcStatus.NotFound,
  timeout: GrpcStatus.Unavailable,
  revoked: GrpcStatus.Cancelled,
  released: GrpcStatus.Cancelled,
  'client-closed': GrpcStatus.Cancelled,
};

/**
 * A lease handle no longer holds its lease. It is the reason of `lease.signal`, the value of
 * `lease.lost` and the argument of the `lost` event. `reason` says why; `cause` is the failure
 * behind a `timeout` (the last stream error, if any) or the ClientClosedError of `client-closed`.
 */
export class LeaseLostError extends EtcdError {
  /** The lease this handle held. */
  readonly leaseId: bigint;
  /** Why the handle ended. */
  readonly reason: LeaseLostReason;

  constructor(leaseId: bigint, reason: LeaseLostReason, init?: EtcdErrorInit) {
    super('LEASE_LOST', STATUS[reason], describe(leaseId, reason), init);
    this.leaseId = leaseId;
    this.reason = reason;
  }
}

function describe(id: bigint, reason: LeaseLostReason): string {
  const lease = `lease ${id.toString(16)}`;
  switch (reason) {
    case 'expired':
      return `${lease} is gone: the server reports TTL 0 (it expired or was revoked elsewhere)`;
    case 'timeout':
      return `${lease} may have expired: no keepalive reply arrived within its TTL`;
    case 'revoked':
      return `${lease} was revoked through this handle`;
    case 'released':
      return `${lease} is no longer kept alive by this client (released)`;
    case 'client-closed':
      return `the client was closed; ${lease} is no longer kept alive`;
  }
}
