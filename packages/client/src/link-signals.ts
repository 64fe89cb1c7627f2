// linkSignals: one signal for a call that must stop when any of several others aborts, without
// leaving anything on them once the call is over. Internal: not exported from the package.
/** A signal that follows others, and the way to stop following them. */
export interface LinkedSignal {
  /** Aborts, with the source's reason, when any source aborts (at once if one already has). */
  readonly signal: AbortSignal;
  /** Removes the listeners from the sources; the signal follows them no longer. Idempotent. */
  release(): void;
}

/**
 * Follows `sources` (undefined ones are skipped) with one plain `abort` listener each, until
 * {@link LinkedSignal.release} or the first abort. Call `release()` when the work that needed the
 * signal ends, on every path: a long-lived source then keeps nothing of it.
 *
 * `AbortSignal.any()` is not used for this: on Node 20 it leaves a registration on every source
 * until that source aborts (nodejs/node#55351), so a long-lived source (a session's, a server's)
 * grows by one entry per call.
 */
export function linkSignals(...sources: ReadonlyArray<AbortSignal | undefined>): LinkedSignal {
  const controller = new AbortController();
  const listening: Array<readonly [AbortSignal, () => void]> = [];
  const release = (): void => {
    for (const [source, listener] of listening) source.removeEventListener('abort', listener);
    listening.length = 0;
  };
  for (const source of sources) {
    if (source === undefined) continue;
    if (source.aborted) {
      release();
      controller.abort(source.reason);
      break;
    }
    const listener = (): void => {
      release();
      controller.abort(source.reason);
    };
    source.addEventListener('abort', listener, { once: true });
    listening.push([source, listener]);
  }
  return { signal: controller.signal, release };
}
