// How much an AbortSignal holds for others: its 'abort' listeners, and the signals made by
// AbortSignal.any() that still follow it. A wait that is over should leave neither on a long-lived
// signal (a session's, a server's, a caller's).
import { getEventListeners } from 'node:events';

/**
 * The 'abort' listeners on `signal` plus the AbortSignal.any() signals that follow it.
 *
 * The second count reads Node's internal set of dependant signals (the `kDependantSignals` symbol
 * property, the observable of nodejs/node#55351); on Node 20 an entry stays there until the source
 * aborts, whether or not the dependant was collected, so the count is exact, not timing-dependent.
 */
export function abortRegistrations(signal: AbortSignal): number {
  return getEventListeners(signal, 'abort').length + dependantSignals(signal);
}

/** The size of Node's set of AbortSignal.any() signals following `signal` (0 when there is none). */
export function dependantSignals(signal: AbortSignal): number {
  const symbol = Object.getOwnPropertySymbols(signal).find(
    (s) => s.description === 'kDependantSignals',
  );
  if (symbol === undefined) return 0;
  // A set of Node's primordials: a Set, though not `instanceof` this realm's Set.
  const size: unknown = Reflect.get(Object(Reflect.get(signal, symbol)), 'size');
  return typeof size === 'number' ? size : 0;
}
