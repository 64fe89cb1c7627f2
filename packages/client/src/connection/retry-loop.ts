// A call's retry loop: attempts until one succeeds or a failure ends the call, the backoff between
// them, and the final error in the client's words.
import {
  DeadlineExceededError,
  OutcomeUnknownError,
  toEtcdError,
  UnavailableError,
} from '../errors.js';
import { backoffDelay } from '../transport/backoff.js';
import { deadlineError } from './call-failures.js';
import type { CallScope } from './call-scope.js';
import { AttemptFailure, type CallState } from './call-state.js';
import { callHook } from './hooks.js';
import type { ResolvedOptions } from './options.js';
import { notApplied, outcomeUnknown } from './retry.js';
import { sleep } from './sleep.js';

/** The random source of retries without `jitter`: a factor of exactly 1. */
const NO_JITTER = (): number => 0;

/**
 * Runs `attempt` until it succeeds or a failure ends the call: one that is not to be retried, the
 * budget spent (`maxAttempts` counts only the retries that wait), the call's deadline, an abort.
 * A retry after a failed endpoint (while another is untried) or a refused token goes at once and
 * spends nothing; any other waits `minDelayMs * 2^(retries spent)`, times a random factor in
 * [1, 2) with jitter, at most `maxDelayMs` and at most the time left.
 * An abort (the caller's signal, or close()) ends the call with AbortedError (ClientClosedError),
 * or, once an attempt of a write was sent, with OutcomeUnknownError caused by it.
 */
export async function retrying<T>(
  o: ResolvedOptions,
  label: string,
  scope: CallScope,
  state: CallState,
  attempt: () => Promise<T>,
): Promise<T> {
  const started = performance.now();
  const maxRetryTime = Number.isFinite(scope.deadline)
    ? Math.max(0, scope.deadline - Date.now())
    : Number.POSITIVE_INFINITY;
  try {
    for (let attemptNumber = 1; ; attemptNumber++) {
      if (scope.aborted) throw new AttemptFailure(scope.abortError(), false, false);
      let failure: AttemptFailure;
      try {
        state.attempts++;
        const response = await attempt();
        // A read answered as the call is aborted still ends as aborted; a write's answer is its
        // known outcome, which an abort cannot undo.
        if (scope.aborted && !state.write) {
          throw new AttemptFailure(scope.abortError(), false, false);
        }
        return response;
      } catch (error) {
        failure =
          error instanceof AttemptFailure
            ? error
            : new AttemptFailure(
                scope.aborted ? scope.abortError() : toEtcdError(error),
                false,
                false,
              );
      }
      if (!failure.retry) throw failure;
      const remainingMs = maxRetryTime - (performance.now() - started);
      if (remainingMs <= 0) throw failure;
      if (!failure.immediate) {
        if (state.consumed >= o.maxAttempts - 1) throw failure;
        state.consumed++;
      }
      const onRetry = o.hooks?.onRetry;
      if (onRetry) {
        callHook(onRetry, {
          method: label,
          attempt: attemptNumber,
          error: failure.error,
          endpoint: state.endpoint?.target,
        });
      }
      if (failure.immediate) continue;
      const delayMs = backoffDelay(
        state.consumed,
        { baseMs: o.minDelayMs, maxMs: o.maxDelayMs, jitter: 'above' },
        o.jitter ? Math.random : NO_JITTER,
      );
      const waitMs = Math.min(delayMs, remainingMs);
      if (waitMs > 0 && !scope.aborted) await sleep(waitMs, scope.signal);
    }
  } catch (error) {
    // Stopped by the caller or by close(): a write sent before is of unknown outcome, not aborted.
    if (scope.aborted)
      throw state.ambiguous ? outcomeUnknown(scope.abortError()) : scope.abortError();
    let final = error instanceof AttemptFailure ? error.error : toEtcdError(error);
    if (final instanceof DeadlineExceededError) final = deadlineError(final, label, scope, state);
    else if (final instanceof OutcomeUnknownError && final.cause instanceof DeadlineExceededError) {
      final = outcomeUnknown(deadlineError(final.cause, label, scope, state));
    }
    // A retried guarded write whose earlier attempt may have been applied: the last attempt's
    // error (say, a failed connection) would wrongly suggest that nothing was applied.
    if (state.ambiguous && !(final instanceof OutcomeUnknownError)) {
      throw outcomeUnknown(final);
    }
    // A write no server processed (no connection, or refused): it says so.
    if (state.write && final instanceof UnavailableError) throw notApplied(final);
    throw final;
  }
}
