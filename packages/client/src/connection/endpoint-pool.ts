// Endpoint selection with failover. Calls go to the current endpoint; an endpoint whose connection
// fails is put in backoff and calls move to the next healthy one. An endpoint in backoff is only
// used again when its backoff expired, or when every endpoint is in backoff (then the one that
// expires first). Channels are opened lazily, and a failed endpoint's channel is redialled from
// scratch once its backoff expired, so a dead endpoint is never hammered.
import type { Channel, ChannelOptions, Transport } from '../transport/types.js';
import { type BackoffOptions, backoffDelay } from './backoff.js';
import type { EndpointSwitchEvent } from './options.js';

/** One endpoint and its state. */
export interface PooledEndpoint {
  /** `host:port`. */
  readonly target: string;
  /** Normalised URL. */
  readonly url: string;
  /** Consecutive connection failures. */
  readonly failures: number;
  /** Epoch ms before which the endpoint is avoided. */
  readonly retryAt: number;
}

interface EndpointState extends PooledEndpoint {
  failures: number;
  retryAt: number;
  /** The channel failed; reopen it when the backoff expired and it is not connected. */
  stale: boolean;
  channel: Channel | undefined;
}

/** What the pool needs to know to open channels. */
export interface EndpointPoolOptions {
  readonly endpoints: ReadonlyArray<{ readonly url: string; readonly target: string }>;
  readonly transport: Transport;
  /** Options of every channel; `target` is filled in per endpoint. */
  readonly channel: Omit<ChannelOptions, 'target'>;
  readonly backoff: BackoffOptions;
  readonly onSwitch?: ((event: EndpointSwitchEvent) => void) | undefined;
  /** Clock, for tests. */
  readonly now?: () => number;
}

/** Endpoints, their channels and the failover order. */
export class EndpointPool {
  readonly #endpoints: EndpointState[];
  readonly #options: EndpointPoolOptions;
  readonly #now: () => number;
  #current = 0;
  #everPicked = false;
  #closed = false;

  /** Creates the pool; opens nothing. */
  constructor(options: EndpointPoolOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#endpoints = options.endpoints.map((e) => ({
      target: e.target,
      url: e.url,
      failures: 0,
      retryAt: 0,
      stale: false,
      channel: undefined,
    }));
  }

  /** Every endpoint, in configured order. */
  get endpoints(): readonly PooledEndpoint[] {
    return this.#endpoints;
  }

  /** The endpoint calls currently go to. */
  get current(): PooledEndpoint {
    return this.#endpoints[this.#current]!;
  }

  /**
   * Chooses the endpoint for the next attempt and returns it with an open channel. Endpoints in
   * `avoid` (already tried by this call) are skipped while others are available.
   */
  pick(avoid?: ReadonlySet<PooledEndpoint>): { endpoint: PooledEndpoint; channel: Channel } {
    if (this.#closed) throw new Error('endpoint pool is closed');
    const now = this.#now();
    const n = this.#endpoints.length;
    let chosen: number | undefined;
    for (let i = 0; i < n && chosen === undefined; i++) {
      const index = (this.#current + i) % n;
      const e = this.#endpoints[index]!;
      if (e.retryAt <= now && !avoid?.has(e)) chosen = index;
    }
    if (chosen === undefined) {
      // Everything is in backoff (or tried): take the endpoint whose backoff ends first, preferring
      // ones this call has not tried yet.
      let best = -1;
      for (let pass = 0; pass < 2 && best < 0; pass++) {
        for (let index = 0; index < n; index++) {
          const e = this.#endpoints[index]!;
          if (pass === 0 && avoid?.has(e)) continue;
          if (best < 0 || e.retryAt < this.#endpoints[best]!.retryAt) best = index;
        }
      }
      chosen = best;
    }
    this.#switchTo(chosen);
    const e = this.#endpoints[chosen]!;
    return { endpoint: e, channel: this.#channelOf(e, now) };
  }

  /** Records a successful exchange with `endpoint`: its backoff is reset. */
  succeeded(endpoint: PooledEndpoint): void {
    const e = endpoint as EndpointState;
    e.failures = 0;
    e.retryAt = 0;
    e.stale = false;
  }

  /**
   * Records a connection failure (or an Unavailable answer) of `endpoint`: it goes into backoff
   * and, if it is current, calls move to the next endpoint.
   */
  failed(endpoint: PooledEndpoint): void {
    const e = endpoint as EndpointState;
    e.failures++;
    e.retryAt = this.#now() + backoffDelay(e.failures, this.#options.backoff);
    e.stale = true;
    const index = this.#endpoints.indexOf(e);
    if (index === this.#current && this.#endpoints.length > 1) {
      const n = this.#endpoints.length;
      const now = this.#now();
      for (let i = 1; i < n; i++) {
        const next = (index + i) % n;
        if (this.#endpoints[next]!.retryAt <= now) {
          this.#switchTo(next);
          return;
        }
      }
    }
  }

  /**
   * Closes `endpoint`'s channel now, whatever state the transport reports, so the next pick dials
   * a new connection. For a connection that stopped answering although it still looks ready (a
   * half-open TCP connection). Calls in flight on it fail.
   */
  discard(endpoint: PooledEndpoint): void {
    const e = endpoint as EndpointState;
    e.channel?.close();
    e.channel = undefined;
  }

  /** Closes every channel. Further `pick()` calls throw. */
  close(): void {
    this.#closed = true;
    for (const e of this.#endpoints) {
      e.channel?.close();
      e.channel = undefined;
    }
  }

  #switchTo(index: number): void {
    if (this.#everPicked && index === this.#current) return;
    const from = this.#everPicked ? this.#endpoints[this.#current]!.target : undefined;
    this.#current = index;
    const first = !this.#everPicked;
    this.#everPicked = true;
    if (!first) this.#options.onSwitch?.({ from, to: this.#endpoints[index]!.target });
  }

  #channelOf(e: EndpointState, now: number): Channel {
    if (e.channel && e.stale && now >= e.retryAt) {
      const state = e.channel.state();
      if (state === 'failed' || state === 'connecting' || state === 'closed') {
        e.channel.close();
        e.channel = undefined;
      }
      e.stale = false;
    }
    if (!e.channel) {
      e.channel = this.#options.transport.open({ ...this.#options.channel, target: e.target });
    }
    return e.channel;
  }
}
