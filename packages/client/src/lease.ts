// Leases: time-limited grants that keys can be attached to. When a lease expires or is revoked,
// every key attached to it is deleted in one revision.
//
// Keepalive is not here yet: it arrives as `Lease.keepAlive()` backed by one shared LeaseKeepAlive
// stream per client (spec/client-behaviour.md, "Leases never die unnoticed"). `Lease` is the handle
// that feature extends, which is why `grant()` returns a class rather than a plain object.

import { type Acknowledged, acknowledged } from './acknowledged.js';
import { compareBytes } from './bytes.js';
import type { CallOptions, Rpc } from './connection/types.js';
import { InvalidArgumentError } from './errors.js';
import { etcdserverpb_Lease as methods } from './generated/methods.js';
import { type ResponseHeader, toResponseHeader } from './header.js';
import { plainBytes } from './plain-bytes.js';

/** Options of {@link LeaseClient.grant}. */
export interface LeaseGrantOptions extends CallOptions {
  /**
   * The lease id to use. When absent the server picks a random positive id. An id already in use
   * makes the grant fail with LeaseExistsError.
   */
  readonly id?: bigint;
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
  constructor(protected readonly rpc: Rpc) {}

  /**
   * Grants a lease of `ttlSeconds`. The server raises a TTL below its minimum (2 s with default
   * election settings) and reports the effective TTL in `Lease.ttl`; a TTL above 9,000,000,000 s
   * fails with LeaseTtlTooLargeError. Grants do not create a revision.
   *
   * Not retried once sent: a grant that reached a server may have created the lease.
   */
  async grant(ttlSeconds: number | bigint, options: LeaseGrantOptions = {}): Promise<Lease> {
    const ttl = toTtl(ttlSeconds);
    const response = await this.rpc.unary(
      methods.LeaseGrant,
      { TTL: ttl, ID: options.id ?? 0n },
      'write',
      options,
    );
    return new Lease(this, response.ID, response.TTL, toResponseHeader(response.header));
  }

  /**
   * Revokes a lease: every key attached to it is deleted in one revision, whose number is
   * `header.revision` (no revision is created when no key was attached). An unknown lease fails
   * with LeaseNotFoundError, so a revoke that is repeated after an unknown outcome reports that.
   */
  async revoke(id: bigint, options: CallOptions = {}): Promise<Acknowledged> {
    return acknowledged(await this.rpc.unary(methods.LeaseRevoke, { ID: id }, 'write', options));
  }

  /** Remaining and granted TTL of a lease, and optionally its keys. Unknown leases give ttl -1. */
  async timeToLive(id: bigint, options: LeaseTimeToLiveOptions = {}): Promise<LeaseTimeToLive> {
    const response = await this.rpc.unary(
      methods.LeaseTimeToLive,
      { ID: id, keys: options.keys ?? false },
      'read',
      options,
    );
    return {
      id: response.ID,
      ttl: response.TTL,
      grantedTtl: response.grantedTTL,
      // etcd lists them in hash-map order; sorted, equal states read equal.
      keys: response.keys.map(plainBytes).sort(compareBytes),
      header: toResponseHeader(response.header),
    };
  }

  /** Ids of every lease alive in the cluster, in ascending order. */
  async leases(options: CallOptions = {}): Promise<bigint[]> {
    const response = await this.rpc.unary(methods.LeaseLeases, {}, 'read', options);
    return response.leases.map((lease) => lease.ID ?? 0n).sort(compareBigints);
  }
}

/**
 * A granted lease. Attach keys to it by passing `lease.id` to a put; it expires `ttl` seconds after
 * the grant unless kept alive.
 */
export class Lease {
  constructor(
    private readonly client: LeaseClient,
    /** The lease id, to attach keys with. */
    readonly id: bigint,
    /** The effective TTL in seconds: the requested one, or the server's minimum if that is higher. */
    readonly ttl: bigint,
    /** Header of the grant's response. */
    readonly header: ResponseHeader,
  ) {}

  /** Revokes this lease, deleting its keys. See {@link LeaseClient.revoke}. */
  revoke(options?: CallOptions): Promise<Acknowledged> {
    return this.client.revoke(this.id, options);
  }

  /** Remaining TTL of this lease. See {@link LeaseClient.timeToLive}. */
  timeToLive(options?: LeaseTimeToLiveOptions): Promise<LeaseTimeToLive> {
    return this.client.timeToLive(this.id, options);
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
