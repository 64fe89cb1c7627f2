/**
 * @etcdkit/client: a typed, failure-safe etcd v3 client.
 *
 * What a program uses, listed by name; what only the sibling packages need is in
 * `@etcdkit/client/internal`.
 *
 * @module @etcdkit/client
 */

export {
  type Bytes,
  compareBytes,
  concatBytes,
  hasPrefix,
  prefixEnd,
  toBytes,
  toText,
} from './bytes.js';
export {
  AuthClient,
  type AuthStatus,
  keyPermission,
  type Permission,
  type PermissionGrant,
  type PermissionKeys,
  type PermissionType,
  prefixPermission,
  type Role,
  rangePermission,
  type User,
  type UserAddOptions,
} from './cluster/auth.js';
export {
  ClusterClient,
  type Member,
  type MemberAdded,
  type MemberAddOptions,
  type MemberList,
  type MemberListOptions,
} from './cluster/cluster.js';
export {
  type EndpointSyncEvent,
  type EndpointSyncHooks,
  type EndpointSyncResult,
  type MemberEndpoints,
  memberEndpoints,
} from './cluster/endpoint-sync.js';
export {
  type Alarm,
  type AlarmType,
  type BackendHash,
  type DowngradeInfo,
  type KeyValueHash,
  MaintenanceClient,
  type MemberStatus,
  type SnapshotStream,
} from './cluster/maintenance.js';
export { type SnapshotFile, SnapshotIntegrityError } from './cluster/snapshot.js';
export { Connection } from './connection/connection.js';
export type {
  AuthOptions,
  AuthRefreshEvent,
  CallEvent,
  CallHooks,
  ConnectionOptions,
  EndpointSwitchEvent,
  KeepaliveOptions,
  RetryEvent,
  RetryOptions,
} from './connection/options.js';
export type { OrderingOptions } from './connection/ordering.js';
export type { CallOptions, RetryPolicy, Rpc } from './connection/types.js';
export {
  type CampaignCallOptions,
  type CampaignResult,
  ElectionClient,
  type ElectionClientOptions,
  type LeaderKey,
} from './election/election.js';
export type {
  ElectionHooks,
  ObserveDisconnected,
  ObserveResumed,
} from './election/election-observe-events.js';
export type { ObserveCallOptions } from './election/election-observe-options.js';
export { type LockAcquired, type LockCallOptions, LockClient, lockKey } from './election/lock.js';
export {
  type EtcdErrorEntry,
  type EtcdErrorVariant,
  type EtcdErrorVariantName,
  type EtcdServerErrorCode,
  etcdErrors,
  etcdErrorVariants,
} from './error-table.js';
export {
  AbortedError,
  AuthFailedError,
  AuthNotEnabledError,
  AuthOldRevisionError,
  BadLeaderTransfereeError,
  ClientClosedError,
  ClusterIdMismatchError,
  CompactedError,
  CorruptClusterError,
  DeadlineExceededError,
  DowngradeInProcessError,
  DuplicateKeyError,
  ElectionNoLeaderError,
  ElectionNotLeaderError,
  ElectionSessionExpiredError,
  EmptyKeyError,
  EtcdError,
  type EtcdErrorCode,
  type EtcdErrorInit,
  FutureRevisionError,
  InvalidArgumentError,
  InvalidAuthMgmtError,
  InvalidAuthTokenError,
  InvalidConfigError,
  InvalidDowngradeTargetVersionError,
  InvalidSortOptionError,
  KeyNotFoundError,
  LeaderChangedError,
  LearnerNotReadyError,
  LeaseExistsError,
  LeaseNotFoundError,
  LeaseProvidedError,
  LeaseTtlTooLargeError,
  LockSessionExpiredError,
  MemberBadUrlsError,
  MemberExistsError,
  MemberNotEnoughStartedError,
  MemberNotFoundError,
  MemberNotLearnerError,
  MissingLeaderKeyError,
  NoInflightDowngradeError,
  NoLeaderError,
  NoMemberEndpointsError,
  NoSpaceError,
  NotCapableError,
  NotLeaderError,
  NotSupportedForLearnerError,
  OrderViolationError,
  OutcomeUnknownError,
  PeerUrlExistsError,
  PermissionDeniedError,
  PermissionNotGivenError,
  PermissionNotGrantedError,
  ProtocolError,
  RequestCanceledError,
  RequestTimeoutError,
  RequestTooLargeError,
  RoleAlreadyExistsError,
  RoleEmptyError,
  RoleNotFoundError,
  RoleNotGrantedError,
  RootRoleNotExistError,
  RootUserNotExistError,
  type ServerErrorClass,
  ServerStoppedError,
  TooManyLearnersError,
  TooManyRequestsError,
  TooManyTxnOpsError,
  UnavailableError,
  UnhealthyClusterError,
  UnimplementedError,
  UnknownEtcdError,
  UnknownMethodError,
  UserAlreadyExistsError,
  UserEmptyError,
  UserNotFoundError,
  ValueProvidedError,
  WatchCanceledError,
  WriteNotAppliedError,
  WrongDowngradeVersionFormatError,
} from './errors.js';
export { type ConnectionHooks, Etcd, type EtcdOptions } from './etcd.js';
export type { Acknowledged, ResponseHeader } from './header.js';
export { jsonReplacer, toJSONValue } from './json.js';
export { KeyValue, type KeyValueFields, type KeyValueJSON } from './key-value.js';
export type { KeyRange, KeySelector } from './keys/key-range.js';
export { type Compare, type CompareOperator, type CompareTarget, cmp } from './kv/compare.js';
export type { DeleteOptions, DeleteResponseBody, DeleteResult } from './kv/delete.js';
export {
  Informer,
  type InformerEvents,
  type InformerOptions,
  type InformerRequest,
  informer,
} from './kv/informer.js';
export { type CompactOptions, type CompactResult, type CountOptions, KV } from './kv/kv.js';
export {
  type AnyOpResponse,
  type DeleteOp,
  type DeleteOpResponse,
  type Op,
  type OpResponse,
  type OpResponses,
  op,
  type PutOp,
  type PutOpResponse,
  type RangeOp,
  type RangeOpResponse,
  type TxnOp,
  type TxnOpResponse,
  type TxnOutcome,
} from './kv/op.js';
export type { PutOptions, PutResponseBody, PutResult } from './kv/put.js';
export type {
  GetOptions,
  RangeOptions,
  RangeRequest,
  RangeResponseBody,
  RangeResult,
  RangeSort,
  SortOrder,
  SortTarget,
} from './kv/range.js';
export { DEFAULT_SCAN_PAGE_SIZE, Scan, type ScanOptions, type ScanRequest } from './kv/scan.js';
export type { CommitOptions, Txn, TxnResult } from './kv/txn.js';
export {
  Lease,
  LeaseClient,
  type LeaseClientOptions,
  type LeaseGrantOptions,
  type LeaseTimeToLive,
  type LeaseTimeToLiveOptions,
} from './lease/lease.js';
export type {
  LeaseEvents,
  LeaseHooks,
  LeaseKeepAliveEvent,
  LeaseKeepAliveOptions,
} from './lease/lease-events.js';
export { LeaseLostError, type LeaseLostReason } from './lease/lease-lost.js';
export { GrpcJsTransport, type GrpcJsTransportOptions } from './transport/grpc-js.js';
export { H2Transport, type H2TransportOptions } from './transport/h2.js';
export { Http2Transport, type Http2TransportOptions } from './transport/http2.js';
export type { TransportName } from './transport/select.js';
export {
  type BidiStream,
  type Channel,
  type ChannelCallOptions,
  type ChannelOptions,
  type ChannelState,
  GrpcStatus,
  type Metadata,
  type ServerStream,
  type TlsOptions,
  type Transport,
  TransportError,
  type TransportFailure,
} from './transport/types.js';
export type { LeaseRef } from './validate.js';
export { WatchCompactedError } from './watch/errors.js';
export { WATCH_STREAM_DEFAULTS } from './watch/hub.js';
export { DEFAULT_MAX_BUFFERED_EVENTS } from './watch/spec.js';
export type {
  WatchBackpressureEvent,
  WatchBatch,
  WatchEvent,
  WatcherEvents,
  WatchFilter,
  WatchHooks,
  WatchKeys,
  WatchOptions,
  WatchProgress,
  WatchRequest,
  WatchResumed,
  WatchStreamCloseEvent,
  WatchStreamCloseReason,
  WatchStreamOptions,
} from './watch/types.js';
export { Watcher } from './watch/watcher.js';
