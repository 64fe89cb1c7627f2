// The catalog of etcd's errors (wire status, etcd 3.4's exact message): the client's error classes
// and the embedded server's answers both come from it, so the two cannot disagree.
import { GrpcStatus as S } from './transport/types.js';

/** One entry of the catalog: the gRPC status etcd sends and its exact message. */
export type EtcdErrorEntry = readonly [status: S, message: string];

/**
 * Every error etcd sends that the client has a class for, keyed by the class's stable `code`.
 * The keys are the client's public codes (`USER_ALREADY_EXISTS`, where etcd's Go name says
 * `ErrUserAlreadyExist`).
 */
export const etcdErrors = {
  // KV and Txn validation.
  EMPTY_KEY: [S.InvalidArgument, 'etcdserver: key is not provided'],
  KEY_NOT_FOUND: [S.InvalidArgument, 'etcdserver: key not found'],
  VALUE_PROVIDED: [S.InvalidArgument, 'etcdserver: value is provided'],
  LEASE_PROVIDED: [S.InvalidArgument, 'etcdserver: lease is provided'],
  TOO_MANY_TXN_OPS: [S.InvalidArgument, 'etcdserver: too many operations in txn request'],
  DUPLICATE_KEY: [S.InvalidArgument, 'etcdserver: duplicate key given in txn request'],
  // etcd 3.6+ (3.4 takes an unknown sort order as none).
  INVALID_SORT_OPTION: [S.InvalidArgument, 'etcdserver: invalid sort option'],
  REQUEST_TOO_LARGE: [S.InvalidArgument, 'etcdserver: request is too large'],
  // etcd 3.4 maps this one to rpctypes' client-side error type, which is no gRPC status, so
  // grpc-go sends it as Unknown (as MEMBER_NOT_ENOUGH_STARTED below).
  TOO_MANY_REQUESTS: [S.Unknown, 'etcdserver: too many requests'],
  // Revisions and quota.
  COMPACTED: [S.OutOfRange, 'etcdserver: mvcc: required revision has been compacted'],
  FUTURE_REVISION: [S.OutOfRange, 'etcdserver: mvcc: required revision is a future revision'],
  NO_SPACE: [S.ResourceExhausted, 'etcdserver: mvcc: database space exceeded'],
  // Leases and watches.
  LEASE_NOT_FOUND: [S.NotFound, 'etcdserver: requested lease not found'],
  LEASE_EXISTS: [S.FailedPrecondition, 'etcdserver: lease already exists'],
  LEASE_TTL_TOO_LARGE: [S.OutOfRange, 'etcdserver: too large lease TTL'],
  WATCH_CANCELED: [S.Cancelled, 'etcdserver: watch canceled'],
  // Cluster membership.
  MEMBER_EXISTS: [S.FailedPrecondition, 'etcdserver: member ID already exist'],
  PEER_URL_EXISTS: [S.FailedPrecondition, 'etcdserver: Peer URLs already exists'],
  // Declared FailedPrecondition, sent as Unknown: see TOO_MANY_REQUESTS.
  MEMBER_NOT_ENOUGH_STARTED: [
    S.Unknown,
    'etcdserver: re-configuration failed due to not enough started members',
  ],
  MEMBER_BAD_URLS: [S.InvalidArgument, 'etcdserver: given member URLs are invalid'],
  MEMBER_NOT_FOUND: [S.NotFound, 'etcdserver: member not found'],
  MEMBER_NOT_LEARNER: [S.FailedPrecondition, 'etcdserver: can only promote a learner member'],
  LEARNER_NOT_READY: [
    S.FailedPrecondition,
    'etcdserver: can only promote a learner member which is in sync with leader',
  ],
  TOO_MANY_LEARNERS: [S.FailedPrecondition, 'etcdserver: too many learner members in cluster'],
  // Newer than etcd 3.4 (a client's cluster-id header that names another cluster).
  CLUSTER_ID_MISMATCH: [S.FailedPrecondition, 'etcdserver: cluster ID mismatch'],
  // Auth.
  ROOT_USER_NOT_EXIST: [S.FailedPrecondition, 'etcdserver: root user does not exist'],
  ROOT_ROLE_NOT_EXIST: [S.FailedPrecondition, 'etcdserver: root user does not have root role'],
  USER_ALREADY_EXISTS: [S.FailedPrecondition, 'etcdserver: user name already exists'],
  USER_EMPTY: [S.InvalidArgument, 'etcdserver: user name is empty'],
  USER_NOT_FOUND: [S.FailedPrecondition, 'etcdserver: user name not found'],
  ROLE_ALREADY_EXISTS: [S.FailedPrecondition, 'etcdserver: role name already exists'],
  ROLE_NOT_FOUND: [S.FailedPrecondition, 'etcdserver: role name not found'],
  ROLE_EMPTY: [S.InvalidArgument, 'etcdserver: role name is empty'],
  AUTH_FAILED: [
    S.InvalidArgument,
    'etcdserver: authentication failed, invalid user ID or password',
  ],
  // Newer than etcd 3.4, which has no answer for a grant without a permission.
  PERMISSION_NOT_GIVEN: [S.InvalidArgument, 'etcdserver: permission not given'],
  PERMISSION_DENIED: [S.PermissionDenied, 'etcdserver: permission denied'],
  ROLE_NOT_GRANTED: [S.FailedPrecondition, 'etcdserver: role is not granted to the user'],
  PERMISSION_NOT_GRANTED: [
    S.FailedPrecondition,
    'etcdserver: permission is not granted to the role',
  ],
  AUTH_NOT_ENABLED: [S.FailedPrecondition, 'etcdserver: authentication is not enabled'],
  INVALID_AUTH_TOKEN: [S.Unauthenticated, 'etcdserver: invalid auth token'],
  INVALID_AUTH_MGMT: [S.InvalidArgument, 'etcdserver: invalid auth management'],
  AUTH_OLD_REVISION: [S.InvalidArgument, 'etcdserver: revision of auth store is old'],
  // Cluster health.
  NO_LEADER: [S.Unavailable, 'etcdserver: no leader'],
  NOT_LEADER: [S.FailedPrecondition, 'etcdserver: not leader'],
  LEADER_CHANGED: [S.Unavailable, 'etcdserver: leader changed'],
  NOT_CAPABLE: [S.Unavailable, 'etcdserver: not capable'],
  SERVER_STOPPED: [S.Unavailable, 'etcdserver: server stopped'],
  REQUEST_TIMEOUT: [S.Unavailable, 'etcdserver: request timed out'],
  UNHEALTHY: [S.Unavailable, 'etcdserver: unhealthy cluster'],
  CORRUPT: [S.DataLoss, 'etcdserver: corrupt cluster'],
  NOT_SUPPORTED_FOR_LEARNER: [S.Unavailable, 'etcdserver: rpc not supported for learner'],
  BAD_LEADER_TRANSFEREE: [S.FailedPrecondition, 'etcdserver: bad leader transferee'],
  // Maintenance.Downgrade (etcd 3.5+; 3.4 has no such method).
  WRONG_DOWNGRADE_VERSION_FORMAT: [
    S.InvalidArgument,
    'etcdserver: wrong downgrade target version format',
  ],
  INVALID_DOWNGRADE_TARGET_VERSION: [
    S.InvalidArgument,
    'etcdserver: invalid downgrade target version',
  ],
  DOWNGRADE_IN_PROCESS: [
    S.FailedPrecondition,
    'etcdserver: cluster has a downgrade job in progress',
  ],
  NO_INFLIGHT_DOWNGRADE: [S.FailedPrecondition, 'etcdserver: no inflight downgrade job'],
  // A Downgrade action etcd does not know; etcd maps this error to no gRPC status.
  UNKNOWN_METHOD: [S.Unknown, 'etcdserver: unknown method'],
  // Newer than etcd 3.4, which has no gRPC status for a canceled request.
  REQUEST_CANCELED: [S.Cancelled, 'etcdserver: request canceled'],
  // The Lock and Election services. etcd runs them on its in-process client, whose errors carry no
  // gRPC status, so grpc-go sends every one of them as Unknown with Go's message.
  ELECTION_NOT_LEADER: [S.Unknown, 'election: not leader'],
  ELECTION_NO_LEADER: [S.Unknown, 'election: no leader'],
  MISSING_LEADER_KEY: [S.Unknown, '"leader" field must be provided'],
  // etcd 3.5+: a Lock whose key vanished while it waited (3.4 reports the lock as held).
  LOCK_SESSION_EXPIRED: [S.Unknown, 'mutex: session is expired'],
  // Not etcd's: etcd reports leadership even when the candidate's key vanished while it waited
  // (etcd issue 11051); the embedded server fails the Campaign instead, in the words of the mutex.
  ELECTION_SESSION_EXPIRED: [S.Unknown, 'election: session is expired'],
} as const satisfies Record<string, EtcdErrorEntry>;

/** The `code` of each error of {@link etcdErrors}. */
export type EtcdServerErrorCode = keyof typeof etcdErrors;

/** Another message etcd sends for an error of the catalog: `means` is the entry it stands for. */
export interface EtcdErrorVariant {
  readonly means: EtcdServerErrorCode;
  readonly status: S;
  readonly message: string;
  /** The message means `means` only under `status` (the same words under another are not etcd's). */
  readonly onlyWithStatus?: true;
}

/** Messages etcd sends for an error of the catalog besides the entry's own. */
export const etcdErrorVariants = {
  TIMEOUT_DUE_TO_LEADER_FAIL: {
    means: 'REQUEST_TIMEOUT',
    status: S.Unavailable,
    message: 'etcdserver: request timed out, possibly due to previous leader failure',
  },
  TIMEOUT_DUE_TO_CONNECTION_LOST: {
    means: 'REQUEST_TIMEOUT',
    status: S.Unavailable,
    message: 'etcdserver: request timed out, possibly due to connection lost',
  },
  TIMEOUT_WAIT_APPLIED_INDEX: {
    means: 'REQUEST_TIMEOUT',
    status: S.Unavailable,
    message: 'etcdserver: request timed out, waiting for the applied index took too long',
  },
  // A proposal that waited out the request timeout: etcd 3.4 returns Go's context error unmapped.
  // Under DeadlineExceeded the same words are gRPC's own deadline.
  PROPOSAL_TIMEOUT: {
    means: 'REQUEST_TIMEOUT',
    status: S.Unknown,
    message: 'context deadline exceeded',
    onlyWithStatus: true,
  },
  // A password sent for a user created without one: the auth store's own text, with no gRPC status.
  NO_PASSWORD_USER: {
    means: 'AUTH_FAILED',
    status: S.Unknown,
    message: 'auth: authentication failed, password was given for no password user',
  },
  // etcd 3.4's and 3.5's maintenance servers answer their root checks (Hash, HashKV, Defragment,
  // Snapshot; 3.4 also Alarm) with the auth store's own errors, unmapped (v3.4.23
  // etcdserver/api/v3rpc/maintenance.go, v3.5.30 server/etcdserver/api/v3rpc/maintenance.go).
  AUTH_STORE_USER_EMPTY: {
    means: 'USER_EMPTY',
    status: S.Unknown,
    message: 'auth: user name is empty',
  },
  AUTH_STORE_PERMISSION_DENIED: {
    means: 'PERMISSION_DENIED',
    status: S.Unknown,
    message: 'auth: permission denied',
  },
  AUTH_STORE_INVALID_TOKEN: {
    means: 'INVALID_AUTH_TOKEN',
    status: S.Unknown,
    message: 'auth: invalid auth token',
  },
} as const satisfies Record<string, EtcdErrorVariant>;

/** The name of each variant of {@link etcdErrorVariants}. */
export type EtcdErrorVariantName = keyof typeof etcdErrorVariants;
