// The one watch stream of a client: every watcher shares one hub and at most one Watch stream, and
// after any failure every watcher resumes on a new stream from its last delivered revision + 1.
import { callHook } from '../connection/hooks.js';
import { ResumableStream } from '../connection/resumable-stream.js';
import { streamFailure } from '../connection/retry.js';
import type { Rpc } from '../connection/types.js';
import { ClientClosedError, type EtcdError, InvalidConfigError, toEtcdError } from '../errors.js';
import { etcdserverpb_Watch } from '../generated/methods.js';
import type { KeyPrefix } from '../keys/namespace.js';
import {
  type SessionOwner,
  type WatchBidiStream,
  WatchSession,
  type WatchSubscriber,
} from './session.js';
import { watchSpec } from './spec.js';
import type { StallTiming } from './stall.js';
import type { WatchHooks, WatchRequest, WatchStreamOptions } from './types.js';
import { Watcher, type WatcherHost } from './watcher.js';

/** Defaults of {@link WatchStreamOptions}. */
export const WATCH_STREAM_DEFAULTS = {
  progressIntervalMs: 10_000,
  stallTimeoutMs: 5_000,
  maxReconnectDelayMs: 5_000,
  idleStreamMs: 2_000,
} as const;

/** A duration option in ms: `fallback` when unset; above 0, or at least 0 when `zero` is allowed. */
function duration(name: string, value: unknown, fallback: number, zero = false): number {
  if (value === undefined) return fallback;
  if (typeof value === 'number' && Number.isFinite(value) && (value > 0 || (zero && value === 0))) {
    return value;
  }
  const wanted = zero ? 'a number of ms >= 0' : 'a positive number of ms';
  throw new InvalidConfigError(`watch.${name} must be ${wanted}, got ${String(value)}`);
}

/**
 * One client's watch stream and its watchers, owned by the client (etcd.ts closes it) and shared by
 * its namespaces.
 */
export class WatchHub implements WatcherHost, SessionOwner {
  /** Observability callbacks. */
  readonly hooks: WatchHooks;
  /** Its optional `refreshToken` and `redial` are used when present. */
  readonly #rpc: Rpc;
  readonly #timing: StallTiming;
  /** When and whether the stream is reopened; its token refresh is once until a stream answers. */
  readonly #resume: ResumableStream;
  readonly #watchers = new Set<Watcher>();
  /** Watchers that need a server-side watch now (not paused, not ended). */
  readonly #active = new Set<Watcher>();
  #session: WatchSession | undefined;
  #running = false;
  #attempt: AbortController | undefined;
  #closed: EtcdError | undefined;
  readonly #idleStreamMs: number;
  /** Closes the stream once it has had no watcher for `idleStreamMs`; unset while it has one. */
  #linger: NodeJS.Timeout | undefined;

  /** Throws InvalidConfigError on bad settings. */
  constructor(rpc: Rpc, options: WatchStreamOptions) {
    this.#rpc = rpc;
    this.#timing = {
      progressIntervalMs: duration(
        'progressIntervalMs',
        options.progressIntervalMs,
        WATCH_STREAM_DEFAULTS.progressIntervalMs,
      ),
      stallTimeoutMs: duration(
        'stallTimeoutMs',
        options.stallTimeoutMs,
        WATCH_STREAM_DEFAULTS.stallTimeoutMs,
      ),
    };
    const maxMs = duration(
      'maxReconnectDelayMs',
      options.maxReconnectDelayMs,
      WATCH_STREAM_DEFAULTS.maxReconnectDelayMs,
    );
    this.#resume = new ResumableStream(rpc, { backoff: { baseMs: 100, maxMs } });
    this.hooks = options.hooks ?? {};
    this.#idleStreamMs = duration(
      'idleStreamMs',
      options.idleStreamMs,
      WATCH_STREAM_DEFAULTS.idleStreamMs,
      true,
    );
  }

  /** Watchers alive on this hub. */
  get watcherCount(): number {
    return this.#watchers.size;
  }

  /** Whether a stream is open now. */
  get streamOpen(): boolean {
    return this.#session !== undefined && !this.#session.ended;
  }

  /** Starts a watcher (validating the request first; throws InvalidArgumentError). */
  watch(request: WatchRequest, ns: KeyPrefix): Watcher {
    const watcher = new Watcher(watchSpec(request, ns), this);
    if (watcher.closed) return watcher;
    if (this.#closed) {
      watcher.fail(this.#closed);
      return watcher;
    }
    this.#watchers.add(watcher);
    this.request(watcher);
    return watcher;
  }

  /** Ends every watcher with `error` and keeps refusing new ones (the client closed). */
  close(error: EtcdError): void {
    this.#closed ??= error;
    this.#stopLinger();
    this.#idle('closed');
    this.#failAll(error);
  }

  /** @internal */
  request(watcher: Watcher): void {
    if (!watcher.wantsStream || this.#closed) return;
    this.#active.add(watcher);
    this.#stopLinger();
    const session = this.#session;
    if (session && !session.ended) session.create(watcher);
    else this.#ensureRunning();
  }

  /** @internal */
  pause(watcher: Watcher): void {
    this.#active.delete(watcher);
    this.#session?.cancel(watcher, true);
    if (this.#active.size === 0) this.#lingerOrIdle();
  }

  /** @internal */
  detach(watcher: Watcher): void {
    this.#watchers.delete(watcher);
    this.#active.delete(watcher);
    this.#session?.cancel(watcher, false);
    if (this.#active.size === 0) this.#lingerOrIdle();
  }

  /** @internal */
  released(_subscriber: WatchSubscriber): void {
    // The pause is complete; the watcher asks again through request() once drained.
  }

  /** @internal */
  rejected(subscriber: WatchSubscriber, error: EtcdError): void {
    const watcher = subscriber as Watcher;
    const session = this.#session;
    if (
      streamFailure(error) === 'token' &&
      this.#rpc.refreshToken !== undefined &&
      !watcher.authRetried &&
      session !== undefined &&
      !session.ended
    ) {
      // The stream's token may have expired (etcd 3.4 then says "permission denied"): get a new
      // one and reopen. A watcher refused again with the fresh token fails (authRetried).
      session.close('auth', error);
      return;
    }
    watcher.fail(error);
  }

  /** @internal */
  stalled(_waitedMs: number, endpoint: string | undefined): void {
    // A stalled stream usually sits on a half-open connection the transport still calls ready:
    // redial the stream's own endpoint (calls may have moved to a healthy one since).
    this.#resume.redial(endpoint);
  }

  /**
   * The last watcher went: an open stream stays for `idleStreamMs` so that the next watcher's
   * create goes on it (no new stream); a stream still opening is abandoned at once.
   */
  #lingerOrIdle(): void {
    const session = this.#session;
    if (this.#idleStreamMs === 0 || session === undefined || session.ended) {
      this.#idle('idle');
      return;
    }
    if (this.#linger !== undefined) return;
    this.#linger = setTimeout(() => {
      this.#linger = undefined;
      if (this.#active.size === 0) this.#idle('idle');
    }, this.#idleStreamMs);
    // A stream with no watcher must not keep the process alive.
    this.#linger.unref();
  }

  #stopLinger(): void {
    if (this.#linger !== undefined) clearTimeout(this.#linger);
    this.#linger = undefined;
  }

  #idle(reason: 'idle' | 'closed'): void {
    this.#session?.close(reason);
    this.#attempt?.abort();
  }

  #failAll(error: EtcdError): void {
    for (const watcher of [...this.#watchers]) watcher.fail(error);
  }

  #ensureRunning(): void {
    if (this.#running || this.#closed || this.#active.size === 0) return;
    this.#running = true;
    void this.#run();
  }

  async #run(): Promise<void> {
    const resume = this.#resume;
    resume.reset();
    try {
      while (!this.#closed && this.#active.size > 0) {
        const attempt = new AbortController();
        this.#attempt = attempt;
        if (resume.failures > 0) {
          await resume.pause(attempt.signal);
          if (attempt.signal.aborted) continue;
        }
        let stream: WatchBidiStream;
        try {
          stream = await this.#rpc.bidiStream(etcdserverpb_Watch.Watch, { signal: attempt.signal });
        } catch (error) {
          if (attempt.signal.aborted) continue;
          const failure = toEtcdError(error);
          if (!(await this.#resumes(failure))) break;
          for (const watcher of this.#active) watcher.disconnected(failure);
          continue;
        }
        if (attempt.signal.aborted || this.#closed || this.#active.size === 0) {
          stream.cancel();
          continue;
        }
        const session = new WatchSession(stream, this, this.#timing);
        this.#session = session;
        for (const watcher of this.#active) session.create(watcher);
        // After the creations: a hook that starts a watcher must not have it created twice.
        callHook(this.hooks.onStreamOpen, undefined);
        const end = await session.run();
        if (this.#session === session) this.#session = undefined;
        this.#stopLinger();
        callHook(
          this.hooks.onStreamClose,
          end.error ? { reason: end.reason, error: end.error } : { reason: end.reason },
        );
        if (end.answered) resume.answered();
        if (end.reason === 'idle' || end.reason === 'closed') {
          resume.reset();
          continue;
        }
        // A stream that failed while lingering (no watcher) is just dropped: the next watcher
        // opens a new one, and a paused watcher must not fail for a stream it did not use.
        if (this.#active.size === 0) {
          resume.reset();
          continue;
        }
        if (end.reason === 'auth') {
          // Everyone goes back with the fresh token; whoever is refused again fails.
          for (const watcher of this.#active) watcher.authRetried = true;
          if (!(await this.#refreshToken())) break;
          resume.reset();
          continue;
        }
        // A stalled stream is reopened after the first pause, answered or not.
        if (end.reason === 'stall') resume.reset();
        if (!(await this.#resumes(end.error ?? new ClientClosedError()))) break;
      }
    } finally {
      this.#running = false;
      this.#attempt = undefined;
      // A watcher may have arrived while the loop was deciding to stop.
      this.#ensureRunning();
    }
  }

  /** Whether the stream is reopened after `error`; if not, every watcher ends (with the reason). */
  async #resumes(error: EtcdError): Promise<boolean> {
    const stop = await this.#resume.failed(error);
    if (stop === undefined) return true;
    if (stop.code === 'CLIENT_CLOSED') this.#closed ??= stop;
    this.#failAll(stop);
    return false;
  }

  async #refreshToken(): Promise<boolean> {
    const failure = await this.#resume.refreshToken();
    if (failure === undefined) return true;
    if (failure.code === 'CLIENT_CLOSED') this.#closed ??= failure;
    this.#failAll(failure);
    return false;
  }
}
