// Follows a session's keepalives and says, after each, by when CMD must be dead.
import type { LeaseKeepAliveEvent } from '@etcdkit/client';
import type { Session } from '@etcdkit/recipes';
import { killDeadline, type MonotonicNs, monotonicNow } from './kill-deadline.js';

/**
 * The kill deadline of a session's lease: first from the grant (the lease lives at least `ttl`
 * from when the grant was sent), then from each keepalive's send time and reported TTL.
 */
export class LeaseDeadline {
  #killAt: MonotonicNs;
  readonly #listeners = new Set<(killAt: MonotonicNs) => void>();
  readonly #session: Session;
  readonly #onKeepAlive = (event: LeaseKeepAliveEvent): void => {
    const sentAt = monotonicNow() - BigInt(Math.ceil(event.roundTripMs * 1e6));
    const killAt = killDeadline(sentAt, Number(event.ttl) * 1000);
    if (killAt <= this.#killAt) return;
    this.#killAt = killAt;
    for (const listener of this.#listeners) listener(killAt);
  };

  /** `grantSentAt`: read before the session's lease was granted. */
  constructor(session: Session, grantSentAt: MonotonicNs) {
    this.#session = session;
    this.#killAt = killDeadline(grantSentAt, Number(session.ttl) * 1000);
    session.lease.on('keepalive', this.#onKeepAlive);
  }

  /** The current deadline. */
  get killAt(): MonotonicNs {
    return this.#killAt;
  }

  /** Calls `listener` with every later deadline; returns the unsubscribe. */
  onChange(listener: (killAt: MonotonicNs) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stops following the lease. */
  close(): void {
    this.#listeners.clear();
    this.#session.lease.off('keepalive', this.#onKeepAlive);
  }
}
