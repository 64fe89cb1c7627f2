/**
 * @etcdkit/recipes: coordination recipes on etcd (sessions, locks, elections, fencing, STM,
 * shared counters, barriers, queues, service discovery, group membership), with the key layouts of etcd's Go recipes.
 *
 * @module @etcdkit/recipes
 */
export { Barrier } from './barrier/barrier.js';
export { DoubleBarrier, TooManyClientsError } from './barrier/double-barrier.js';
export {
  type CounterChange,
  type CounterSwap,
  type CounterValue,
  CounterValueError,
  SharedCounter,
} from './counter/counter.js';
export {
  type DiscoverOptions,
  ServiceDiscovery,
  type ServiceDiscoveryEvents,
} from './discovery/discovery.js';
export type {
  JsonValue,
  ServiceEndpoint,
  ServiceInstance,
} from './discovery/endpoint.js';
export {
  Group,
  GroupMemberExistsError,
  type GroupMemberInfo,
  type GroupMembers,
  GroupMembership,
  GroupView,
  type GroupViewEvents,
} from './discovery/group.js';
export {
  type RegisterOptions,
  ServiceRegistration,
  type ServiceRegistrationEvents,
  ServiceRegistry,
  ServiceRegistryClosedError,
  type ServiceRegistryOptions,
} from './discovery/registry.js';
export {
  type CampaignOptions,
  Election,
  Leadership,
  type ObserveOptions,
} from './election/election.js';
export {
  LatchClosedError,
  type LatchState,
  LeaderLatch,
  type LeaderLatchEvents,
  type LeaderLatchOptions,
} from './election/leader-latch.js';
export {
  ElectionNoLeaderError,
  ElectionNotLeaderError,
  FencedUpdateConflictError,
  LeadershipLostError,
  LockedError,
  LockLostError,
  LockNotHeldError,
  NestedLockError,
  RecipeError,
  SessionExpiredError,
  StaleFencingTokenError,
} from './errors.js';
export { type PredecessorWait, waitForPredecessors } from './line/predecessors.js';
export type { LineRead, OwnKey } from './line/turn.js';
export {
  type FencedRead,
  FencedResource,
  type FencedResourceOptions,
  type FencedUpdateOptions,
  fencedPut,
  GuardedTxn,
  guardedTxn,
  type Ownership,
} from './lock/fencing.js';
export { Hold } from './lock/hold.js';
export { MultiLock, MultiLockHeld } from './lock/multi-lock.js';
export { Lock, type LockOptions, Mutex } from './lock/mutex.js';
export { type RWLockOptions, RWMutex } from './lock/rwmutex.js';
export { type AcquireOptions, Permit, Semaphore } from './lock/semaphore.js';
export { DEFAULT_STM_LOCK_PREFIX, stmKeyLocks } from './lock/stm-key-locks.js';
export type { Dequeued, DequeueOptions, Enqueued, EnqueueOptions } from './queue/claim.js';
export { type DelayEnqueueOptions, DelayQueue } from './queue/delay-queue.js';
export { MAX_QUEUE_PRIORITY, PriorityQueue } from './queue/priority-queue.js';
export { Queue } from './queue/queue.js';
export {
  DEFAULT_WORK_MAX_ATTEMPTS,
  type DeadLetter,
  type WorkClaimOptions,
  type WorkEnqueued,
  type WorkEnqueueOptions,
  type WorkItem,
  WorkQueue,
  type WorkQueueOptions,
} from './queue/work-queue.js';
export { ClaimLostError } from './queue/work-queue-errors.js';
export {
  ResilientSession,
  type ResilientSessionEvents,
  type ResilientSessionOptions,
  SessionRegistration,
  type SessionSetup,
} from './session/resilient-session.js';
export { Session, type SessionOptions } from './session/session.js';
export type { StmBackoff } from './stm/backoff.js';
export {
  DEFAULT_STM_LOCK_AFTER_CONFLICTS,
  type StmContention,
  type StmKeyLocks,
  type StmKeysHeld,
} from './stm/contention.js';
export { STM_CONFLICT, StmConflictError, StmTooManyOpsError } from './stm/errors.js';
export { STM_ISOLATION_LEVELS, type StmIsolation } from './stm/isolation.js';
export {
  DEFAULT_STM_MAX_RETRIES,
  runStm,
  type StmOptions,
  type StmResult,
} from './stm/stm.js';
export type { Stm, StmPutOptions } from './stm/view.js';
export {
  type WaitForDeleteOptions,
  type WaitOptions,
  waitForDelete,
  waitForEvent,
} from './wait.js';
