// Exponential backoff with jitter: the one formula of the SDK's waits, when a channel reconnects,
// when a failed endpoint may be tried again, between the attempts of a call, before a stream is
// reopened, between two STM attempts of the recipes. In transport/ so every layer may use it.

/** Shape of an exponential backoff. */
export interface BackoffOptions {
  /** Delay after the first failure, in ms. */
  readonly baseMs: number;
  /** Upper bound of any delay, in ms. */
  readonly maxMs: number;
  /** Growth per consecutive failure. Default 2. */
  readonly factor?: number;
  /**
   * How delays are spread so peers do not retry in lockstep. `true` (default): over
   * [delay/2, delay), once capped. `'above'`: the delay times `1 + random()`, a factor in [1, 2),
   * then capped and rounded to whole ms (a call's retries, as `RetryOptions.jitter` documents).
   * `'full'`: uniform over [0, delay), once capped (the recipes' STM retries: conflicting
   * transactions would otherwise retry in lockstep). `false`: not at all.
   */
  readonly jitter?: boolean | 'above' | 'full';
}

/**
 * Delay, in ms, after `failures` consecutive failures (1 for the first): `baseMs * factor^(failures-1)`,
 * capped at `maxMs` and jittered as `options.jitter` says. Returns 0 for `failures <= 0`.
 * `random` (default `Math.random`, values in [0, 1)) draws the jitter.
 *
 * @example
 * ```ts
 * backoffDelay(3, { baseMs: 100, maxMs: 1_000, jitter: false }); // 400
 * ```
 */
export function backoffDelay(
  failures: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  if (failures <= 0) return 0;
  const factor = options.factor ?? 2;
  const grown = options.baseMs * factor ** Math.min(failures - 1, 64);
  if (options.jitter === 'above') {
    return Math.min(Math.round((random() + 1) * grown), options.maxMs);
  }
  const raw = Math.min(options.maxMs, grown);
  if (options.jitter === false) return raw;
  if (options.jitter === 'full') return random() * raw;
  return raw / 2 + random() * (raw / 2);
}
