// Endpoint selection with failover: a failing endpoint goes into backoff and calls move on; the
// list can be replaced while calls run (docs/guarantees.md and docs/real-cluster.md).

import { type BackoffOptions, backoffDelay } from '../transport/backoff.js';
import type { Channel, ChannelOptions, Transport } from '../transport/types.js';
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
  /** Calls and streams that picked this endpoint and have not released it yet. */
  users: number;
}

/** An endpoint address, as the pool is given it. */
export interface PoolAddress {
  readonly url: string;
  readonly target: string;
}

function fresh(address: PoolAddress): EndpointState {
  return {
    target: address.target,
    url: address.url,
    failures: 0,
    retryAt: 0,
    stale: false,
    channel: undefined,
    users: 0,
  };
}

/** What the pool needs to know to open channels. */
export interface EndpointPoolOptions {
  readonly endpoints: readonly PoolAddress[];
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
  #endpoints: EndpointState[];
  /** Endpoints dropped by replace() whose channel is still in use, by URL. */
  readonly #retired = new Map<string, EndpointState>();
  readonly #options: EndpointPoolOptions;
  readonly #now: () => number;
  #current = 0;
  /** Target of the current endpoint when replace() dropped it, until the next switch is reported. */
  #dropped: string | undefined;
  #everPicked = false;
  #closed = false;

  /** Creates the pool; opens nothing. */
  constructor(options: EndpointPoolOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#endpoints = options.endpoints.map(fresh);
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
   * The endpoint whose `host:port` (or normalised URL) is `address`: a listed one, or one dropped by
   * {@link replace} that calls or streams still use. Undefined when there is none.
   */
  find(address: string): PooledEndpoint | undefined {
    const matches = (e: EndpointState) => e.target === address || e.url === address;
    return this.#endpoints.find(matches) ?? [...this.#retired.values()].find(matches);
  }

  /**
   * Chooses the endpoint for the next attempt and returns it with an open channel. Endpoints in
   * `avoid` (already tried by this call) are skipped while others are available. The caller
   * {@link release}s the endpoint once its call or stream is done with the channel.
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
    const channel = this.#channelOf(e, now);
    e.users++;
    return { endpoint: e, channel };
  }

  /**
   * The call or stream that picked `endpoint` is done with its channel. The channel of an endpoint
   * dropped by {@link replace} closes when its last user releases it.
   */
  release(endpoint: PooledEndpoint): void {
    const e = endpoint as EndpointState;
    if (e.users > 0) e.users--;
    if (e.users === 0 && this.#retired.get(e.url) === e) {
      this.#retired.delete(e.url);
      e.channel?.close();
      e.channel = undefined;
    }
  }

  /**
   * Replaces the endpoint list (non-empty; validated by the caller). Endpoints still listed keep
   * their channel and backoff, and the current one stays current; if the current one is dropped,
   * the next pick starts from the first listed endpoint. Dropped endpoints are no longer picked;
   * their channels close now if unused, else when their last call or stream releases them.
   */
  replace(addresses: readonly PoolAddress[]): void {
    if (this.#closed) throw new Error('endpoint pool is closed');
    const previous = new Map(this.#endpoints.map((e) => [e.url, e]));
    const current = this.#endpoints[this.#current]!;
    const next: EndpointState[] = [];
    for (const address of addresses) {
      if (next.some((e) => e.url === address.url)) continue;
      // An endpoint dropped earlier and listed again gets its channel back if it is still open.
      const kept = previous.get(address.url) ?? this.#retired.get(address.url);
      this.#retired.delete(address.url);
      previous.delete(address.url);
      next.push(kept ?? fresh(address));
    }
    for (const e of previous.values()) {
      if (e.users > 0) {
        this.#retired.set(e.url, e);
      } else {
        e.channel?.close();
        e.channel = undefined;
      }
    }
    this.#endpoints = next;
    const index = next.indexOf(current);
    if (index >= 0) {
      this.#current = index;
    } else {
      this.#current = 0;
      if (this.#everPicked) this.#dropped ??= current.target;
    }
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
    for (const e of [...this.#endpoints, ...this.#retired.values()]) {
      e.channel?.close();
      e.channel = undefined;
    }
    this.#retired.clear();
  }

  #switchTo(index: number): void {
    const dropped = this.#dropped;
    this.#dropped = undefined;
    if (this.#everPicked && index === this.#current && dropped === undefined) return;
    const from = dropped ?? (this.#everPicked ? this.#endpoints[this.#current]!.target : undefined);
    const to = this.#endpoints[index]!.target;
    this.#current = index;
    const first = !this.#everPicked;
    this.#everPicked = true;
    if (!first && from !== to) this.#options.onSwitch?.({ from, to });
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
