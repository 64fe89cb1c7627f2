// The etcd release the server answers as. Each behaviour that changed between etcd releases reads
// its switch from the chosen version's traits here, so one table says what each mode does.
// '3.4' and '3.5' are checked against the real binaries (3.4.23, 3.5.30) by the conformance and
// differential suites; '3.6' follows etcd's source and CHANGELOG-3.6.md (cited per trait); '3.7'
// is etcd's main branch, the only one with RangeStream.

/** An etcd minor release the embedded server can answer as. */
export type EtcdVersion = '3.4' | '3.5' | '3.6' | '3.7';

/** Every version the server can answer as, oldest first. */
export const ETCD_VERSIONS: readonly EtcdVersion[] = ['3.4', '3.5', '3.6', '3.7'];

/** The version answered as by default: the newest one pinned against a real etcd binary. */
export const DEFAULT_ETCD_VERSION: EtcdVersion = '3.5';

/** What differs between the versions, as switches the services read. */
export interface EtcdVersionTraits {
  readonly version: EtcdVersion;
  /** The release Status reports (and `etcdkit-server --version` prints). */
  readonly release: string;
  /**
   * Status carries storage_version, db_size_quota and downgrade_info, and Snapshot's messages the
   * version (3.6: CHANGELOG-3.6.md lines 371, 418 and 325); older servers do not send them.
   */
  readonly storageVersion: boolean;
  /** HashKV answers hash_revision (3.6: CHANGELOG-3.6.md line 414). */
  readonly hashRevision: boolean;
  /**
   * HashKV of a revision a kept compaction was at answers the hash taken then, with the previous
   * compaction's revision (3.5 on: hashStorage.HashByRev, v3.5.33 server/mvcc/hash.go); after a
   * compaction at 0, HashKV of the current revision (0) answers compact_revision -1 that way.
   */
  readonly compactionHashes: boolean;
  /**
   * HashKV exactly at the compaction revision fails as compacted (3.4: `rev <= compactRev`,
   * v3.4.23 mvcc/kvstore.go line 201); later versions hash it.
   */
  readonly hashKvAtCompactionCompacted: boolean;
  /** The AuthStatus RPC exists (added in 3.5); 3.4 answers it Unimplemented. */
  readonly authStatus: boolean;
  /**
   * AuthStatus with auth on needs the root role (3.5 and 3.6: needAdminPermission lists it,
   * v3.6.14 server/etcdserver/apply/apply_auth.go line 249); etcd main answers anyone.
   */
  readonly authStatusNeedsAdmin: boolean;
  /**
   * RoleGet of the root role shows read-write on every key, whatever was granted (3.6: v3.6.14
   * server/auth/store.go line 663); 3.4 and 3.5 show what was granted.
   */
  readonly rootRoleShowsEveryKey: boolean;
  /**
   * A simple token ends in the raft index before its Authenticate entry's (3.5 on: the applier
   * reads the consistent index, v3.5.21 server/etcdserver/apply.go line 831, which 3.5 moves only
   * after the entry; checked on 3.5.30); 3.4 moved it first, so its tokens end in their own index.
   */
  readonly tokenIndexBeforeEntry: boolean;
  /**
   * Maintenance.Downgrade: 'none' on 3.4 (no such method: grpc-go's Unimplemented); '3.5' applies
   * ENABLE and CANCEL but answers them only with the request timeout's error (its applier returns
   * no result for the job's entry: v3.5.30 server/etcdserver/apply.go line 154; checked on
   * 3.5.30); '3.6' answers them, names the cluster version as major.minor and lets CANCEL without
   * a job succeed (v3.6.14 server/etcdserver/v3_server.go lines 1138-1161).
   */
  readonly downgrade: 'none' | '3.5' | '3.6';
  /**
   * 3.4's auth management: a granted permission's range is not checked (3.5 refuses an empty key
   * or an end at or below the key: v3.5.30 server/auth/store.go line 796); an empty new password
   * is hashed, so it opens the account (3.5 hashes only a non-empty one: v3_server.go line 700);
   * Authenticate checks the call's token like any request (3.5 skips it: v3_server.go line 857);
   * and a token is looked up while auth is off (3.5 ignores it then: store.go line 1164), where
   * every token is forgotten, so it fails. Checked on 3.4.23 and 3.5.30.
   */
  readonly legacyAuthManagement: boolean;
  /** The RangeStream RPC exists (3.7, etcd's main branch); older servers answer Unimplemented. */
  readonly rangeStream: boolean;
  /**
   * A watch started at the compaction revision gets the delete event recorded at that revision
   * (3.5 kept the tombstone at the compaction revision; 3.4 drops it from what watches replay;
   * checked on 3.4.23 and 3.5.30).
   */
  readonly compactionBoundaryDelete: boolean;
  /**
   * A watch with a negative start revision is refused as compacted (3.5.24 and 3.6.6 on:
   * CHANGELOG-3.5.md line 189, CHANGELOG-3.6.md line 170); 3.4 takes it as 0, now.
   */
  readonly refusesNegativeWatchStart: boolean;
  /**
   * 3.4's progress requests: answered at once with the store's revision, even without watches or
   * with watches not synced yet (v3.4.23 etcdserver/api/v3rpc/watch.go line 369 puts the reply on
   * the control channel); from 3.5.8 only when every watch is synced, in order with their events
   * ("Requested watcher progress notifications are not synchronised with stream", etcd PR 15695,
   * CHANGELOG-3.5.md line 476). Checked on 3.4.23 and 3.5.30.
   */
  readonly legacyWatchProgress: boolean;
  /**
   * A call proposed without a quorum fails with DeadlineExceeded when its context times out
   * (3.5 on); 3.4 answers Unknown "context deadline exceeded".
   */
  readonly noQuorumDeadlineExceeded: boolean;
  /**
   * A Lock waiter whose key vanished (its lease expired or was revoked) fails with "session
   * expired" on its turn, once no key is ahead (3.5 on: etcd issue 11456, Go's Mutex.Lock reads
   * its key after waitDeletes); 3.4 answers with the vanished key as held. Neither fails earlier.
   */
  readonly lockWaiterChecksOwnKey: boolean;
  /**
   * A watch from a key on (range_end "\0") needs read up to the end of the key space (3.5.33 and
   * 3.6.14 on: the check runs before range_end becomes empty, GHSA-xg4h-6gfc-h4m8,
   * CHANGELOG-3.5.md line 26, CHANGELOG-3.6.md line 27); up to 3.5.30, read on the key alone
   * (v3.5.30 server/etcdserver/api/v3rpc/watch.go lines 266-287). Checked on 3.4.23 and 3.5.30.
   */
  readonly watchFromKeyChecksWholeRange: boolean;
  /**
   * A token sent as `authorization: Bearer <token>` is the token after "Bearer " (3.5.32 and
   * 3.6.13 on: v3.5.33 server/auth/store.go line 1181, CHANGELOG-3.5.md line 50); up to 3.5.30 the
   * whole value is the token, so it is unknown. Checked on 3.4.23 and 3.5.30.
   */
  readonly bearerTokens: boolean;
  /**
   * 3.4's permission checks of KV, lease and maintenance calls. A txn's ops are checked without
   * looking into nested txns, and a put in a txn needs write on its key alone (3.5 checks nested
   * txns, prev_kv and the lease: v3.5.30 server/etcdserver/apply_auth.go line 155, CHANGELOG-3.5.md
   * lines 87 and 116); compaction is anyone's (3.5 wants root: apply_auth.go needAdminPermission);
   * lease calls and Status, MemberList and listing alarms need no user, a keep-alive, TimeToLive and
   * LeaseLeases no permission (3.5.28 guards them: CHANGELOG-3.5.md line 115, v3_server.go lines
   * 373-415 and 541-550). Checked on 3.4.23 and 3.5.30.
   */
  readonly legacyPermissionChecks: boolean;
  /**
   * The maintenance server's own checks. '3.4': Hash, HashKV, Defragment and Snapshot want root
   * and answer the auth store's error unmapped (status Unknown, "auth: ..."); Status, MemberList
   * and MoveLeader look at no token, and alarms are anyone's, an unknown token answered unmapped
   * (v3.4.23 etcdserver/api/v3rpc/maintenance.go lines 267-311, member.go line 90).
   * '3.5': those four the same; Status, MoveLeader and raising alarms want root, mapped to gRPC
   * errors (v3.5.30 server/etcdserver/api/v3rpc/maintenance.go, authMaintenanceServer). '3.6':
   * everything mapped, Status needs only a user (v3.6.14 maintenance.go lines 337-377). Checked on
   * 3.4.23 and 3.5.30.
   */
  readonly maintenanceAuth: '3.4' | '3.5' | '3.6';
}

const RELEASES: Readonly<Record<EtcdVersion, string>> = {
  '3.4': '3.4.23',
  '3.5': '3.5.30',
  // The newest 3.6 release CHANGELOG-3.6.md records (v3.6.14, 2026-07-23).
  '3.6': '3.6.14',
  '3.7': '3.7.0',
};

/** The traits of `version`. */
export function etcdVersionTraits(version: EtcdVersion): EtcdVersionTraits {
  const from = (minor: number) => Number(version.split('.')[1]) >= minor;
  return {
    version,
    release: RELEASES[version],
    storageVersion: from(6),
    hashRevision: from(6),
    compactionHashes: from(5),
    hashKvAtCompactionCompacted: !from(5),
    authStatus: from(5),
    authStatusNeedsAdmin: from(5) && !from(7),
    rootRoleShowsEveryKey: from(6),
    tokenIndexBeforeEntry: from(5),
    downgrade: from(6) ? '3.6' : from(5) ? '3.5' : 'none',
    legacyAuthManagement: !from(5),
    rangeStream: from(7),
    compactionBoundaryDelete: from(5),
    refusesNegativeWatchStart: from(5),
    legacyWatchProgress: !from(5),
    noQuorumDeadlineExceeded: from(5),
    lockWaiterChecksOwnKey: from(5),
    watchFromKeyChecksWholeRange: from(6),
    bearerTokens: from(6),
    legacyPermissionChecks: !from(5),
    maintenanceAuth: from(6) ? '3.6' : from(5) ? '3.5' : '3.4',
  };
}

/** An `etcdVersion` option or `--etcd-version` flag that names no version the server knows. */
export class UnknownEtcdVersionError extends Error {
  /** Stable identifier of the failure. */
  readonly code = 'UNKNOWN_ETCD_VERSION';

  constructor(readonly given: unknown) {
    super(
      `unknown etcd version ${JSON.stringify(given)}: the embedded server answers as ${ETCD_VERSIONS.map((v) => `'${v}'`).join(', ')}`,
    );
    this.name = 'UnknownEtcdVersionError';
  }
}

/**
 * The version `given` names: `undefined` is the default; `'3.5'`, `'v3.5'` and a full release
 * like `'3.5.21'` name 3.5. Throws {@link UnknownEtcdVersionError} for anything else.
 */
export function parseEtcdVersion(given: unknown): EtcdVersion {
  if (given === undefined) return DEFAULT_ETCD_VERSION;
  if (typeof given !== 'string') throw new UnknownEtcdVersionError(given);
  const match = /^v?(\d+\.\d+)(?:\.\d+)?$/.exec(given.trim());
  const minor = match?.[1];
  const known = ETCD_VERSIONS.find((version) => version === minor);
  if (known === undefined) throw new UnknownEtcdVersionError(given);
  return known;
}
