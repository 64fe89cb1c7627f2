// Curator's LeaderLatch over the Election recipe: a process joins the group once and is told, for
// as long as its session lives, whether it leads; the campaign is restarted after a lost key.
import { AbortedError, type EtcdError } from '@etcdkit/client';
import { toEtcdError } from '@etcdkit/client/internal';
import { EventEmitter } from 'eventemitter3';
import { RecipeError, STOPPED, throwIfAborted } from '../errors.js';
import type { Session } from '../session/session.js';
import type { WaitOptions } from '../wait.js';
import { Election, type Leadership } from './election.js';

/** Where a {@link LeaderLatch} stands. */
export type LatchState = 'leader' | 'not-leader' | 'closed';

/** Options of {@link LeaderLatch}. */
export interface LeaderLatchOptions {
  /** The value the latch campaigns with (what `Election.observe` and `etcdctl elect -l` show). Default `''`. */
  readonly value?: string;
}

/** The events of a {@link LeaderLatch}, Curator's `LeaderLatchListener` as events. */
export interface LeaderLatchEvents {
  /** This latch became the leader. */
  leader: (leadership: Leadership) => void;
  /** This latch stopped being the leader (resigned by close, key lost, session ended). */
  notLeader: () => void;
  /** The latch is closed for good; `reason` is a {@link LatchClosedError}. */
  closed: (reason: LatchClosedError) => void;
}

/**
 * The latch is closed: by {@link LeaderLatch.close}, by the end of its session (the cause is the
 * session's LeaseLostError) or by a failed campaign (the cause is its error).
 */
export class LatchClosedError extends RecipeError<'LATCH_CLOSED'> {
  /** `message` says why; `cause` is the failure behind it, if any. */
  constructor(message: string, options?: { readonly cause?: unknown }) {
    super('LATCH_CLOSED', message, options);
  }
}

/**
 * Apache Curator's `LeaderLatch` on etcd: after {@link start}, the latch campaigns in the
 * background in the {@link Election} `name` (Go's key layout, so Go candidates and
 * `etcdctl elect` take part) and reports its state: {@link hasLeadership}, the events `leader` /
 * `notLeader` / `closed`, the async iterator {@link transitions}, and {@link leadership}, which
 * resolves once it leads (Curator's `await()`).
 *
 * As in Curator, a latch whose key is lost while its session lives (deleted by someone) becomes
 * not-leader and campaigns again. Unlike Curator, which keeps its latch and rejoins after a
 * reconnect, the latch is closed when its session ends (a lease expired or revoked cannot come
 * back): `notLeader` then `closed`, so a process never believes it leads on a dead lease. Make a
 * new latch on a new session to rejoin. One latch per session and name: Go's layout gives a session
 * one candidate key per election, which two latches would share.
 *
 * Leading is never proof at the server (see `Hold`): fence what the leader writes with
 * `leadership.txn()` or `leadership.epoch`.
 *
 * @example
 * ```ts
 * const latch = new LeaderLatch(session, 'elections/scheduler', { value: 'node-a' }).start();
 * for await (const state of latch.transitions()) {
 *   if (state === 'leader') startScheduling(latch.current);
 *   else stopScheduling();
 * }
 * ```
 */
export class LeaderLatch extends EventEmitter<LeaderLatchEvents> implements AsyncDisposable {
  /** The election the latch campaigns in. */
  readonly election: Election;
  readonly #value: string;
  readonly #stop = new AbortController();
  #state: LatchState = 'not-leader';
  #leadership: Leadership | undefined;
  #closedReason: LatchClosedError | undefined;
  #running: Promise<void> | undefined;

  constructor(
    /** The session whose lease the candidate key is attached to; the latch ends with it. */
    readonly session: Session,
    /** The election's name (Go's election prefix, without the trailing `/`). */
    name: string,
    options: LeaderLatchOptions = {},
  ) {
    super();
    this.election = new Election(session, name);
    this.#value = options.value ?? '';
  }

  /** Joins the group: starts campaigning in the background. Returns the latch; a second call does nothing. */
  start(): this {
    this.#running ??= this.#run();
    return this;
  }

  /** The latch's state now. */
  get state(): LatchState {
    return this.#state;
  }

  /** True while this latch leads (as far as this process knows: fence what it writes). */
  get hasLeadership(): boolean {
    return this.#state === 'leader';
  }

  /** The leadership while this latch leads, else undefined. */
  get current(): Leadership | undefined {
    return this.#leadership;
  }

  /** Why the latch is closed, once it is. */
  get closedReason(): LatchClosedError | undefined {
    return this.#closedReason;
  }

  /**
   * Resolves with the leadership once this latch leads (at once if it does). Rejects with
   * {@link LatchClosedError} when the latch is or gets closed first, and with AbortedError when
   * `signal` aborts.
   */
  leadership(options: WaitOptions = {}): Promise<Leadership> {
    const { signal } = options;
    if (this.#leadership !== undefined) return Promise.resolve(this.#leadership);
    if (this.#closedReason !== undefined) return Promise.reject(this.#closedReason);
    try {
      throwIfAborted(signal);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      const done = () => {
        this.off('leader', onLeader);
        this.off('closed', onClosed);
        signal?.removeEventListener('abort', onAbort);
      };
      const onLeader = (leadership: Leadership) => {
        done();
        resolve(leadership);
      };
      const onClosed = (reason: LatchClosedError) => {
        done();
        reject(reason);
      };
      const onAbort = () => {
        done();
        reject(new AbortedError({ cause: signal?.reason }));
      };
      this.on('leader', onLeader);
      this.on('closed', onClosed);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Yields the state now, then every transition: `'leader'`, `'not-leader'`, and ends after the
   * latch closed (a `'not-leader'` comes first if it led). Every transition is yielded, in order,
   * however slow the loop. Leaving the loop only stops the iteration; an aborted `signal` ends it
   * with the client's AbortedError (as every iteration of the recipes and the client).
   */
  async *transitions(options: WaitOptions = {}): AsyncGenerator<'leader' | 'not-leader'> {
    const queued: LatchState[] = [this.#state];
    let wake: (() => void) | undefined;
    const push = (state: LatchState) => () => {
      queued.push(state);
      wake?.();
    };
    const onLeader = push('leader');
    const onNotLeader = push('not-leader');
    const onClosed = push('closed');
    const onAbort = () => wake?.();
    this.on('leader', onLeader).on('notLeader', onNotLeader).on('closed', onClosed);
    options.signal?.addEventListener('abort', onAbort);
    try {
      for (;;) {
        throwIfAborted(options.signal);
        const state = queued.shift();
        if (state === 'closed') return;
        if (state !== undefined) {
          yield state;
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      this.off('leader', onLeader).off('notLeader', onNotLeader).off('closed', onClosed);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Leaves the group: stops campaigning (the candidate key is deleted, guarded by its create
   * revision) or resigns the leadership, then closes the latch (`notLeader` first if it led).
   * Calling it again returns the same promise; the session stays open.
   */
  async close(): Promise<void> {
    this.#stop.abort(STOPPED);
    this.#closedReason ??= new LatchClosedError(`the latch of ${this.election.name} was closed`);
    await this.#running;
    this.#finish();
  }

  /** Closes the latch, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #run(): Promise<void> {
    const stop = this.#stop.signal;
    while (!stop.aborted && !this.session.isDone) {
      let leadership: Leadership;
      try {
        leadership = await this.election.campaign(this.#value, { signal: stop });
      } catch (error) {
        if (!stop.aborted) this.#closeFor(error);
        break;
      }
      this.#leadership = leadership;
      this.#state = 'leader';
      this.emit('leader', leadership);
      await lost(leadership.signal, stop);
      if (stop.aborted) await leadership.resign().catch(() => undefined);
      this.#leadership = undefined;
      this.#state = 'not-leader';
      this.emit('notLeader');
    }
    if (this.session.isDone && this.#closedReason === undefined) {
      this.#closeFor(await this.session.done);
    }
    this.#finish();
  }

  #closeFor(cause: unknown): void {
    const error: EtcdError = toEtcdError(cause);
    this.#closedReason ??= new LatchClosedError(
      `the latch of ${this.election.name} closed: ${error.message}`,
      { cause: error },
    );
  }

  #finish(): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#stop.abort(STOPPED);
    const reason = this.#closedReason ?? new LatchClosedError('closed');
    this.#closedReason = reason;
    this.emit('closed', reason);
  }
}

/** Resolves once `held` or `stop` aborts. */
function lost(held: AbortSignal, stop: AbortSignal): Promise<void> {
  if (held.aborted || stop.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      held.removeEventListener('abort', done);
      stop.removeEventListener('abort', done);
      resolve();
    };
    held.addEventListener('abort', done, { once: true });
    stop.addEventListener('abort', done, { once: true });
  });
}
