// What a kept-alive lease reports: its events, the observability hooks, and the keepalive options.
import type { LeaseLostError } from './lease-lost.js';

/** One successful keepalive: the `keepalive` event of a lease and the `onLeaseKeepAlive` hook. */
export interface LeaseKeepAliveEvent {
  /** The lease refreshed. */
  readonly leaseId: bigint;
  /** The TTL the server reported, in seconds: the lease now lives at least that long. */
  readonly ttl: bigint;
  /** From sending the keepalive request to receiving its reply, in ms. */
  readonly roundTripMs: number;
  /**
   * How long the lease still had when the reply arrived, in ms, by the client's conservative count
   * (TTL from the send time of the previous answered keepalive). Around two thirds of the TTL when
   * healthy; near 0 means the lease almost expired.
   */
  readonly marginMs: number;
}

/** Events of a `Lease` handle (an eventemitter3 emitter). */
export interface LeaseEvents {
  /** A keepalive reply refreshed the lease. */
  keepalive: [event: LeaseKeepAliveEvent];
  /** The handle stopped holding the lease; `error.reason` says why. Emitted once. */
  lost: [error: LeaseLostError];
}

/**
 * Lease observability callbacks, part of the client's `hooks`. Each is optional and costs nothing
 * when absent; exceptions they throw are ignored.
 */
export interface LeaseHooks {
  /** After every keepalive reply of a kept-alive lease: round trip and TTL margin. */
  readonly onLeaseKeepAlive?: (event: LeaseKeepAliveEvent) => void;
  /**
   * When a lease handle ends, for any reason (`error.reason`): `expired` and `timeout` are the
   * losses worth alerting on; `revoked`, `released` and `client-closed` are deliberate.
   */
  readonly onLeaseLost?: (error: LeaseLostError) => void;
}

/** Options of `lease.keepAlive()`. */
export interface LeaseKeepAliveOptions {
  /** Stops keeping the lease alive when it aborts, like `lease.release()` (no revoke). */
  readonly signal?: AbortSignal;
}
