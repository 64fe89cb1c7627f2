// The pause between two STM attempts: exponential, fully jittered (conflicting transactions retry
// in lockstep otherwise), cancellable.
import { AbortedError } from '@etcdkit/client';
import { backoffDelay as clientBackoffDelay } from '@etcdkit/client/internal';

/** How long to wait between STM attempts. */
export interface StmBackoff {
  /** Upper bound of the first pause, in ms; each further retry doubles it. Default 5. */
  readonly minDelayMs?: number;
  /** Largest pause, in ms. Default 500. */
  readonly maxDelayMs?: number;
}

/** @internal */
export const DEFAULT_STM_BACKOFF: Required<StmBackoff> = { minDelayMs: 5, maxDelayMs: 500 };

/**
 * @internal The pause before retry number `retry` (1 for the first): uniformly random between 0
 * and min(maxDelayMs, minDelayMs * 2^(retry - 1)): the client's formula, fully jittered.
 */
export function backoffDelay(
  retry: number,
  backoff: Required<StmBackoff>,
  random: () => number = Math.random,
): number {
  const shape = { baseMs: backoff.minDelayMs, maxMs: backoff.maxDelayMs, jitter: 'full' } as const;
  return clientBackoffDelay(retry, shape, random);
}

/** @internal Waits `ms`; rejects with AbortedError as soon as `signal` aborts. No timer is left. */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(new AbortedError({ cause: signal.reason }));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError({ cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
