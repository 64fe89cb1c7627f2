// Leases and the `Lease` handle: `keepAlive()` refreshes it over the shared stream of
// lease-keepalive.ts; `signal`, `lost` and the `lost` event say when it can't be counted on.

import { setMaxListeners } from 'node:events';
import { EventEmitter } from 'eventemitter3';
import { compareBytes, plainBytes } from '../bytes.js';
import { callHook } from '../connection/hooks.js';
import type { CallOptions, Rpc } from '../connection/types.js';
import { type EtcdError, InvalidArgumentError } from '../errors.js';
import { etcdserverpb_Lease as methods } from '../generated/methods.js';
import {
  type Acknowledged,
  acknowledged,
  type ResponseHeader,
  toResponseHeader,
} from '../header.js';
import { fieldsToJSON, jsonReady } from '../json.js';
import type {
  LeaseEvents,
  LeaseHooks,
  LeaseKeepAliveEvent,
  LeaseKeepAliveOptions,
} from './lease-events.js';
import { LeaseKeeper } from './lease-keepalive.js';
import { LeaseLostError, type LeaseLostReason } from './lease-lost.js';

/** Options of {@link LeaseClient.grant}. */
export interface LeaseGrantOptions extends CallOptions {
  /**
   * The lease id to use. When absent the server picks a random positive id. An id already in use
   * makes the grant fail with LeaseExistsError.
   */
  readonly id?: bigint;
  /**
   * Start keeping the lease alive right away, as `lease.keepAlive(options)` does (`true` for the
   * default options). Default false.
   */
  readonly keepAlive?: boolean | LeaseKeepAliveOptions;
}

/** Options of a {@link LeaseClient}. */
export interface LeaseClientOptions {
  /** Keepalive round trips and lease losses; the `Etcd` facade passes the client's `hooks`. */
  readonly hooks?: LeaseHooks;
}

/** Options of {@link LeaseClient.timeToLive}. */
export interface LeaseTimeToLiveOptions extends CallOptions {
  /** Also list the keys attached to the lease. Default false. */
  readonly keys?: boolean;
}

/** What the server reports about one lease. */
export interface LeaseTimeToLive {
  /** The lease id asked about. */
  readonly id: bigint;
  /**
   * Seconds left before the lease expires, rounded down (9 right after a grant of 10). `-1n` when
   * the lease does not exist (never granted, revoked or expired): that is not an error.
   */
  readonly ttl: bigint;
  /** The TTL the lease was granted with (after the server raised it to its minimum), in seconds. */
  readonly grantedTtl: bigint;
  /** Keys attached to the lease in key order, when asked for with `keys: true`; else empty. */
  readonly keys: readonly Uint8Array[];
  readonly header: ResponseHeader;
}

/** Lease operations. Reads are retried across endpoints; grant and revoke are never silently. */
export class LeaseClient {
  readonly #hooks: LeaseHooks | undefined;
  /** The one keepalive stream of this client's leases. */
  readonly #keeper: LeaseKeeper;
  /** The connection calls go through. */
  readonly #rpc: Rpc;

  /** Lease operations over a connection (or any {@link Rpc}); most programs use `etcd.lease`. */
  constructor(rpc: Rpc, options?: LeaseClientOptions);
  /** @internal With the keepalive stream of the client that owns it (etcd.ts closes it). */
  constructor(rpc: Rpc, options: LeaseClientOptions, keeper: LeaseKeeper);
  constructor(rpc: Rpc, options: LeaseClientOptions = {}, keeper = new LeaseKeeper(rpc)) {
    this.#rpc = rpc;
    this.#hooks = options.hooks;
    this.#keeper = keeper;
  }

  /**
   * Grants a lease of `ttlSeconds`. The server raises a TTL below its minimum (2 s with default
   * election settings) and reports the effective TTL in `Lease.ttl`; a TTL above 9,000,000,000 s
   * fails with LeaseTtlTooLargeError. Grants do not create a revision.
   *
   * Not retried once sent: a grant that reached a server may have created the lease.
   */
  async grant(ttlSeconds: number | bigint, options: LeaseGrantOptions = {}): Promise<Lease> {
    const ttl = toTtl(ttlSeconds);
    const sentAt = performance.now();
    const response = await this.#rpc.unary(
      methods.LeaseGrant,
      { TTL: ttl, ID: options.id ?? 0n },
      'write',
      options,
    );
    const lease = new Lease(this, response.ID, response.TTL, toResponseHeader(response.header));
    grantSentAt.set(lease, sentAt);
    const keepAlive = options.keepAlive ?? false;
    if (keepAlive !== false) lease.keepAlive(keepAlive === true ? {} : keepAlive);
    return lease;
  }

  /**
   * Revokes a lease: every key attached to it is deleted in one revision, whose number is
   * `header.revision` (no revision is created when no key was attached). An unknown lease fails
   * with LeaseNotFoundError, so a revoke that is repeated after an unknown outcome reports that.
   *
   * While the client closes (the recipes' sessions revoke their leases then), a revoke is not sent
   * when this client's lease keepalive stream last found the server unreachable: it fails at once
   * with ClientClosedError, so close() does not wait for a connection that is not coming; the
   * lease expires after its TTL. When the server last answered, it is sent as usual.
   */
  async revoke(id: bigint, options: CallOptions = {}): Promise<Acknowledged> {
    const unsendable = this.#keeper.unsendableRevoke(id);
    if (unsendable) throw unsendable;
    return acknowledged(await this.#rpc.unary(methods.LeaseRevoke, { ID: id }, 'write', options));
  }

  /** Remaining and granted TTL of a lease, and optionally its keys. Unknown leases give ttl -1. */
  async timeToLive(id: bigint, options: LeaseTimeToLiveOptions = {}): Promise<LeaseTimeToLive> {
    const response = await this.#rpc.unary(
      methods.LeaseTimeToLive,
      { ID: id, keys: options.keys ?? false },
      'read',
      options,
    );
    return jsonReady({
      id: response.ID,
      ttl: response.TTL,
      grantedTtl: response.grantedTTL,
      // etcd lists them in hash-map order; sorted, equal states read equal.
      keys: response.keys.map(plainBytes).sort(compareBytes),
      header: toResponseHeader(response.header),
    });
  }

  /** Ids of every lease alive in the cluster, in ascending order. */
  async leases(options: CallOptions = {}): Promise<bigint[]> {
    const response = await this.#rpc.unary(methods.LeaseLeases, {}, 'read', options);
    return response.leases.map((lease) => lease.ID ?? 0n).sort(compareBigints);
  }

  /** @internal The keepalive stream of this client, and the lease hooks. */
  keepAliveContext(): { readonly keeper: LeaseKeeper; readonly hooks: LeaseHooks | undefined } {
    return { keeper: this.#keeper, hooks: this.#hooks };
  }
}

/** When the grant of a lease was sent (monotonic ms): its first expiry is counted from there. */
const grantSentAt = new WeakMap<Lease, number>();

/**
 * A granted lease. Attach keys to it by passing `lease.id` to a put; it expires `ttl` seconds after
 * the grant unless kept alive.
 *
 * `keepAlive()` refreshes it every TTL/3 over the client's one shared keepalive stream. The handle
 * then says when the lease can no longer be counted on: `signal` aborts, `lost` resolves and the
 * `lost` event fires, each with a {@link LeaseLostError} whose `reason` is `expired` (the server
 * reports TTL 0), `timeout` (no reply within the TTL: the server is gone or the connection is
 * half-open), `revoked`, `released` or `client-closed`. That happens once; the handle is then done
 * and its listeners are removed. Without `keepAlive()`, only `revoke()`, `release()` and disposal
 * end the handle: its signal does not follow the lease's expiry.
 *
 * @example
 * ```ts
 * await using lease = await etcd.lease.grant(10, { keepAlive: true });
 * await etcd.put('services/api/node-1', url, { lease });
 * lease.on('lost', (error) => log.warn(error.message));
 * await serve({ signal: lease.signal }); // stops when the lease is lost
 * ```
 */
export class Lease extends EventEmitter<LeaseEvents> {
  #ended: LeaseLostError | undefined;
  #controller: AbortController | undefined;
  #lost: Promise<LeaseLostError> | undefined;
  #resolveLost: ((error: LeaseLostError) => void) | undefined;
  /** Stops the keepalive (and the listener on the keepalive's signal) while it runs. */
  #stopKeepAlive: (() => void) | undefined;
  readonly #client: LeaseClient;

  /**
   * Handles normally come from {@link LeaseClient.grant}. A handle built for an existing lease id
   * (one granted elsewhere) works too; until its first keepalive reply, its TTL counts from here.
   */
  constructor(
    client: LeaseClient,
    /** The lease id, to attach keys with. */
    readonly id: bigint,
    /** The effective TTL in seconds: the requested one, or the server's minimum if that is higher. */
    readonly ttl: bigint,
    /** Header of the grant's response. */
    readonly header: ResponseHeader,
  ) {
    super();
    this.#client = client;
  }

  /**
   * Keeps the lease alive until it is lost, revoked or released, or the client closes: a first
   * keepalive goes out at once, then one every TTL/3 (the TTL the server last reported). Calling it
   * again does nothing. Returns this handle. Throws the handle's {@link LeaseLostError} if it has
   * already ended, and ClientClosedError once the client is closed.
   */
  keepAlive(options: LeaseKeepAliveOptions = {}): this {
    if (this.#ended) throw this.#ended;
    if (this.#stopKeepAlive) return this;
    const { signal } = options;
    if (signal?.aborted) {
      this.release();
      return this;
    }
    const { keeper, hooks } = this.#client.keepAliveContext();
    const stop = keeper.add({
      id: this.id,
      ttl: this.ttl,
      aliveUntil: (grantSentAt.get(this) ?? performance.now()) + Number(this.ttl) * 1000,
      hooks,
      refreshed: (event) => this.#emit('keepalive', event),
      lost: (reason, cause) => this.#end(reason, cause),
    });
    const release = () => this.release();
    signal?.addEventListener('abort', release, { once: true });
    this.#stopKeepAlive = () => {
      stop();
      signal?.removeEventListener('abort', release);
    };
    return this;
  }

  /** The JSON form, which JSON.stringify uses: `id`, `ttl` (decimal strings) and `header`. */
  toJSON(): { readonly id: string; readonly ttl: string; readonly header: unknown } {
    const { id, ttl, header } = this;
    return fieldsToJSON({ id, ttl, header }) as { id: string; ttl: string; header: unknown };
  }

  /** True while `keepAlive()` refreshes the lease. */
  get keepingAlive(): boolean {
    return this.#stopKeepAlive !== undefined;
  }

  /** Aborts when the handle ends (see the class doc); its reason is the {@link LeaseLostError}. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      // A session's holds and waits each listen to it while they last; many at once are normal.
      setMaxListeners(Number.POSITIVE_INFINITY, this.#controller.signal);
      if (this.#ended) this.#controller.abort(this.#ended);
    }
    return this.#controller.signal;
  }

  /**
   * Resolves (never rejects) with the {@link LeaseLostError} when the handle ends, whatever the
   * reason: `await lease.lost` is safe to leave pending or unawaited.
   */
  get lost(): Promise<LeaseLostError> {
    this.#lost ??= this.#ended
      ? Promise.resolve(this.#ended)
      : new Promise((resolve) => {
          this.#resolveLost = resolve;
        });
    return this.#lost;
  }

  /**
   * Stops the keepalive first, so no refresh races the revoke, then revokes the lease, deleting its
   * keys (see {@link LeaseClient.revoke}). The handle ends with reason `revoked` even if the revoke
   * then fails; a lease that was already gone fails with LeaseNotFoundError.
   */
  revoke(options?: CallOptions): Promise<Acknowledged> {
    this.#end('revoked');
    return this.#client.revoke(this.id, options);
  }

  /**
   * Stops keeping the lease alive without revoking it (reason `released`): it and its keys live on
   * until its TTL runs out, unless another client keeps it alive.
   */
  release(): void {
    this.#end('released');
  }

  /** Remaining TTL of this lease. See {@link LeaseClient.timeToLive}. */
  timeToLive(options?: LeaseTimeToLiveOptions): Promise<LeaseTimeToLive> {
    return this.#client.timeToLive(this.id, options);
  }

  /**
   * Revokes the lease, for `await using`. A lease that is already gone (LeaseNotFoundError) or a
   * closed client (the lease then expires on its own) is not an error here.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.revoke();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code !== 'LEASE_NOT_FOUND' && code !== 'CLIENT_CLOSED') throw error;
    }
  }

  #end(reason: LeaseLostReason, cause?: EtcdError): void {
    if (this.#ended) return;
    const error = new LeaseLostError(this.id, reason, cause ? { cause } : undefined);
    this.#ended = error;
    const stop = this.#stopKeepAlive;
    this.#stopKeepAlive = undefined;
    stop?.();
    this.#controller?.abort(error);
    this.#resolveLost?.(error);
    this.#resolveLost = undefined;
    callHook(this.#client.keepAliveContext().hooks?.onLeaseLost, error);
    this.#emit('lost', error);
    this.removeAllListeners();
  }

  #emit(event: 'keepalive', payload: LeaseKeepAliveEvent): void;
  #emit(event: 'lost', payload: LeaseLostError): void;
  #emit(event: 'keepalive' | 'lost', payload: LeaseKeepAliveEvent | LeaseLostError): void {
    try {
      this.emit(event, payload as never);
    } catch (error) {
      // A throwing listener must not break the keepalive of other leases: it is reported like
      // any uncaught exception, outside the keepalive loop.
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}

function toTtl(ttlSeconds: number | bigint): bigint {
  if (typeof ttlSeconds === 'number' && !Number.isSafeInteger(ttlSeconds)) {
    throw new InvalidArgumentError(
      `lease TTL must be a whole number of seconds, got ${ttlSeconds}`,
    );
  }
  const ttl = BigInt(ttlSeconds);
  if (ttl < 1n) throw new InvalidArgumentError(`lease TTL must be at least 1 second, got ${ttl}`);
  return ttl;
}

function compareBigints(a: bigint, b: bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
