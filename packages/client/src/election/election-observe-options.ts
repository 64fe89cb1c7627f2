// The options of a resuming ElectionClient.observe(), checked once when observe() is called, as the
// settings the observation runs with.
import type { BackoffOptions } from '../connection/backoff.js';
import { type EtcdError, InvalidArgumentError } from '../errors.js';
import type { ObserveCallOptions } from './election.js';
import type { ElectionHooks, ObserveResumed } from './election-observe-events.js';

/**
 * Default pause before reopening a broken Observe stream: 50-100 ms after a stream that had
 * answered, doubling (jittered) while reopening fails, up to 5 s. `minReconnectDelayMs` and
 * `maxReconnectDelayMs` of observe() replace `baseMs` and `maxMs`.
 */
const OBSERVE_REOPEN_BACKOFF = { baseMs: 100, maxMs: 5_000 } as const;

/** @internal How a resuming observation behaves, as ElectionClient.observe validated it. */
export interface ObserveSettings {
  /** Pause before a reopen: `baseMs` after a stream that answered, doubling while reopens fail. */
  readonly backoff: BackoffOptions;
  /** Interval of the liveness check in ms; undefined: no check (and no timer). */
  readonly leaderCheckIntervalMs: number | undefined;
  /** The observation's own callbacks. */
  readonly onDisconnected: ((error: EtcdError) => void) | undefined;
  readonly onResumed: ((resumed: ObserveResumed) => void) | undefined;
  /** The client's hooks. */
  readonly hooks: ElectionHooks | undefined;
}

/** @internal The settings of an observe() without options. */
export const DEFAULT_OBSERVE_SETTINGS: ObserveSettings = {
  backoff: OBSERVE_REOPEN_BACKOFF,
  leaderCheckIntervalMs: undefined,
  onDisconnected: undefined,
  onResumed: undefined,
  hooks: undefined,
};

/** Options a resuming observation takes and a single stream does not. */
const RESUMING_OPTIONS = [
  'minReconnectDelayMs',
  'maxReconnectDelayMs',
  'leaderCheckIntervalMs',
  'onDisconnected',
  'onResumed',
] as const;

/** @internal The settings of `observe(name, o)`; throws InvalidArgumentError on bad options. */
export function observeSettings(
  o: Partial<ObserveCallOptions>,
  resume: boolean,
  hooks: ElectionHooks | undefined,
): ObserveSettings {
  if (!resume) {
    const given = RESUMING_OPTIONS.find((key) => o[key] !== undefined);
    if (given !== undefined) {
      throw new InvalidArgumentError(`options.${given} applies only to a resuming observation`);
    }
    return DEFAULT_OBSERVE_SETTINGS;
  }
  const baseMs = durationArg(o.minReconnectDelayMs, 'options.minReconnectDelayMs');
  const maxMs = durationArg(o.maxReconnectDelayMs, 'options.maxReconnectDelayMs');
  const backoff = {
    baseMs:
      baseMs ?? Math.min(OBSERVE_REOPEN_BACKOFF.baseMs, maxMs ?? OBSERVE_REOPEN_BACKOFF.maxMs),
    maxMs: maxMs ?? Math.max(OBSERVE_REOPEN_BACKOFF.maxMs, baseMs ?? 0),
  };
  if (backoff.baseMs > backoff.maxMs) {
    throw new InvalidArgumentError(
      `options.minReconnectDelayMs (${backoff.baseMs}) must not exceed options.maxReconnectDelayMs (${backoff.maxMs})`,
    );
  }
  return {
    backoff,
    leaderCheckIntervalMs: durationArg(o.leaderCheckIntervalMs, 'options.leaderCheckIntervalMs'),
    onDisconnected: functionArg(o.onDisconnected, 'options.onDisconnected'),
    onResumed: functionArg(o.onResumed, 'options.onResumed'),
    hooks,
  };
}

/** A positive, finite number of ms, or undefined. */
function durationArg(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value;
  throw new InvalidArgumentError(`${name} must be a positive number of ms, got ${String(value)}`);
}

/** A function, or undefined. */
function functionArg<F>(value: F | undefined, name: string): F | undefined {
  if (value === undefined || typeof value === 'function') return value;
  throw new InvalidArgumentError(`${name} must be a function, got ${typeof value}`);
}
