// The Lease requests as a single etcd member handles them. Grant and revoke go through raft (each
// takes a log entry, even when it then fails); keep-alive, time-to-live and the lease list are
// answered from the lessor directly, as etcd's leader does. Expiry is checked on the server's Clock
// every 500 ms (etcd's lessor loop): each lease found expired is revoked by its own proposal, so its
// keys go in a revision of their own. Headers carry the revision only; the service adds the rest.
// With auth, each request is checked where etcd checks it; requests that come with no credentials
// are the server's own (expiry) and are not checked.
import { type etcdserverpb, etcdserverpb as pb } from '@etcdkit/client/protocol';
import { bigintOf, revisionHeader } from '../api/requests.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { Caller } from '../auth/caller.js';
import type { CallCredentials } from '../auth/types.js';
import { type Clock, every, type Timer } from '../clock.js';
import { ProposalKind, type ProposalLog } from '../consensus/proposals.js';
import type { WriteGuard } from '../consensus/write-guard.js';
import { EtcdServerError } from '../errors.js';
import type { MvccStore } from '../mvcc/store.js';
import type { Lease } from './lease.js';
import type { LeaseTable } from './lease-table.js';

export type LeaseGrantRequest = etcdserverpb.LeaseGrantRequest.$Properties;
export type LeaseGrantResponse = etcdserverpb.LeaseGrantResponse.$Properties;
export type LeaseRevokeRequest = etcdserverpb.LeaseRevokeRequest.$Properties;
export type LeaseRevokeResponse = etcdserverpb.LeaseRevokeResponse.$Properties;
export type LeaseTimeToLiveRequest = etcdserverpb.LeaseTimeToLiveRequest.$Properties;
export type LeaseTimeToLiveResponse = etcdserverpb.LeaseTimeToLiveResponse.$Properties;
export type LeaseLeasesResponse = etcdserverpb.LeaseLeasesResponse.$Properties;

/** The longest TTL etcd grants, in seconds. */
export const MAX_LEASE_TTL = 9_000_000_000;
/** etcd's minimum TTL with its default timing: ceil(1.5 x the 1 s election timeout). */
export const DEFAULT_MIN_LEASE_TTL = 2;
/** How often etcd's lessor looks for expired leases. */
export const DEFAULT_LEASE_CHECK_INTERVAL_MS = 500;
/** etcd revokes at most half its revoke rate (1000 per second) per check; the rest wait a check. */
const MAX_REVOKES_PER_CHECK = 500;
/** When the revoke of an expired lease fails (a CORRUPT alarm), etcd looks again 3 s later. */
const EXPIRED_LEASE_RETRY_MS = 3_000;
/** Lease ids etcd picks are request ids with the sign bit cleared. */
const POSITIVE_ID_MASK = (1n << 63n) - 1n;
/** What Go's Duration.Seconds() gives for a lease that never expires (math.MaxInt64 ns). */
const NEVER_EXPIRES_SECONDS = 9_223_372_036n;

/** What the applier works on. */
export interface LeaseApplierOptions {
  readonly table: LeaseTable;
  readonly store: MvccStore;
  readonly proposals: ProposalLog;
  readonly clock: Clock;
  /** TTLs below this many seconds are raised to it. Default {@link DEFAULT_MIN_LEASE_TTL}. */
  readonly minTtl?: number;
  /** The backend quota and alarms; none: nothing is refused. */
  readonly guard?: WriteGuard;
  /** Users and permissions; none: every request is allowed. */
  readonly authorizer?: Authorizer;
}

/** Grants, renews, revokes and expires leases. */
export class LeaseApplier {
  readonly #table: LeaseTable;
  readonly #store: MvccStore;
  readonly #proposals: ProposalLog;
  readonly #clock: Clock;
  readonly #minTtl: number;
  readonly #guard: WriteGuard | undefined;
  readonly #authorizer: Authorizer | undefined;
  #expiryChecks: Timer | undefined;

  constructor(options: LeaseApplierOptions) {
    this.#table = options.table;
    this.#store = options.store;
    this.#proposals = options.proposals;
    this.#clock = options.clock;
    this.#minTtl = options.minTtl ?? DEFAULT_MIN_LEASE_TTL;
    this.#guard = options.guard;
    this.#authorizer = options.authorizer;
  }

  /**
   * LeaseGrant. ID 0 lets the server choose, as etcd does: the next raft request id with the sign
   * bit cleared, so ids are positive and grow with every grant. A TTL below the minimum is raised
   * and the response shows the TTL granted. No revision is made.
   */
  grant(
    r: LeaseGrantRequest,
    requestBytes: number,
    credentials?: CallCredentials,
  ): LeaseGrantResponse {
    this.#guard?.beforeProposal({ kind: 'leaseGrant' });
    const requested = bigintOf(r.ID);
    let id = requested;
    while (id === 0n) id = this.#proposals.nextRequestId() & POSITIVE_ID_MASK;
    // Any user may grant a lease, but there must be one.
    const caller = this.#identify(credentials);
    caller?.requireUser();
    const ttl = bigintOf(r.TTL);
    // The proposal carries the chosen id, which changes the request's size.
    const proposedBytes =
      id === requested
        ? requestBytes
        : pb.LeaseGrantRequest.encode({ ID: id, TTL: ttl }).finish().length;
    this.#proposals.propose(ProposalKind.leaseGrant, proposedBytes, caller?.info);
    this.#guard?.atApply({ kind: 'leaseGrant' });
    if (ttl > BigInt(MAX_LEASE_TTL)) throw new EtcdServerError('LEASE_TTL_TOO_LARGE');
    if (this.#table.has(id)) throw new EtcdServerError('LEASE_EXISTS');
    const granted = ttl < BigInt(this.#minTtl) ? this.#minTtl : Number(ttl);
    this.#table.grant(id, granted, this.#clock.now() + granted * 1000);
    return { header: revisionHeader(this.#store.revision), ID: id, TTL: BigInt(granted) };
  }

  /**
   * LeaseRevoke: deletes the lease's keys in one revision (none without keys). With auth, the user
   * must be allowed to write every one of those keys.
   */
  revoke(
    r: LeaseRevokeRequest,
    requestBytes: number,
    credentials?: CallCredentials,
  ): LeaseRevokeResponse {
    const caller = this.#identify(credentials);
    caller?.requireUser();
    this.#proposals.propose(ProposalKind.leaseRevoke, requestBytes, caller?.info);
    this.#guard?.atApply({ kind: 'leaseRevoke' });
    caller?.checkLeaseRevoke(bigintOf(r.ID));
    if (!this.#table.revoke(bigintOf(r.ID), this.#store)) {
      throw new EtcdServerError('LEASE_NOT_FOUND');
    }
    return { header: revisionHeader(this.#store.revision) };
  }

  /**
   * One keep-alive: restarts the lease's full TTL and returns it, or 0 for an unknown lease or one
   * whose time is up (etcd waits for such a lease to be revoked, then answers 0 too). With auth,
   * the user must be allowed to write the lease's keys, or the keep-alive stream fails.
   */
  renew(leaseId: bigint, credentials?: CallCredentials): bigint {
    this.#identify(credentials)?.checkLeaseRenew(leaseId);
    const lease = this.#table.get(leaseId);
    const now = this.#clock.now();
    if (lease === undefined || lease.isExpired(now)) return 0n;
    this.#table.setExpiry(lease, now + lease.ttl * 1000);
    return BigInt(lease.ttl);
  }

  /**
   * LeaseTimeToLive: whole seconds left, rounded toward zero as Go converts a duration, and the
   * granted TTL; an unknown lease answers TTL -1, not an error. On etcd some time always passes
   * between two requests, so Grant(10) then TimeToLive answers 9; a virtual clock can stand still,
   * so the time left is read as of a moment after now (see secondsLeft), which gives 9 there too.
   */
  timeToLive(r: LeaseTimeToLiveRequest, credentials?: CallCredentials): LeaseTimeToLiveResponse {
    const id = bigintOf(r.ID);
    this.#identify(credentials)?.checkLeaseTimeToLive(id, r.keys === true);
    const header = revisionHeader(this.#store.revision);
    const lease = this.#table.get(id);
    if (lease === undefined) return { header, ID: id, TTL: -1n };
    const remaining = lease.remainingMs(this.#clock.now());
    return {
      header,
      ID: id,
      TTL: Number.isFinite(remaining) ? BigInt(secondsLeft(remaining)) : NEVER_EXPIRES_SECONDS,
      grantedTTL: BigInt(lease.ttl),
      keys: r.keys ? lease.keys() : [],
    };
  }

  /**
   * LeaseLeases: every lease, soonest expiry first, as etcd sorts them. With auth, a user who is
   * not an admin must be allowed to read every key of every lease.
   */
  leases(credentials?: CallCredentials): LeaseLeasesResponse {
    this.#identify(credentials)?.checkLeaseList();
    const leases = this.#table
      .all()
      .sort((a, b) => a.expiresAt - b.expiresAt || a.grantSequence - b.grantSequence);
    return {
      header: revisionHeader(this.#store.revision),
      leases: leases.map((lease) => ({ ID: lease.id })),
    };
  }

  /** Starts looking for expired leases every `intervalMs` of the clock. */
  startExpiryChecks(intervalMs = DEFAULT_LEASE_CHECK_INTERVAL_MS): void {
    this.#expiryChecks ??= every(this.#clock, intervalMs, () => this.revokeExpired());
  }

  /** Stops the expiry checks (the server is stopping). */
  stopExpiryChecks(): void {
    this.#expiryChecks?.cancel();
    this.#expiryChecks = undefined;
  }

  /**
   * One expiry check: revokes the leases whose time is up, earliest expiry first, each as its own
   * proposal. Returns how many were revoked.
   */
  revokeExpired(): number {
    const now = this.#clock.now();
    let revoked = 0;
    for (let checked = 0; checked < MAX_REVOKES_PER_CHECK; checked++) {
      const lease = this.#table.nextExpired(now);
      if (lease === undefined) break;
      if (this.#revokeExpiredLease(lease, now)) revoked++;
    }
    return revoked;
  }

  /**
   * Expires a lease now, for tests: it is revoked at once, as the next expiry check would, in a
   * revision of its own. False when there is no such lease.
   */
  expire(leaseId: bigint): boolean {
    const lease = this.#table.get(leaseId);
    if (lease === undefined) return false;
    const now = this.#clock.now();
    this.#table.setExpiry(lease, now);
    return this.#revokeExpiredLease(lease, now);
  }

  /** The caller presenting `credentials`; none for the server's own requests or without auth. */
  #identify(credentials: CallCredentials | undefined): Caller | undefined {
    return credentials === undefined ? undefined : this.#authorizer?.identify(credentials);
  }

  #revokeExpiredLease(lease: Lease, now: number): boolean {
    const requestBytes = pb.LeaseRevokeRequest.encode({ ID: lease.id }).finish().length;
    try {
      this.revoke({ ID: lease.id }, requestBytes);
      return true;
    } catch (error) {
      if (!(error instanceof EtcdServerError)) throw error;
      // Refused by an alarm: the lease stays, expired, and is tried again later, as in etcd.
      this.#table.retryExpiry(lease, now + EXPIRED_LEASE_RETRY_MS);
      return false;
    }
  }
}

/**
 * Whole seconds left of `remainingMs`, rounded toward zero, as of an instant after now: exactly 10 s
 * left reads 9 (as any later instant would), 0 and -0.5 s read 0, -1 s reads -1.
 */
function secondsLeft(remainingMs: number): number {
  return remainingMs > 0 ? Math.ceil(remainingMs / 1000) - 1 : Math.trunc(remainingMs / 1000);
}
