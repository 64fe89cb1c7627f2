// Lease keepalive: ONE LeaseKeepAlive bidi stream per connection carries every kept-alive lease
// (not one stream per lease). Schedule, loss deadline and reconnects: docs/operations.md.

import { callHook } from '../connection/hooks.js';
import { ResumableStream } from '../connection/resumable-stream.js';
import type { Rpc } from '../connection/types.js';
import {
  ClientClosedError,
  type EtcdError,
  InvalidArgumentError,
  toEtcdError,
  UnavailableError,
} from '../errors.js';
import { etcdserverpb_Lease as methods } from '../generated/methods.js';
import type { etcdserverpb } from '../generated/protocol.js';
import { jsonReady } from '../json.js';
import type { BidiStream } from '../transport/types.js';
import type { LeaseHooks, LeaseKeepAliveEvent } from './lease-events.js';
import type { LeaseLostReason } from './lease-lost.js';

type KeepAliveStream = BidiStream<
  etcdserverpb.LeaseKeepAliveRequest.$Properties,
  etcdserverpb.LeaseKeepAliveResponse
>;

/** Why the keeper gives up on a lease (the handle itself ends it for the other reasons). */
export type KeeperLossReason = Extract<LeaseLostReason, 'expired' | 'timeout' | 'client-closed'>;

/** What the keeper needs from a lease it keeps alive. */
export interface KeptLease {
  readonly id: bigint;
  /** The TTL granted, in seconds: the schedule until the first reply reports the server's. */
  readonly ttl: bigint;
  /** Monotonic time (`performance.now()`) until which the lease is known to live. */
  readonly aliveUntil: number;
  readonly hooks: LeaseHooks | undefined;
  /** A reply refreshed the lease. */
  refreshed(event: LeaseKeepAliveEvent): void;
  /** The keeper gave up on the lease; it has already forgotten it. */
  lost(reason: KeeperLossReason, cause?: EtcdError): void;
}

/** setTimeout fires at once for delays above 2^31 - 1 ms; longer waits are re-armed. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Reopen backoff after the first immediate retry: 50 ms doubling to 1 s, jittered. */
const REOPEN_BACKOFF = { baseMs: 50, maxMs: 1_000 } as const;

/** One kept-alive lease: its schedule and the keepalives in flight on the current stream. */
class Entry {
  /** The TTL the server last reported (the grant's until the first reply), in ms. */
  ttlMs: number;
  aliveUntil: number;
  nextSendAt = 0;
  /** Send times of unanswered keepalives on the current stream, oldest first (replies are FIFO). */
  readonly pending: number[] = [];
  timer: ReturnType<typeof setTimeout> | undefined;
  /** A reply has refreshed it (its first keepalive was answered). */
  answered = false;

  constructor(readonly lease: KeptLease) {
    this.ttlMs = Number(lease.ttl) * 1000;
    this.aliveUntil = lease.aliveUntil;
  }

  get intervalMs(): number {
    return this.ttlMs / 3;
  }

  /**
   * How long a keepalive sent at `sentAt` may go unanswered before the stream counts as stalled:
   * one interval; until the first reply, at most a third of the life left, since a grant answered
   * late (a restarted member electing itself) already used part of the TTL.
   */
  replyBoundMs(sentAt: number): number {
    if (this.answered) return this.intervalMs;
    return Math.min(this.intervalMs, (this.aliveUntil - sentAt) / 3);
  }
}

/**
 * The keepalive stream of one client and the leases it carries, owned by its LeaseClient (etcd.ts
 * closes it). Internal: users go through `lease.keepAlive()`.
 */
export class LeaseKeeper {
  /** Its optional `closed`, `refreshToken` and `redial` are used when present. */
  readonly #rpc: Rpc;
  readonly #entries = new Map<bigint, Entry>();
  #stream: KeepAliveStream | undefined;
  #running = false;
  #closed = false;
  #opening: AbortController | undefined;
  /** Ends a backoff pause early (the last lease left). */
  #pausing: AbortController | undefined;
  /** The last stream failure since the last reply: the cause of a `timeout` loss. */
  #lastError: EtcdError | undefined;
  /** The running loop's resume state. */
  #resume: ResumableStream | undefined;
  /**
   * What the stream last learned of the server: `answered` when a stream opened or a reply came,
   * `failed` when a stream failed or stalled; undefined before any stream.
   */
  #lastHeard: 'answered' | 'failed' | undefined;
  /** Send time of the oldest keepalive on the current stream that no reply has followed. */
  #silentSince: number | undefined;
  /** The client is closing: what it still owns is ending (see {@link beginClose}). */
  #closing = false;

  constructor(rpc: Rpc) {
    this.#rpc = rpc;
  }

  /**
   * Starts keeping `lease` alive; returns the function that stops it (without revoking). Throws
   * ClientClosedError once the client closed, InvalidArgumentError if another handle already keeps
   * the same lease alive on this connection.
   */
  add(lease: KeptLease): () => void {
    if (this.#closed || this.#rpc.closed === true) {
      throw new ClientClosedError();
    }
    if (this.#entries.has(lease.id)) {
      throw new InvalidArgumentError(
        `lease ${lease.id.toString(16)} is already kept alive by another handle on this client`,
      );
    }
    const entry = new Entry(lease);
    this.#entries.set(lease.id, entry);
    const now = performance.now();
    const bound = entry.replyBoundMs(now);
    entry.nextSendAt = now + bound;
    const silentMs = this.#stream && now - (this.#silentSince ?? now);
    if (silentMs !== undefined && bound > 0 && silentMs >= bound) {
      // The stream has been silent longer than this lease's first reply may take (say, opened
      // while the server restarted): redial now, not at the next stall check; the next stream
      // refreshes every lease. Once per stream: the redial ends it, and the reopens back off.
      this.#stalled(silentMs);
    } else {
      this.#send(entry, now);
    }
    this.#arm(entry);
    this.#start();
    return () => this.#remove(entry);
  }

  /**
   * The client starts closing: what it owns ends first (a session revokes its lease), then
   * {@link close}. From now on a revoke is not worth sending while the stream's last word on the
   * server is a failure (see {@link unsendableRevoke}).
   */
  beginClose(): void {
    this.#closing = true;
  }

  /**
   * While the client closes, the error a revoke fails with unsent when the server was unreachable
   * at the stream's last attempt (its stream failed or stalled, none opened since): waiting for a
   * connection would only hold up close(), and the lease expires after its TTL anyway. Undefined
   * when the revoke should be sent: not closing, no stream yet, or the server answered last.
   */
  unsendableRevoke(id: bigint): ClientClosedError | undefined {
    if (!this.#closing || this.#lastHeard !== 'failed') return undefined;
    return new ClientClosedError({
      message:
        `the client is closing and the server was unreachable at the lease keepalive stream's ` +
        `last attempt: the revoke of lease ${id.toString(16)} was not sent (it expires after its TTL)`,
      cause: this.#lastError,
    });
  }

  /** The client is closing: every lease ends with `client-closed` and the stream is cancelled. */
  close(): void {
    this.#closed = true;
    this.#loseAll('client-closed', new ClientClosedError());
  }

  #remove(entry: Entry): void {
    if (this.#entries.get(entry.lease.id) !== entry) return;
    this.#entries.delete(entry.lease.id);
    clearTimeout(entry.timer);
    entry.timer = undefined;
    if (this.#entries.size === 0) {
      // The last lease left: the stream closes, an open in progress or a backoff pause stops.
      this.#stream?.cancel();
      this.#opening?.abort();
      this.#pausing?.abort();
    }
  }

  #lose(entry: Entry, reason: KeeperLossReason, cause?: EtcdError): void {
    this.#remove(entry);
    entry.lease.lost(reason, cause);
  }

  #loseAll(reason: KeeperLossReason, cause?: EtcdError): void {
    for (const entry of [...this.#entries.values()]) this.#lose(entry, reason, cause);
  }

  /** Wakes the entry at its next keepalive or at its deadline, whichever comes first. */
  #arm(entry: Entry): void {
    clearTimeout(entry.timer);
    const delay = Math.min(entry.nextSendAt, entry.aliveUntil) - performance.now();
    entry.timer = setTimeout(() => this.#tick(entry), Math.min(Math.max(delay, 0), MAX_TIMER_MS));
  }

  #tick(entry: Entry): void {
    entry.timer = undefined;
    if (this.#entries.get(entry.lease.id) !== entry) return;
    const now = performance.now();
    if (now >= entry.aliveUntil) {
      this.#lose(entry, 'timeout', this.#lastError);
      return;
    }
    if (now >= entry.nextSendAt) {
      entry.nextSendAt = now + entry.intervalMs;
      const oldest = entry.pending[0];
      const stream = this.#stream;
      if (stream && oldest !== undefined && now - oldest >= entry.replyBoundMs(oldest)) {
        this.#stalled(now - oldest);
      } else {
        this.#send(entry, now);
      }
    }
    this.#arm(entry);
  }

  /**
   * No answer for `silentMs`: the connection is stuck (half-open, frozen server). Redials the
   * stream's endpoint, or the next stream would sit on the same dead connection.
   */
  #stalled(silentMs: number): void {
    this.#resume?.redial(this.#stream?.endpoint);
    this.#replace(
      new UnavailableError({
        message: `no lease keepalive reply for ${Math.round(silentMs)} ms: the stream stalled`,
      }),
    );
  }

  #send(entry: Entry, now: number): void {
    const stream = this.#stream;
    if (!stream) return; // The stream opening next refreshes every lease.
    try {
      stream.write({ ID: entry.lease.id });
      entry.pending.push(now);
      this.#silentSince ??= now;
    } catch (error) {
      this.#replace(toEtcdError(error));
    }
  }

  /** Cancels the current stream; the run loop opens the next one. */
  #replace(reason: EtcdError): void {
    const stream = this.#stream;
    if (!stream) return;
    this.#stream = undefined;
    this.#lastError = reason;
    this.#lastHeard = 'failed';
    stream.cancel();
  }

  #start(): void {
    if (this.#running || this.#closed) return;
    this.#running = true;
    this.#run().then(
      () => {
        this.#running = false;
        // A lease added while the loop was winding down.
        if (this.#entries.size > 0) this.#start();
        // Or none: a lease kept alive later must not be blamed on this loop's last failure.
        else this.#lastError = undefined;
      },
      (error: unknown) => {
        // #run handles every failure it expects. Should anything else escape, the loop is not
        // restarted here (it could spin): the deadlines report the leases lost, never alive.
        this.#running = false;
        this.#lastError = toEtcdError(error);
      },
    );
  }

  /** Opens streams and serves them while any lease is kept alive. */
  async #run(): Promise<void> {
    // A kept-alive lease is lost at its deadline, not on a stream error: only closing stops this.
    const resume = new ResumableStream(this.#rpc, {
      backoff: REOPEN_BACKOFF,
      immediateReopens: 1,
      untilClosed: true,
    });
    this.#resume = resume;
    while (this.#entries.size > 0) {
      const pausing = new AbortController();
      this.#pausing = pausing;
      await resume.pause(pausing.signal);
      this.#pausing = undefined;
      if (this.#entries.size === 0) break;
      const opening = new AbortController();
      this.#opening = opening;
      let stream: KeepAliveStream;
      try {
        stream = await this.#rpc.bidiStream(methods.LeaseKeepAlive, { signal: opening.signal });
      } catch (error) {
        if (!(await this.#failed(resume, error))) break;
        continue;
      } finally {
        this.#opening = undefined;
      }
      if (this.#entries.size === 0) {
        stream.cancel();
        break;
      }
      const error = await this.#serve(stream, () => resume.answered());
      if (!(await this.#failed(resume, error))) break;
    }
  }

  /** Refreshes every lease on `stream`, then handles replies until the stream ends. */
  async #serve(stream: KeepAliveStream, onReply: () => void): Promise<unknown> {
    this.#stream = stream;
    this.#lastHeard = 'answered';
    this.#silentSince = undefined;
    const now = performance.now();
    for (const entry of this.#entries.values()) {
      entry.pending.length = 0;
      entry.nextSendAt = now + entry.replyBoundMs(now);
      this.#send(entry, now);
      this.#arm(entry);
    }
    try {
      for await (const reply of stream) {
        onReply();
        this.#lastError = undefined;
        this.#lastHeard = 'answered';
        this.#silentSince = undefined;
        this.#receive(reply);
      }
      return new UnavailableError({ message: 'the server ended the lease keepalive stream' });
    } catch (error) {
      return error;
    } finally {
      if (this.#stream === stream) this.#stream = undefined;
      // Replies to what was sent on this stream will never come.
      for (const entry of this.#entries.values()) entry.pending.length = 0;
    }
  }

  #receive(reply: etcdserverpb.LeaseKeepAliveResponse): void {
    const entry = this.#entries.get(reply.ID);
    if (!entry) return; // Released while the keepalive was in flight.
    const sentAt = entry.pending.shift();
    if (reply.TTL <= 0n) {
      this.#lose(entry, 'expired');
      return;
    }
    if (sentAt === undefined) return;
    const now = performance.now();
    const ttlMs = Number(reply.TTL) * 1000;
    const event: LeaseKeepAliveEvent = jsonReady({
      leaseId: entry.lease.id,
      ttl: reply.TTL,
      roundTripMs: now - sentAt,
      marginMs: entry.aliveUntil - now,
    });
    entry.ttlMs = ttlMs;
    entry.answered = true;
    entry.aliveUntil = Math.max(entry.aliveUntil, sentAt + ttlMs);
    entry.nextSendAt = now + entry.intervalMs;
    this.#arm(entry);
    callHook(entry.lease.hooks?.onLeaseKeepAlive, event);
    entry.lease.refreshed(event);
  }

  /** Records a stream failure; false when it means the client closed (every lease then ended). */
  async #failed(resume: ResumableStream, error: unknown): Promise<boolean> {
    const typed = toEtcdError(error);
    // Our own cancellations (a stalled stream, the last lease leaving) keep the real reason.
    if (typed.code !== 'ABORTED' && typed.code !== 'CLIENT_CLOSED') {
      this.#lastError = typed;
      this.#lastHeard = 'failed';
    }
    const stop = await resume.failed(typed);
    if (stop === undefined) return true;
    this.#closed = true;
    this.#loseAll('client-closed', stop);
    return false;
  }
}
