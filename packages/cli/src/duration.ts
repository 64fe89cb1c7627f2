// Durations as etcdctl's flags take them (Go's `2s`, `1m30s`, `500ms`), and plain seconds as
// `--ttl 10` and the other flags counted in seconds take them (`1.5` allowed where it makes sense).
import { usageError } from './errors.js';

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const GO_DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
const GO_PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;

/** Parses a Go duration (`2s`, `1m30s`, `250ms`, or `0`) into ms; a usage error names the flag. */
export function parseDurationMs(flag: string, text: string): number {
  if (text === '0') return 0;
  if (!GO_DURATION.test(text)) {
    throw usageError(
      `--${flag}: ${JSON.stringify(text)} is not a duration (like 2s, 500ms, 1m30s)`,
    );
  }
  let total = 0;
  for (const [, amount, unit] of text.matchAll(GO_PART)) total += Number(amount) * UNITS[unit!]!;
  return total;
}

/**
 * Parses seconds: a plain number (`10`, `0.5`) or a Go duration (`10s`, `1m`), into ms. `whole`
 * requires whole seconds (lease TTLs are whole seconds).
 */
export function parseSecondsMs(flag: string, text: string, whole = false): number {
  const ms = /^\d+(?:\.\d+)?$/.test(text) ? Number(text) * 1000 : parseDurationMs(flag, text);
  if (whole && (ms % 1000 !== 0 || ms === 0)) {
    throw usageError(
      `--${flag}: ${JSON.stringify(text)} is not a whole, positive number of seconds`,
    );
  }
  return ms;
}
