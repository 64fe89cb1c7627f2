// When CMD must be dead, from what the supervisor knows of its lease. The server counts a lease's
// TTL from when it handles a keepalive (or the grant), which is after the client sent it: so the
// lease lives at least until `sent + ttl`, on the server's clock. Two clocks and a watchdog's
// reaction stand between that and CMD's end, hence a margin: 10% of the TTL for the server's clock
// running faster than ours (far beyond any real drift, which is parts per million) and 250 ms for
// the watchdog's timer firing late and the kill taking effect.

/** Nanoseconds on the host's monotonic clock, shared by every process (CLOCK_MONOTONIC). */
export type MonotonicNs = bigint;

/** The monotonic clock, as the supervisor and its watchdog both read it. */
export function monotonicNow(): MonotonicNs {
  return process.hrtime.bigint();
}

/** Fixed part of the margin, in ms. */
const MARGIN_FIXED_MS = 250;
/** Part of the margin proportional to the TTL. */
const MARGIN_TTL_FRACTION = 0.1;

/** The margin kept between CMD's last moment and its lease's earliest expiry, in ms. */
export function killMarginMs(ttlMs: number): number {
  return MARGIN_FIXED_MS + ttlMs * MARGIN_TTL_FRACTION;
}

/**
 * The moment by which CMD must be dead, for a lease of `ttlMs` kept alive by a request sent at
 * `sentAt` (or granted by one).
 */
export function killDeadline(sentAt: MonotonicNs, ttlMs: number): MonotonicNs {
  return sentAt + BigInt(Math.floor((ttlMs - killMarginMs(ttlMs)) * 1e6));
}

/**
 * The default `--kill-grace` for a TTL: a sixth of it, at most 2 s, so that the watchdog's SIGTERM
 * still comes after the next keepalive (one every TTL/3) would have confirmed the lease.
 */
export function defaultKillGraceMs(ttlMs: number): number {
  return Math.min(2000, ttlMs / 6);
}

/**
 * Whether a grace fits a TTL: the watchdog sends SIGTERM at `deadline - grace`, which must come
 * later than the next keepalive's answer (TTL/3 after the last one, plus 250 ms for its round
 * trip), or a healthy supervisor's CMD would be stopped.
 */
export function graceFits(ttlMs: number, graceMs: number): boolean {
  return ttlMs - killMarginMs(ttlMs) - graceMs > ttlMs / 3 + 250;
}
