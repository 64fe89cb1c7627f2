/**
 * @etcdkit/recipes: coordination recipes on etcd (sessions, locks, elections, fencing, STM,
 * barriers, queues, service discovery), with the key layouts of etcd's Go recipes.
 *
 * @module @etcdkit/recipes
 */
export { Barrier } from './barrier.js';
export { DoubleBarrier, TooManyClientsError } from './double-barrier.js';
export {
  type CampaignOptions,
  Election,
  Leadership,
  type ObserveOptions,
} from './election.js';
export {
  ElectionNoLeaderError,
  ElectionNotLeaderError,
  FencedUpdateConflictError,
  LockedError,
  LockLostError,
  LockNotHeldError,
  RecipeError,
  SessionExpiredError,
  StaleFencingTokenError,
} from './errors.js';
export {
  type FencedRead,
  FencedResource,
  type FencedResourceOptions,
  type FencedUpdateOptions,
  fencedPut,
  GuardedTxn,
  guardedTxn,
  type Ownership,
} from './fencing.js';
export { Hold } from './hold.js';
export { Lock, type LockOptions, Mutex } from './mutex.js';
export { MAX_QUEUE_PRIORITY, PriorityQueue } from './priority-queue.js';
export { Queue } from './queue.js';
export type { Dequeued, DequeueOptions, Enqueued, EnqueueOptions } from './queue-claim.js';
export {
  type Acquisition,
  type AheadRead,
  acquireInLine,
  type LinePlace,
  type QueueLine,
  type TurnOptions,
  waitForTurn,
} from './queue-line.js';
export {
  ResilientSession,
  type ResilientSessionEvents,
  type ResilientSessionOptions,
  SessionRegistration,
  type SessionSetup,
} from './resilient-session.js';
export { type RWLockOptions, RWMutex } from './rwmutex.js';
export { type AcquireOptions, Permit, Semaphore } from './semaphore.js';
export {
  type RegisterOptions,
  ServiceRegistration,
  type ServiceRegistrationEvents,
  ServiceRegistry,
  ServiceRegistryClosedError,
  type ServiceRegistryOptions,
} from './service-registry.js';
export {
  type DiscoverOptions,
  ServiceDiscovery,
  type ServiceDiscoveryEvents,
} from './service-registry-discovery.js';
export type {
  JsonValue,
  ServiceEndpoint,
  ServiceInstance,
} from './service-registry-endpoint.js';
export { Session, type SessionOptions } from './session.js';
export {
  DEFAULT_STM_MAX_RETRIES,
  runStm,
  type StmOptions,
  type StmResult,
} from './stm.js';
export type { StmBackoff } from './stm-backoff.js';
export { STM_CONFLICT, StmConflictError, StmTooManyOpsError } from './stm-errors.js';
export { STM_ISOLATION_LEVELS, type StmIsolation } from './stm-isolation.js';
export type { Stm, StmPutOptions } from './stm-view.js';
export {
  type OwnKey,
  type PredecessorWait,
  throwIfAborted,
  type WaitForDeleteOptions,
  type WaitOptions,
  waitForDelete,
  waitForEvent,
  waitForPredecessors,
} from './wait.js';
export {
  DEFAULT_WORK_MAX_ATTEMPTS,
  type DeadLetter,
  type WorkClaimOptions,
  type WorkEnqueued,
  type WorkEnqueueOptions,
  type WorkItem,
  WorkQueue,
  type WorkQueueOptions,
} from './work-queue.js';
export { ClaimLostError } from './work-queue-errors.js';
