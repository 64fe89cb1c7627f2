/**
 * @etcdkit/server-embedded: an etcd v3 server inside the test process, indistinguishable from a
 * real etcd on the wire.
 *
 * The store's types are exported under names the client does not use (StoredKeyValue,
 * StoredKeyRange, StoredLease, StoreWatcher, ...), so a program can import both packages.
 *
 * @module @etcdkit/server-embedded
 */
export type { AuthStore, AuthStoreOptions } from './auth/auth-store.js';
export { DEFAULT_AUTH_TOKEN_TTL_SECONDS } from './auth/simple-tokens.js';
export {
  type AuthInfo,
  type AuthStatus as AuthStoreStatus,
  type AuthUser,
  type CallCredentials,
  type KeyPermission,
  PermissionType as PermissionCode,
} from './auth/types.js';
export type { Clock, Timer } from './clock.js';
export { every, systemClock } from './clock.js';
export {
  EmbeddedClusterMember,
  type MemberRestartOptions,
} from './cluster/cluster-member.js';
export {
  EmbeddedCluster,
  type EmbeddedClusterOptions,
  type StartAddedOptions,
} from './cluster/embedded-cluster.js';
export type { MemberIdentity } from './consensus/member-identity.js';
export type { Member as MemberRecord } from './consensus/membership.js';
export {
  EmbeddedEtcd,
  type EmbeddedEtcdOptions,
  type RestartOptions,
} from './embedded-etcd.js';
export { EtcdServerError, GrpcCode, type ServerErrorCode } from './errors.js';
export {
  DEFAULT_ETCD_VERSION,
  ETCD_VERSIONS,
  type EtcdVersion,
  type EtcdVersionTraits,
  etcdVersionTraits,
  UnknownEtcdVersionError,
} from './etcd-version.js';
export {
  type CancelFault,
  FaultInjector,
  type InjectedFailure,
} from './faults/fault-injector.js';
export type { MethodName } from './faults/methods.js';
export type { Lease as StoredLease } from './lease/lease.js';
export { type LeaseChange, LeaseTable } from './lease/lease-table.js';
export type {
  LogEntry,
  LoggerOption,
  LogLevel,
  LogSink,
  LogValue,
} from './logger.js';
export type { AutoCompactionOptions } from './maintenance/auto-compaction.js';
export {
  type DecodedSnapshot,
  decodeSnapshot,
  type SnapshotChange,
  type SnapshotMember,
  type SnapshotMetadata,
} from './maintenance/snapshot.js';
export type { ClockOption } from './member/member-services.js';
export type { KeyRange as StoredKeyRange } from './mvcc/index.js';
export type { Lessor } from './mvcc/lessor.js';
export type {
  CommitListener,
  CompactionListener,
  KvHash,
  MvccStore,
  RangeOptions as StoreRangeOptions,
  RangeResult as StoreRangeResult,
  ReadView,
} from './mvcc/store.js';
export type { StoreWrite } from './mvcc/store-write.js';
export type {
  CommittedRevision,
  KeyValue as StoredKeyValue,
  MvccEvent,
} from './mvcc/types.js';
export { ClientUrlError } from './net/client-urls.js';
export type { ServerTlsOptions } from './net/server-tls.js';
export { DataDirCorruptError, DataDirForeignError } from './persistence/data-dir.js';
export { DataDirLockedError } from './persistence/dir-lock.js';
export {
  type AppendRecord,
  inMemoryJournal,
  type PersistentState,
  type StateJournal,
} from './persistence/journal.js';
export { VirtualClock } from './virtual-clock.js';
export type { WatchableStore, WatchableStoreOptions } from './watch/watchable-store.js';
export type {
  WatchedKeys,
  Watcher as StoreWatcher,
  WatcherOptions,
  WatcherResponse,
  WatcherState,
  WatchSink,
} from './watch/watcher.js';
