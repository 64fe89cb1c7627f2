// The sender of one request, identified, and the permission checks etcd makes for each kind of
// request (server/etcdserver/apply/auth.go and the checks of v3_server.go). Each check throws the
// EtcdServerError etcd answers with; while auth is off every check passes.

import type {
  Compare,
  DeleteRangeRequest,
  PutRequest,
  RangeRequest,
  RequestOp,
  TxnRequest,
} from '../api/requests.js';
import { bytesOf } from '../api/requests.js';
import { EtcdServerError } from '../errors.js';
import type { AuthStore } from './auth-store.js';
import type { AuthInfo } from './types.js';

/** The leases as the checks see them: the keys attached to each. */
export interface LeaseKeys {
  /** The keys attached to a lease; none for an unknown lease. */
  keys(leaseId: bigint): Uint8Array[];
  /** Every lease. */
  all(): ReadonlyArray<{ keys(): Uint8Array[] }>;
}

const SINGLE_KEY = new Uint8Array(0);

/** One request's sender and the checks of what it asks. */
export class Caller {
  /** Who sent the request; undefined while auth is off or when it presented nothing. */
  readonly info: AuthInfo | undefined;
  readonly #store: AuthStore;
  readonly #leases: LeaseKeys;

  constructor(store: AuthStore, leases: LeaseKeys, info: AuthInfo | undefined) {
    this.#store = store;
    this.#leases = leases;
    this.info = info;
  }

  /**
   * Calls that need some user, whatever it may do (etcd's requireAuthInfo): USER_EMPTY. etcd 3.4
   * asks for none (lease calls, Status, MemberList, listing alarms).
   */
  requireUser(): void {
    if (this.#store.legacyPermissionChecks) return;
    if (this.#store.enabled && this.info === undefined) throw new EtcdServerError('USER_EMPTY');
  }

  /** Compaction: admins only; anyone on etcd 3.4. */
  checkCompact(): void {
    if (!this.#store.legacyPermissionChecks) this.requireAdmin();
  }

  /** Admin calls (maintenance, membership, compaction, user and role management). */
  requireAdmin(): void {
    this.#store.checkAdmin(this.info);
  }

  /** Range, and a watch of the same keys. */
  checkRange(key: Uint8Array, rangeEnd: Uint8Array): void {
    this.#store.checkKeys(this.info, 'read', key, rangeEnd);
  }

  /** Range and RangeStream requests. */
  checkRangeRequest(r: RangeRequest): void {
    this.checkRange(bytesOf(r.key), bytesOf(r.rangeEnd));
  }

  /**
   * Put: write on the key; with a lease that has keys, write on those too (a user who could not
   * revoke the lease may not attach to it); with prev_kv, read on the key.
   */
  checkPut(r: PutRequest): void {
    const key = bytesOf(r.key);
    this.#store.checkKeys(this.info, 'write', key, SINGLE_KEY);
    this.#checkLeaseKeysWritable(r.lease ?? 0n);
    if (r.prevKv) this.#store.checkKeys(this.info, 'read', key, SINGLE_KEY);
  }

  /** DeleteRange: write on the range; with prev_kv, read on it too. */
  checkDeleteRange(r: DeleteRangeRequest): void {
    const key = bytesOf(r.key);
    const rangeEnd = bytesOf(r.rangeEnd);
    this.#store.checkKeys(this.info, 'write', key, rangeEnd);
    if (r.prevKv) this.#store.checkKeys(this.info, 'read', key, rangeEnd);
  }

  /**
   * Txn: read on every compare, then every op of both branches, whichever runs, nested txns
   * included (etcd checks the whole request before it is applied). etcd 3.4 skips nested txns
   * and checks a put for write on its key alone.
   */
  checkTxn(r: TxnRequest): void {
    for (const compare of r.compare ?? []) this.#checkCompare(compare);
    const checkOps = this.#store.legacyPermissionChecks ? this.#checkOpsAs34 : this.#checkOps;
    checkOps.call(this, r.success ?? []);
    checkOps.call(this, r.failure ?? []);
  }

  /** LeaseRevoke: write on every key attached to the lease, unless the user is an admin. */
  checkLeaseRevoke(leaseId: bigint): void {
    this.#checkLeaseKeysWritable(leaseId);
  }

  /** A keep-alive: a user, and write on every key of the lease unless an admin (3.4: nothing). */
  checkLeaseRenew(leaseId: bigint): void {
    if (!this.#store.enabled || this.#store.legacyPermissionChecks) return;
    this.requireUser();
    if (this.#store.isAdmin(this.info)) return;
    for (const key of this.#leases.keys(leaseId)) {
      this.#store.checkKeys(this.info, 'write', key, SINGLE_KEY);
    }
  }

  /**
   * LeaseTimeToLive: a user; asking for the keys needs read on each, unless an admin (3.4:
   * nothing).
   */
  checkLeaseTimeToLive(leaseId: bigint, withKeys: boolean): void {
    if (this.#store.legacyPermissionChecks) return;
    this.requireUser();
    if (!withKeys || this.#store.isAdmin(this.info)) return;
    for (const key of this.#leases.keys(leaseId)) {
      this.#store.checkKeys(this.info, 'read', key, SINGLE_KEY);
    }
  }

  /** LeaseLeases: a user, and read on every key of every lease unless an admin (3.4: nothing). */
  checkLeaseList(): void {
    if (!this.#store.enabled || this.#store.legacyPermissionChecks) return;
    this.requireUser();
    if (this.#store.isAdmin(this.info)) return;
    for (const lease of this.#leases.all()) {
      for (const key of lease.keys()) this.#store.checkKeys(this.info, 'read', key, SINGLE_KEY);
    }
  }

  /** UserGet: admins may read any user, everyone else only themselves. */
  checkUserGet(name: string): void {
    // etcd compares with the name of an empty AuthInfo when there is no user: "".
    if (this.#store.isAdmin(this.info) || name === (this.info?.username ?? '')) return;
    this.requireAdmin();
  }

  /** RoleGet: admins may read any role, everyone else the roles they hold. */
  checkRoleGet(role: string): void {
    if (this.#store.isAdmin(this.info)) return;
    if (this.info !== undefined && this.#store.hasRole(this.info.username, role)) return;
    this.requireAdmin();
  }

  #checkCompare(compare: Compare): void {
    this.checkRange(bytesOf(compare.key), bytesOf(compare.rangeEnd));
  }

  #checkOps(ops: readonly RequestOp[]): void {
    for (const op of ops) {
      if (op.requestRange) this.checkRangeRequest(op.requestRange);
      else if (op.requestPut) this.checkPut(op.requestPut);
      else if (op.requestDeleteRange) this.checkDeleteRange(op.requestDeleteRange);
      else if (op.requestTxn) this.checkTxn(op.requestTxn);
    }
  }

  /** The ops of a txn as etcd 3.4 checks them (v3.4.23 etcdserver/apply_auth.go line 109). */
  #checkOpsAs34(ops: readonly RequestOp[]): void {
    for (const op of ops) {
      if (op.requestRange) this.checkRangeRequest(op.requestRange);
      else if (op.requestPut) {
        this.#store.checkKeys(this.info, 'write', bytesOf(op.requestPut.key), SINGLE_KEY);
      } else if (op.requestDeleteRange) this.checkDeleteRange(op.requestDeleteRange);
    }
  }

  #checkLeaseKeysWritable(leaseId: bigint): void {
    if (leaseId === 0n || this.#store.isAdmin(this.info)) return;
    for (const key of this.#leases.keys(leaseId)) {
      this.#store.checkKeys(this.info, 'write', key, SINGLE_KEY);
    }
  }
}
