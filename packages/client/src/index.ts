/**
 * @etcdkit/client: a typed, failure-safe etcd v3 client.
 *
 * @module @etcdkit/client
 */
export type { Acknowledged } from './acknowledged.js';
export * from './auth.js';
export * from './bytes.js';
export * from './cluster.js';
export { type Compare, type CompareOperator, type CompareTarget, cmp } from './compare.js';
export { Connection } from './connection/connection.js';
export type {
  AuthOptions,
  AuthRefreshEvent,
  CallEvent,
  ConnectionHooks,
  ConnectionOptions,
  EndpointSwitchEvent,
  KeepaliveOptions,
  RetryEvent,
  RetryOptions,
} from './connection/options.js';
export type { OrderingOptions } from './connection/ordering.js';
export type { CallOptions, RetryPolicy, Rpc } from './connection/types.js';
export type { DeleteOptions, DeleteResponseBody, DeleteResult } from './delete.js';
export {
  type CampaignCallOptions,
  type CampaignResult,
  ElectionClient,
  type ElectionClientOptions,
  type LeaderKey,
  type ObserveCallOptions,
} from './election.js';
export type {
  ElectionHooks,
  ObserveDisconnected,
  ObserveResumed,
} from './election-observe-events.js';
export {
  type EndpointSyncEvent,
  type EndpointSyncHooks,
  type EndpointSyncResult,
  type MemberEndpoints,
  memberEndpoints,
} from './endpoint-sync.js';
export * from './errors.js';
export { Etcd, type EtcdOptions } from './etcd.js';
export type { ResponseHeader } from './header.js';
export type { KeyRange, KeySelector } from './key-range.js';
export { KeyValue, type KeyValueFields } from './key-value.js';
export { type CompactOptions, type CompactResult, type CountOptions, KV } from './kv.js';
export * from './lease.js';
export type {
  LeaseEvents,
  LeaseHooks,
  LeaseKeepAliveEvent,
  LeaseKeepAliveOptions,
} from './lease-events.js';
export { LeaseLostError, type LeaseLostReason } from './lease-lost.js';
export { type LinkedSignal, linkSignals } from './link-signals.js';
export { type LockAcquired, type LockCallOptions, LockClient, lockKey } from './lock.js';
export * from './maintenance.js';
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
} from './op.js';
export type { PutOptions, PutResponseBody, PutResult } from './put.js';
export type {
  GetOptions,
  RangeOptions,
  RangeRequest,
  RangeResponseBody,
  RangeResult,
  RangeSort,
  SortOrder,
  SortTarget,
} from './range.js';
export { DEFAULT_SCAN_PAGE_SIZE, Scan, type ScanOptions, type ScanRequest } from './scan.js';
export { type SnapshotFile, SnapshotIntegrityError } from './snapshot.js';
export { GrpcJsTransport } from './transport/grpc-js.js';
export { Http2Transport } from './transport/http2.js';
export type { TransportName } from './transport/select.js';
export type {
  BidiStream,
  Channel,
  ChannelCallOptions,
  ChannelOptions,
  ChannelState,
  Metadata,
  ServerStream,
  TlsOptions,
  Transport,
  TransportFailure,
} from './transport/types.js';
export { GrpcStatus, TransportError } from './transport/types.js';
export type { CommitOptions, Txn, TxnResult } from './txn.js';
export type { LeaseRef } from './validate.js';
export { WatchCompactedError } from './watch/errors.js';
export { WATCH_STREAM_DEFAULTS } from './watch/hub.js';
export {
  Informer,
  type InformerEvents,
  type InformerOptions,
  type InformerRequest,
  informer,
} from './watch/informer.js';
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
