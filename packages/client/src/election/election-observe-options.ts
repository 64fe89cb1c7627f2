// The options of ElectionClient.observe(), checked once when observe() is called, as the settings
// a resuming observation runs with.

import { type EtcdError, InvalidArgumentError } from '../errors.js';
import type { BackoffOptions } from '../transport/backoff.js';
import type { ElectionHooks, ObserveResumed } from './election-observe-events.js';

/** Options of {@link ElectionClient.observe}. */
export interface ObserveCallOptions {
  /** Ends the observation: the iteration then throws AbortedError. */
  readonly signal?: AbortSignal;
  /**
   * Whether the observation goes on when its stream breaks (the member stopped, the connection
   * dropped, "etcdserver: no leader"...): the Observe stream is reopened, on another member when
   * the connection has one, and what was already yielded is not yielded again. Default true.
   *
   * With `false` the iteration is one stream, as etcd's Go client gives it: it fails with the
   * stream's error, or ends when the server ends the stream. The options below belong to a
   * resuming observation: with `false` they are refused (InvalidArgumentError).
   */
  readonly resume?: boolean;
  /**
   * Pause before the first reopen after a stream that had answered, in ms: a random delay between
   * half of it and all of it. Default 100.
   */
  readonly minReconnectDelayMs?: number;
  /**
   * Largest pause between two reopens, in ms: the pause doubles while reopening fails, up to it.
   * Default 5_000 (as the watch's `maxReconnectDelayMs`). At least `minReconnectDelayMs`.
   */
  readonly maxReconnectDelayMs?: number;
  /**
   * Liveness check, every so many ms (default: none). An Observe stream says nothing while the
   * election does not change, so silence is normal; but without `requireLeader` a stream on a
   * member cut off from its cluster (or a frozen member, or a half-open connection) stays silent
   * after the election moved on. With this set, the election's leader is read every interval (a
   * Leader call, linearizable, with the interval as its deadline), and the stream is replaced
   * when the read shows a value later than the last one yielded that the stream has still not
   * delivered at the next check, or when the read fails while calls go through the stream's own
   * endpoint (a cut-off member holds linearizable reads until etcd's request timeout; a frozen one
   * never answers). A replaced stream is reported lost (UnavailableError), its endpoint is
   * redialled and put in backoff, as a stalled watch's is, and it is reopened on another member
   * when there is one. So a stream that missed a change is replaced within two intervals plus two reads (four intervals at worst).
   *
   * One timer and at most one call at a time per observation; none when unset. Choose an interval
   * well above the cluster's read latency (seconds): a read slower than the interval through the
   * stream's endpoint replaces the stream and redials that endpoint. `requireLeader: true` on the
   * client is the cheaper answer for a cut-off member.
   */
  readonly leaderCheckIntervalMs?: number;
  /**
   * The stream was lost (or the first one could not be opened); the observation reopens it by
   * itself and calls {@link onResumed} once it answers. Called once per outage, with the failure
   * that started it, like a watcher's 'disconnected' event. Informational.
   */
  readonly onDisconnected?: (error: EtcdError) => void;
  /**
   * The observation follows the election again after {@link onDisconnected}: where and after how
   * long, like a watcher's 'resumed' event. A callback that throws is reported as an uncaught
   * exception (as a watcher's listener is) and does not stop the observation.
   */
  readonly onResumed?: (resumed: ObserveResumed) => void;
}

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
