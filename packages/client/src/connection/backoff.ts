// Exponential backoff with jitter, for deciding when a failed endpoint may be tried again. (The
// delays between attempts of one call are the connection's retry loop's, in connection.ts.)

/** Shape of an exponential backoff. */
export interface BackoffOptions {
  /** Delay after the first failure, in ms. */
  readonly baseMs: number;
  /** Upper bound of any delay, in ms. */
  readonly maxMs: number;
  /** Growth per consecutive failure. Default 2. */
  readonly factor?: number;
  /** Spread delays over [delay/2, delay) so peers do not retry in lockstep. Default true. */
  readonly jitter?: boolean;
}

/**
 * Delay after `failures` consecutive failures (1 for the first): `baseMs * factor^(failures-1)`,
 * capped at `maxMs`, then jittered. Returns 0 for `failures <= 0`.
 */
export function backoffDelay(
  failures: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  if (failures <= 0) return 0;
  const factor = options.factor ?? 2;
  const raw = Math.min(options.maxMs, options.baseMs * factor ** Math.min(failures - 1, 64));
  if (options.jitter === false) return raw;
  return raw / 2 + random() * (raw / 2);
}
