// Errors the server answers with. Clients match them by gRPC status and exact message (etcd's own
// clients compare the message strings), so both are copied from etcd's rpctypes verbatim.

/** gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

/** A gRPC status code. */
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

const definitions = {
  EMPTY_KEY: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: key is not provided'],
  KEY_NOT_FOUND: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: key not found'],
  VALUE_PROVIDED: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: value is provided'],
  LEASE_PROVIDED: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: lease is provided'],
  TOO_MANY_TXN_OPS: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: too many operations in txn request'],
  DUPLICATE_KEY: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request'],
  INVALID_SORT_OPTION: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: invalid sort option'],
  REQUEST_TOO_LARGE: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: request is too large'],
  COMPACTED: [GrpcCode.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted'],
  FUTURE_REVISION: [
    GrpcCode.OUT_OF_RANGE,
    'etcdserver: mvcc: required revision is a future revision',
  ],
  LEASE_NOT_FOUND: [GrpcCode.NOT_FOUND, 'etcdserver: requested lease not found'],
  RANGE_STREAM_SORT: [GrpcCode.UNIMPLEMENTED, 'RangeStream does not support custom sort orders'],
  RANGE_STREAM_FILTER: [GrpcCode.UNIMPLEMENTED, 'RangeStream does not support revision filters'],
  UNKNOWN_SERVICE: [GrpcCode.NOT_FOUND, 'unknown service'],
  LEASE_EXISTS: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: lease already exists'],
  LEASE_TTL_TOO_LARGE: [GrpcCode.OUT_OF_RANGE, 'etcdserver: too large lease TTL'],
  NO_SPACE: [GrpcCode.RESOURCE_EXHAUSTED, 'etcdserver: mvcc: database space exceeded'],
  CORRUPT: [GrpcCode.DATA_LOSS, 'etcdserver: corrupt cluster'],
  BAD_LEADER_TRANSFEREE: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: bad leader transferee'],
  NOT_LEADER: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: not leader'],
  NO_LEADER: [GrpcCode.UNAVAILABLE, 'etcdserver: no leader'],
  TIMEOUT: [GrpcCode.UNAVAILABLE, 'etcdserver: request timed out'],
  MEMBER_NOT_FOUND: [GrpcCode.NOT_FOUND, 'etcdserver: member not found'],
  MEMBER_BAD_URLS: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: given member URLs are invalid'],
  PEER_URL_EXISTS: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: Peer URLs already exists'],
  MEMBER_EXISTS: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: member ID already exist'],
  MEMBER_NOT_LEARNER: [
    GrpcCode.FAILED_PRECONDITION,
    'etcdserver: can only promote a learner member',
  ],
  LEARNER_NOT_READY: [
    GrpcCode.FAILED_PRECONDITION,
    'etcdserver: can only promote a learner member which is in sync with leader',
  ],
  TOO_MANY_LEARNERS: [
    GrpcCode.FAILED_PRECONDITION,
    'etcdserver: too many learner members in cluster',
  ],
  // etcd maps this one to a client-side error type that is no gRPC status, so grpc-go sends it as
  // Unknown (seen on 3.4 and still so in etcd's main branch).
  MEMBER_NOT_ENOUGH_STARTED: [
    GrpcCode.UNKNOWN,
    'etcdserver: re-configuration failed due to not enough started members',
  ],
  // etcd's strict reconfiguration check: the member asked is not connected to every voting member
  // (an add) or too few would be left connected (a removal).
  UNHEALTHY: [GrpcCode.UNAVAILABLE, 'etcdserver: unhealthy cluster'],
  // The lock and election services. etcd runs them on its in-process client, whose errors carry no
  // gRPC status, so grpc-go sends every one of them as Unknown with Go's message.
  ELECTION_NOT_LEADER: [GrpcCode.UNKNOWN, 'election: not leader'],
  ELECTION_NO_LEADER: [GrpcCode.UNKNOWN, 'election: no leader'],
  MISSING_LEADER_KEY: [GrpcCode.UNKNOWN, '"leader" field must be provided'],
  // etcd 3.5+ answers a Lock whose key vanished while it waited with this (3.4 wrongly succeeds).
  LOCK_SESSION_EXPIRED: [GrpcCode.UNKNOWN, 'mutex: session is expired'],
  // Not etcd's: etcd reports leadership even when the candidate's key vanished while it waited
  // (etcd issue 11051); the embedded server fails the Campaign instead, in the words of the mutex.
  ELECTION_SESSION_EXPIRED: [GrpcCode.UNKNOWN, 'election: session is expired'],
  // Not etcd's: an embedded member cannot add a voting member, which would never start (etcd
  // accepts the add, and a single member then loses quorum). See docs/embedded-server.md.
  VOTING_MEMBER_ADD: [
    GrpcCode.UNIMPLEMENTED,
    'etcdkit embedded server: adding a voting member is not supported (no process would start for it; etcd would accept the add and wait for the new member to join)',
  ],
  // Auth (rpctypes' ErrGRPC* of the auth store's errors).
  ROOT_USER_NOT_EXIST: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: root user does not exist'],
  ROOT_ROLE_NOT_EXIST: [
    GrpcCode.FAILED_PRECONDITION,
    'etcdserver: root user does not have root role',
  ],
  USER_ALREADY_EXIST: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: user name already exists'],
  USER_EMPTY: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: user name is empty'],
  USER_NOT_FOUND: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: user name not found'],
  ROLE_ALREADY_EXIST: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: role name already exists'],
  ROLE_NOT_FOUND: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: role name not found'],
  ROLE_EMPTY: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: role name is empty'],
  AUTH_FAILED: [
    GrpcCode.INVALID_ARGUMENT,
    'etcdserver: authentication failed, invalid user ID or password',
  ],
  PERMISSION_NOT_GIVEN: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: permission not given'],
  PERMISSION_DENIED: [GrpcCode.PERMISSION_DENIED, 'etcdserver: permission denied'],
  ROLE_NOT_GRANTED: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: role is not granted to the user'],
  PERMISSION_NOT_GRANTED: [
    GrpcCode.FAILED_PRECONDITION,
    'etcdserver: permission is not granted to the role',
  ],
  AUTH_NOT_ENABLED: [GrpcCode.FAILED_PRECONDITION, 'etcdserver: authentication is not enabled'],
  INVALID_AUTH_TOKEN: [GrpcCode.UNAUTHENTICATED, 'etcdserver: invalid auth token'],
  INVALID_AUTH_MGMT: [GrpcCode.INVALID_ARGUMENT, 'etcdserver: invalid auth management'],
  // etcd has no gRPC status for this one, so grpc-go sends the auth store's own text as Unknown
  // (seen on 3.4; unchanged in etcd's main branch).
  NO_PASSWORD_USER: [
    GrpcCode.UNKNOWN,
    'auth: authentication failed, password was given for no password user',
  ],
} as const satisfies Record<string, readonly [GrpcCode, string]>;

/** Stable identifier of each error the server answers with. */
export type ServerErrorCode = keyof typeof definitions;

/** A request failure with the gRPC status and message etcd answers for it. */
export class EtcdServerError extends Error {
  /** Stable identifier of the failure. */
  readonly code: ServerErrorCode;
  /** The gRPC status the failure is sent with. */
  readonly grpcCode: GrpcCode;

  constructor(code: ServerErrorCode, options?: { cause?: unknown }) {
    const [grpcCode, message] = definitions[code];
    super(message, options);
    this.name = 'EtcdServerError';
    this.code = code;
    this.grpcCode = grpcCode;
  }

  /** The exact etcd message of `code`. */
  static messageOf(code: ServerErrorCode): string {
    return definitions[code][1];
  }
}
