// One call's bookkeeping across its attempts, and how an attempt ended: what the connection's call
// shapes, its retry loop, its dialling and its failure classification share.
import type { EtcdError } from '../errors.js';
import type { Channel } from '../transport/types.js';
import type { PooledEndpoint } from './endpoint-pool.js';

/** How one attempt ended, for the retry loop. */
export class AttemptFailure extends Error {
  constructor(
    readonly error: EtcdError,
    readonly retry: boolean,
    /** Retry at once without spending the budget (another endpoint, or a fresh auth token). */
    readonly immediate: boolean,
  ) {
    super(error.message);
  }
}

/** Per-call bookkeeping across attempts. */
export interface CallState {
  attempts: number;
  consumed: number;
  endpoint: PooledEndpoint | undefined;
  /**
   * The endpoints tried, made on the second pick (most calls pick once): until then the one tried,
   * if any, is {@link endpoint}.
   */
  tried: Set<PooledEndpoint> | undefined;
  /** Time this call spent waiting for each endpoint to connect, in ms; made on the first wait. */
  dialWaited: Map<PooledEndpoint, number> | undefined;
  /** Set when the server rejected this token: the next attempt refreshes it first. */
  staleToken: string | undefined;
  authRetried: boolean;
  /** The call writes: given up unprocessed, it says the write was not applied. */
  readonly write: boolean;
  /** An earlier attempt of this write may have been applied (see Verdict.ambiguous). */
  ambiguous: boolean;
  /** Stale answers this read got from the ordering guard's point of view. */
  violations: number;
  /** The endpoint the last attempt failed to connect to, until the next attempt picks one. */
  connectingTo?: string;
}

/** The state of a call (a write when `write`) before its first attempt. */
export function newState(write = false): CallState {
  return {
    write,
    attempts: 0,
    consumed: 0,
    endpoint: undefined,
    ambiguous: false,
    tried: undefined,
    dialWaited: undefined,
    staleToken: undefined,
    authRetried: false,
    violations: 0,
  };
}

/** How many endpoints the call has tried. */
export function triedCount(state: CallState): number {
  return state.tried?.size ?? (state.endpoint === undefined ? 0 : 1);
}

/** An endpoint picked for an attempt, and its channel. */
export interface PickedEndpoint {
  readonly endpoint: PooledEndpoint;
  readonly channel: Channel;
}
