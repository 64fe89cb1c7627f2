// Typed errors. Every failure the client reports is an EtcdError with a stable `code`; errors the
// server sends are matched by their exact etcd message to one class per etcd error, so callers can
// `instanceof`-check what went wrong instead of parsing strings.
import {
  type EtcdErrorVariant,
  type EtcdServerErrorCode,
  etcdErrors,
  etcdErrorVariants,
} from './error-table.js';
import { GrpcStatus, type Metadata, TransportError } from './transport/types.js';

/**
 * Stable, documented identifiers of every error kind. They never change between releases. Those of
 * errors etcd sends are the keys of {@link etcdErrors}.
 */
export type EtcdErrorCode =
  | EtcdServerErrorCode
  | 'DEADLINE_EXCEEDED'
  | 'UNAVAILABLE'
  | 'UNIMPLEMENTED'
  | 'OUTCOME_UNKNOWN'
  | 'NOT_APPLIED'
  | 'PROTOCOL_ERROR'
  | 'ABORTED'
  | 'CLIENT_CLOSED'
  | 'INVALID_ARGUMENT'
  | 'INVALID_CONFIG'
  | 'NO_MEMBER_ENDPOINTS'
  | 'SNAPSHOT_INTEGRITY'
  | 'LEASE_LOST'
  | 'ELECTION_NOT_LEADER'
  | 'ELECTION_NO_LEADER'
  | 'MISSING_LEADER_KEY'
  | 'LOCK_SESSION_EXPIRED'
  | 'ELECTION_SESSION_EXPIRED'
  | 'ORDER_VIOLATION'
  | 'UNKNOWN';

/** What an EtcdError is built from. */
export interface EtcdErrorInit {
  /** The server's or the transport's message, verbatim. Defaults to the class's etcd message. */
  readonly message?: string;
  /** gRPC status of the failure; defaults to the class's status. */
  readonly grpcStatus?: GrpcStatus;
  /** Response trailers, when the server sent any. */
  readonly metadata?: Metadata;
  /** The underlying error. */
  readonly cause?: unknown;
}

/** Base class of every error the client reports. */
export class EtcdError<Code extends string = EtcdErrorCode> extends Error {
  /**
   * Stable identifier of the kind of failure. The client's own codes are {@link EtcdErrorCode};
   * packages built on the client (such as @etcdkit/recipes) add theirs through the type parameter.
   */
  readonly code: Code;
  /** gRPC status the failure arrived with (or the closest one, for client-side failures). */
  readonly grpcStatus: GrpcStatus;
  /** Response trailers, when the server sent any. */
  readonly metadata: Metadata;

  constructor(code: Code, grpcStatus: GrpcStatus, message: string, init?: EtcdErrorInit) {
    super(init?.message ?? message, init?.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.code = code;
    this.grpcStatus = init?.grpcStatus ?? grpcStatus;
    this.metadata = init?.metadata ?? {};
  }
}

/** The constructor shape shared by every server error class. */
export interface ServerErrorClass {
  new (init?: EtcdErrorInit): EtcdError;
  /** The exact message etcd sends for this error. */
  readonly etcdMessage: string;
  readonly errorCode: EtcdErrorCode;
  readonly defaultStatus: GrpcStatus;
}

/** A server error class whose `errorCode` is `C`. */
interface ServerErrorClassOf<C extends EtcdServerErrorCode> extends ServerErrorClass {
  readonly errorCode: C;
}

function serverError<C extends EtcdServerErrorCode>(code: C) {
  const [status, etcdMessage] = etcdErrors[code];
  // The exported subclasses are registered below (classOfCode): registering this base would make
  // every decoded error an instance of the anonymous class instead of the named one.
  return class extends EtcdError {
    static readonly etcdMessage: string = etcdMessage;
    static readonly errorCode: C = code;
    static readonly defaultStatus: GrpcStatus = status;
    constructor(init?: EtcdErrorInit) {
      super(code, status, etcdMessage, init);
    }
  };
}

const S = GrpcStatus;

// KV and Txn validation.
/** Empty key in Range, Put, DeleteRange or a Compare. */
export class EmptyKeyError extends serverError('EMPTY_KEY') {}
/** ignore_value / ignore_lease on a missing key, or an empty RequestOp. */
export class KeyNotFoundError extends serverError('KEY_NOT_FOUND') {}
/** ignore_value together with a value. */
export class ValueProvidedError extends serverError('VALUE_PROVIDED') {}
/** ignore_lease together with a lease. */
export class LeaseProvidedError extends serverError('LEASE_PROVIDED') {}
/** More than max-txn-ops (default 128) compares or ops in one branch of a txn. */
export class TooManyTxnOpsError extends serverError('TOO_MANY_TXN_OPS') {}
/** The same key written twice in one branch of a txn. */
export class DuplicateKeyError extends serverError('DUPLICATE_KEY') {}
/** An unknown sort order or target. */
export class InvalidSortOptionError extends serverError('INVALID_SORT_OPTION') {}
/** A request over the server's max-request-bytes. */
export class RequestTooLargeError extends serverError('REQUEST_TOO_LARGE') {}
/** The server throttles: too many requests in flight. */
export class TooManyRequestsError extends serverError('TOO_MANY_REQUESTS') {}

// Revisions.
/** A read, watch or compaction at or below a compacted revision. */
export class CompactedError extends serverError('COMPACTED') {}
/** A revision above the store's current one. */
export class FutureRevisionError extends serverError('FUTURE_REVISION') {}
/** The NOSPACE alarm is raised: writes and lease grants are refused until it is cleared. */
export class NoSpaceError extends serverError('NO_SPACE') {}

// Leases.
/** The lease does not exist (never granted, revoked or expired). */
export class LeaseNotFoundError extends serverError('LEASE_NOT_FOUND') {}
/** LeaseGrant with an id already in use. */
export class LeaseExistsError extends serverError('LEASE_EXISTS') {}
/** A TTL above 9,000,000,000 seconds. */
export class LeaseTtlTooLargeError extends serverError('LEASE_TTL_TOO_LARGE') {}
/** The server canceled a watch. */
export class WatchCanceledError extends serverError('WATCH_CANCELED') {}

// Cluster membership.
/** MemberAdd with an id already in the cluster. */
export class MemberExistsError extends serverError('MEMBER_EXISTS') {}
/** MemberAdd or MemberUpdate with peer URLs another member uses. */
export class PeerUrlExistsError extends serverError('PEER_URL_EXISTS') {}
/** A reconfiguration that would lose quorum. */
export class MemberNotEnoughStartedError extends serverError('MEMBER_NOT_ENOUGH_STARTED') {}
/** Member URLs that do not parse. */
export class MemberBadUrlsError extends serverError('MEMBER_BAD_URLS') {}
/** No member with that id. */
export class MemberNotFoundError extends serverError('MEMBER_NOT_FOUND') {}
/** MemberPromote of a voting member. */
export class MemberNotLearnerError extends serverError('MEMBER_NOT_LEARNER') {}
/** MemberPromote of a learner that has not caught up. */
export class LearnerNotReadyError extends serverError('LEARNER_NOT_READY') {}
/** MemberAdd of a learner beyond the allowed number. */
export class TooManyLearnersError extends serverError('TOO_MANY_LEARNERS') {}
/** The endpoint belongs to another cluster. */
export class ClusterIdMismatchError extends serverError('CLUSTER_ID_MISMATCH') {}

// Auth.
/** Enabling auth without a root user. */
export class RootUserNotExistError extends serverError('ROOT_USER_NOT_EXIST') {}
/** Enabling auth while root lacks the root role. */
export class RootRoleNotExistError extends serverError('ROOT_ROLE_NOT_EXIST') {}
/** UserAdd with a user name that is taken. */
export class UserAlreadyExistsError extends serverError('USER_ALREADY_EXISTS') {}
/** UserAdd with an empty user name. */
export class UserEmptyError extends serverError('USER_EMPTY') {}
/** A call naming a user that does not exist. */
export class UserNotFoundError extends serverError('USER_NOT_FOUND') {}
/** RoleAdd with a role name that is taken. */
export class RoleAlreadyExistsError extends serverError('ROLE_ALREADY_EXISTS') {}
/** A call naming a role that does not exist. */
export class RoleNotFoundError extends serverError('ROLE_NOT_FOUND') {}
/** RoleAdd with an empty role name. */
export class RoleEmptyError extends serverError('ROLE_EMPTY') {}
/** Wrong user name or password. */
export class AuthFailedError extends serverError('AUTH_FAILED') {}
/** RoleGrantPermission without a permission. */
export class PermissionNotGivenError extends serverError('PERMISSION_NOT_GIVEN') {}
/** The authenticated user may not do this. */
export class PermissionDeniedError extends serverError('PERMISSION_DENIED') {}
/** UserRevokeRole of a role the user does not have. */
export class RoleNotGrantedError extends serverError('ROLE_NOT_GRANTED') {}
/** RoleRevokePermission of a permission the role does not have. */
export class PermissionNotGrantedError extends serverError('PERMISSION_NOT_GRANTED') {}
/** An auth call that needs auth to be enabled. */
export class AuthNotEnabledError extends serverError('AUTH_NOT_ENABLED') {}
/** The token expired or was never valid; the client re-authenticates once before reporting it. */
export class InvalidAuthTokenError extends serverError('INVALID_AUTH_TOKEN') {}
/** Deleting the root user, or revoking its root role, while auth is enabled. */
export class InvalidAuthMgmtError extends serverError('INVALID_AUTH_MGMT') {}
/** The auth store (users, roles, permissions) changed after the request was authorized. */
export class AuthOldRevisionError extends serverError('AUTH_OLD_REVISION') {}

// Cluster health. These arrive as Unavailable: a write that got one may still have been applied.
/** The cluster has no leader: an election is under way or quorum is lost. */
export class NoLeaderError extends serverError('NO_LEADER') {}
/** A call only the leader serves reached a member that is not the leader. */
export class NotLeaderError extends serverError('NOT_LEADER') {}
/** The leader changed while the request was in flight. */
export class LeaderChangedError extends serverError('LEADER_CHANGED') {}
/** The cluster's version does not support the request. */
export class NotCapableError extends serverError('NOT_CAPABLE') {}
/** The member is shutting down. */
export class ServerStoppedError extends serverError('SERVER_STOPPED') {}
/** The member waited out its request timeout before the request was applied. */
export class RequestTimeoutError extends serverError('REQUEST_TIMEOUT') {}
/** A reconfiguration or leader transfer refused: the member is not connected to its peers. */
export class UnhealthyClusterError extends serverError('UNHEALTHY') {}
/** The CORRUPT alarm is raised: a member's data differs from the others'. */
export class CorruptClusterError extends serverError('CORRUPT') {}
/** A call a learner does not serve (it serves Status and serializable reads) reached one. */
export class NotSupportedForLearnerError extends serverError('NOT_SUPPORTED_FOR_LEARNER') {}
/** A Downgrade target that is no version (etcd wants `major.minor` or `major.minor.patch`). */
export class WrongDowngradeVersionFormatError extends serverError(
  'WRONG_DOWNGRADE_VERSION_FORMAT',
) {}
/** A Downgrade target other than the minor version just below the cluster's. */
export class InvalidDowngradeTargetVersionError extends serverError(
  'INVALID_DOWNGRADE_TARGET_VERSION',
) {}
/** A Downgrade validated or enabled while one is enabled already. */
export class DowngradeInProcessError extends serverError('DOWNGRADE_IN_PROCESS') {}
/** A Downgrade cancelled with none enabled. */
export class NoInflightDowngradeError extends serverError('NO_INFLIGHT_DOWNGRADE') {}
/** A Downgrade action the server does not know. */
export class UnknownMethodError extends serverError('UNKNOWN_METHOD') {}
/** MoveLeader to a member that is not a voting member of the cluster. */
export class BadLeaderTransfereeError extends serverError('BAD_LEADER_TRANSFEREE') {}
/** The member canceled the request before it completed. */
export class RequestCanceledError extends serverError('REQUEST_CANCELED') {}

// The Lock and Election services: etcd runs them on its in-process client, whose errors carry no
// gRPC status, so these (and every other error of those services) arrive as Unknown.
/** Proclaim or Campaign by a candidate whose key is no longer the one it was elected with. */
export class ElectionNotLeaderError extends serverError('ELECTION_NOT_LEADER') {}
/** Leader found no candidate in the election. */
export class ElectionNoLeaderError extends serverError('ELECTION_NO_LEADER') {}
/** Proclaim or Resign without a LeaderKey. */
export class MissingLeaderKeyError extends serverError('MISSING_LEADER_KEY') {}
/**
 * Lock: the key queued for the lock vanished while the call waited (its lease expired or was
 * revoked, or someone deleted it), so the lock was not acquired. Sent on its turn by etcd 3.5+
 * and the embedded server answering as 3.5+; etcd 3.4 instead reports such a lock as held.
 */
export class LockSessionExpiredError extends serverError('LOCK_SESSION_EXPIRED') {}
/**
 * Campaign: the candidate's key vanished while the call waited. Sent by no current server:
 * etcd (issue 11051) and the embedded server report such a candidate as elected; earlier embedded
 * servers sent it.
 */
export class ElectionSessionExpiredError extends serverError('ELECTION_SESSION_EXPIRED') {}

// The class of each entry of the catalog: a missing entry, or a class of another code, does not
// compile.
const classOfCode: { readonly [C in EtcdServerErrorCode]: ServerErrorClassOf<C> } = {
  EMPTY_KEY: EmptyKeyError,
  KEY_NOT_FOUND: KeyNotFoundError,
  VALUE_PROVIDED: ValueProvidedError,
  LEASE_PROVIDED: LeaseProvidedError,
  TOO_MANY_TXN_OPS: TooManyTxnOpsError,
  DUPLICATE_KEY: DuplicateKeyError,
  INVALID_SORT_OPTION: InvalidSortOptionError,
  REQUEST_TOO_LARGE: RequestTooLargeError,
  TOO_MANY_REQUESTS: TooManyRequestsError,
  COMPACTED: CompactedError,
  FUTURE_REVISION: FutureRevisionError,
  NO_SPACE: NoSpaceError,
  LEASE_NOT_FOUND: LeaseNotFoundError,
  LEASE_EXISTS: LeaseExistsError,
  LEASE_TTL_TOO_LARGE: LeaseTtlTooLargeError,
  WATCH_CANCELED: WatchCanceledError,
  MEMBER_EXISTS: MemberExistsError,
  PEER_URL_EXISTS: PeerUrlExistsError,
  MEMBER_NOT_ENOUGH_STARTED: MemberNotEnoughStartedError,
  MEMBER_BAD_URLS: MemberBadUrlsError,
  MEMBER_NOT_FOUND: MemberNotFoundError,
  MEMBER_NOT_LEARNER: MemberNotLearnerError,
  LEARNER_NOT_READY: LearnerNotReadyError,
  TOO_MANY_LEARNERS: TooManyLearnersError,
  CLUSTER_ID_MISMATCH: ClusterIdMismatchError,
  ROOT_USER_NOT_EXIST: RootUserNotExistError,
  ROOT_ROLE_NOT_EXIST: RootRoleNotExistError,
  USER_ALREADY_EXISTS: UserAlreadyExistsError,
  USER_EMPTY: UserEmptyError,
  USER_NOT_FOUND: UserNotFoundError,
  ROLE_ALREADY_EXISTS: RoleAlreadyExistsError,
  ROLE_NOT_FOUND: RoleNotFoundError,
  ROLE_EMPTY: RoleEmptyError,
  AUTH_FAILED: AuthFailedError,
  PERMISSION_NOT_GIVEN: PermissionNotGivenError,
  PERMISSION_DENIED: PermissionDeniedError,
  ROLE_NOT_GRANTED: RoleNotGrantedError,
  PERMISSION_NOT_GRANTED: PermissionNotGrantedError,
  AUTH_NOT_ENABLED: AuthNotEnabledError,
  INVALID_AUTH_TOKEN: InvalidAuthTokenError,
  INVALID_AUTH_MGMT: InvalidAuthMgmtError,
  AUTH_OLD_REVISION: AuthOldRevisionError,
  NO_LEADER: NoLeaderError,
  NOT_LEADER: NotLeaderError,
  LEADER_CHANGED: LeaderChangedError,
  NOT_CAPABLE: NotCapableError,
  SERVER_STOPPED: ServerStoppedError,
  REQUEST_TIMEOUT: RequestTimeoutError,
  UNHEALTHY: UnhealthyClusterError,
  CORRUPT: CorruptClusterError,
  NOT_SUPPORTED_FOR_LEARNER: NotSupportedForLearnerError,
  BAD_LEADER_TRANSFEREE: BadLeaderTransfereeError,
  WRONG_DOWNGRADE_VERSION_FORMAT: WrongDowngradeVersionFormatError,
  INVALID_DOWNGRADE_TARGET_VERSION: InvalidDowngradeTargetVersionError,
  DOWNGRADE_IN_PROCESS: DowngradeInProcessError,
  NO_INFLIGHT_DOWNGRADE: NoInflightDowngradeError,
  UNKNOWN_METHOD: UnknownMethodError,
  REQUEST_CANCELED: RequestCanceledError,
  ELECTION_NOT_LEADER: ElectionNotLeaderError,
  ELECTION_NO_LEADER: ElectionNoLeaderError,
  MISSING_LEADER_KEY: MissingLeaderKeyError,
  LOCK_SESSION_EXPIRED: LockSessionExpiredError,
  ELECTION_SESSION_EXPIRED: ElectionSessionExpiredError,
};

// etcd's clients match errors on the message alone; so does this one, except for the variants
// whose words mean the error only under one status.
const byMessage = new Map<string, ServerErrorClass>();
const byStatusAndMessage = new Map<string, ServerErrorClass>();
const statusAndMessage = (status: GrpcStatus, message: string) => `${status} ${message}`;
for (const [code, [, message]] of Object.entries(etcdErrors)) {
  byMessage.set(message, classOfCode[code as EtcdServerErrorCode]);
}
for (const variant of Object.values<EtcdErrorVariant>(etcdErrorVariants)) {
  if (variant.onlyWithStatus) {
    byStatusAndMessage.set(
      statusAndMessage(variant.status, variant.message),
      classOfCode[variant.means],
    );
  } else {
    byMessage.set(variant.message, classOfCode[variant.means]);
  }
}

// Client-side failures.

/** The call's deadline passed before an answer arrived. Never retried for writes. */
export class DeadlineExceededError extends EtcdError {
  constructor(init?: EtcdErrorInit) {
    super('DEADLINE_EXCEEDED', S.DeadlineExceeded, 'deadline exceeded', init);
  }
}

/** No endpoint could serve the call (connection refused, unreachable, dial timeout). */
export class UnavailableError extends EtcdError {
  constructor(init?: EtcdErrorInit) {
    super('UNAVAILABLE', S.Unavailable, 'no endpoint is available', init);
  }
}

/** The server does not implement the method (for example RangeStream before etcd 3.7). */
export class UnimplementedError extends EtcdError {
  constructor(init?: EtcdErrorInit) {
    super('UNIMPLEMENTED', S.Unimplemented, 'method not implemented by the server', init);
  }
}

/**
 * A write may or may not have been applied: the request reached a server, then the connection or
 * the server failed before the answer. The client never retries such a write on its own; re-read
 * and decide. `cause` holds the underlying failure.
 */
export class OutcomeUnknownError extends EtcdError {
  constructor(init?: EtcdErrorInit) {
    super('OUTCOME_UNKNOWN', S.Unavailable, 'the write may or may not have been applied', init);
  }
}

/**
 * A write was certainly not applied: every attempt failed before a server processed it (no
 * connection, the request never written, or the server refused its stream: RST_STREAM
 * REFUSED_STREAM, or a GOAWAY whose last-stream-id is below it), and the client gave up (its
 * retry budget or deadline spent). Retrying it is safe. `cause` holds the last attempt's error.
 */
export class WriteNotAppliedError extends EtcdError {
  constructor(init?: EtcdErrorInit) {
    super('NOT_APPLIED', S.Unavailable, 'the write was not applied', init);
  }
}

/**
 * The connection broke the HTTP/2 protocol: the client found a frame it must not accept (the
 * message says which), or the server ended the connection with a GOAWAY naming a protocol error
 * (its code and debug text). Not retried on the same endpoint: a new connection would meet it
 * again. `cause` holds the transport's failure. A write sent before it may have been applied: it
 * then arrives as the cause of an OutcomeUnknownError.
 */
export class ProtocolError extends EtcdError {
  constructor(init?: EtcdErrorInit) {
    super('PROTOCOL_ERROR', S.Internal, 'HTTP/2 protocol error', init);
  }
}

/** The caller's AbortSignal fired. `cause` is the signal's reason. */
export class AbortedError extends EtcdError {
  constructor(init?: EtcdErrorInit) {
    super('ABORTED', S.Cancelled, 'the operation was aborted', init);
  }
}

/** The client was closed. */
export class ClientClosedError extends EtcdError {
  constructor(init?: EtcdErrorInit) {
    super('CLIENT_CLOSED', S.Cancelled, 'the client is closed', init);
  }
}

/** Input rejected by the client before anything was sent. Nothing was changed. */
export class InvalidArgumentError extends EtcdError {
  constructor(message: string, init?: Omit<EtcdErrorInit, 'message'>) {
    super('INVALID_ARGUMENT', S.InvalidArgument, message, init);
  }
}

/** Client options that cannot work (bad endpoint URL, half of a TLS key pair...). */
export class InvalidConfigError extends EtcdError {
  constructor(message: string, init?: Omit<EtcdErrorInit, 'message'>) {
    super('INVALID_CONFIG', S.InvalidArgument, message, init);
  }
}

/**
 * Endpoint discovery (`Etcd.syncEndpoints`) found no client URL to use in the member list: no
 * started voting member, or only URLs with another scheme than the client's. The client's
 * endpoints were left unchanged.
 */
export class NoMemberEndpointsError extends EtcdError {
  constructor(message: string, init?: Omit<EtcdErrorInit, 'message'>) {
    super('NO_MEMBER_ENDPOINTS', S.FailedPrecondition, message, init);
  }
}

/** A failure that matches no known etcd error. `grpcStatus` and `message` say what arrived. */
export class UnknownEtcdError extends EtcdError {
  constructor(init?: EtcdErrorInit) {
    super('UNKNOWN', init?.grpcStatus ?? S.Unknown, 'unknown error', init);
  }
}

/** The class etcd's exact message maps to, if any. */
export function serverErrorClass(message: string): ServerErrorClass | undefined {
  return byMessage.get(message);
}

/**
 * Turns a transport failure into the matching typed error. Known etcd messages win; then the status
 * code decides (Unimplemented, DeadlineExceeded, Unavailable); anything else is UnknownEtcdError.
 */
export function fromTransportError(error: TransportError): EtcdError {
  const init: EtcdErrorInit = {
    message: error.details,
    grpcStatus: error.code,
    metadata: error.metadata,
    cause: error,
  };
  const known =
    byMessage.get(error.details) ??
    byStatusAndMessage.get(statusAndMessage(error.code, error.details));
  if (known) return new known(init);
  if (error.protocolError) return new ProtocolError(init);
  switch (error.code) {
    case S.Unimplemented:
      return new UnimplementedError(init);
    case S.DeadlineExceeded:
      return new DeadlineExceededError(init);
    case S.Unavailable:
      return new UnavailableError(init);
    case S.ResourceExhausted:
      // gRPC's own size limits ("Received message larger than max") and the client's send limit
      // mean the same as etcd's.
      if (
        /larger than max|message too large|size larger than|^request too large:/i.test(
          error.details,
        )
      )
        return new RequestTooLargeError(init);
      return new UnknownEtcdError(init);
    default:
      return new UnknownEtcdError(init);
  }
}

/** Normalises anything thrown below the client into an EtcdError. */
export function toEtcdError(error: unknown): EtcdError {
  if (error instanceof EtcdError) return error;
  if (error instanceof TransportError) return fromTransportError(error);
  return new UnknownEtcdError({
    message: error instanceof Error ? error.message : String(error),
    cause: error,
  });
}

/**
 * A serializable read kept answering from a revision older than one this client had already seen
 * (the `ordering` option): every endpoint tried served a member that lags behind. Nothing was
 * changed; a linearizable read, or the same read later, can succeed.
 */
export class OrderViolationError extends EtcdError {
  constructor(
    /** The highest revision the client had seen when the read started. */
    readonly seenRevision: bigint,
    /** The revision of the last (stale) answer. */
    readonly answeredRevision: bigint,
    /** `host:port` of the endpoint that gave the last stale answer. */
    readonly endpoint: string,
  ) {
    super(
      'ORDER_VIOLATION',
      S.FailedPrecondition,
      `serializable read answered at revision ${answeredRevision} by ${endpoint}, below revision ${seenRevision} already seen by this client`,
    );
  }
}
