// Where an attempt goes: the endpoint picked for it, and the wait for its connection under the dial
// budget (each endpoint keeps one call waiting at most dialTimeoutMs in all, retries included).
import { ClientClosedError, DeadlineExceededError, toEtcdError } from '../errors.js';
import type { CallScope } from './call-scope.js';
import { AttemptFailure, type CallState, type PickedEndpoint, triedCount } from './call-state.js';
import type { EndpointPool } from './endpoint-pool.js';

/** Picks an endpoint and waits until its channel is connected (at most the dial timeout). */
export async function connect(
  pool: EndpointPool,
  dialTimeoutMs: number,
  scope: CallScope,
  state: CallState,
): Promise<PickedEndpoint> {
  const picked = pick(pool, scope, state);
  await ready(pool, dialTimeoutMs, scope, state, picked);
  return picked;
}

/** Picks the endpoint for the next attempt; its channel may not be connected yet. */
export function pick(pool: EndpointPool, scope: CallScope, state: CallState): PickedEndpoint {
  if (scope.aborted) throw new AttemptFailure(scope.abortError(), false, false);
  if (Date.now() >= scope.deadline) {
    throw new AttemptFailure(new DeadlineExceededError(), false, false);
  }
  state.connectingTo = undefined;
  // Most calls pick once: the set of endpoints tried is made on the second pick, from the first.
  if (state.tried === undefined && state.endpoint !== undefined) {
    state.tried = new Set([state.endpoint]);
  }
  let picked: PickedEndpoint;
  try {
    picked = pool.pick(state.tried);
  } catch {
    throw new AttemptFailure(new ClientClosedError(), false, false);
  }
  state.tried?.add(picked.endpoint);
  state.endpoint = picked.endpoint;
  return picked;
}

/** Waits until the picked endpoint's channel is connected (at most the dial timeout). */
export async function ready(
  pool: EndpointPool,
  dialTimeoutMs: number,
  scope: CallScope,
  state: CallState,
  picked: PickedEndpoint,
): Promise<void> {
  const { endpoint, channel } = picked;
  // Each endpoint may keep one call waiting for a connection for at most dialTimeoutMs in
  // total, retries included: a black hole costs the dial timeout once, not once per retry.
  state.dialWaited ??= new Map();
  const dialWaited = state.dialWaited;
  const waited = dialWaited.get(endpoint) ?? 0;
  const started = Date.now();
  const dialDeadline = started + Math.max(0, dialTimeoutMs - waited);
  const deadline = Math.min(dialDeadline, scope.deadline);
  try {
    await channel.ready(deadline, scope.signal);
  } catch (error) {
    pool.release(endpoint);
    dialWaited.set(endpoint, waited + (Date.now() - started));
    if (scope.aborted) throw new AttemptFailure(scope.abortError(), false, false);
    // Kept until the next pick: a deadline that passes before it passed while connecting.
    state.connectingTo = endpoint.target;
    if (deadline < dialDeadline && Date.now() >= scope.deadline) {
      throw new AttemptFailure(new DeadlineExceededError({ cause: error }), false, false);
    }
    pool.failed(endpoint);
    const typed = toEtcdError(error);
    const exhausted = pool.endpoints.every((e) => (dialWaited.get(e) ?? 0) >= dialTimeoutMs);
    if (exhausted) throw new AttemptFailure(typed, false, false);
    throw new AttemptFailure(typed, true, triedCount(state) < pool.endpoints.length);
  }
}
