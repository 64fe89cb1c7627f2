/**
 * @etcdkit/verify: record what a program did against etcd, decide whether it was linearizable,
 * and show the anomaly when it was not.
 *
 * @module @etcdkit/verify
 */
export {
  type Anomaly,
  type CheckOptions,
  type CheckResult,
  checkLinearizable,
  describeAnomaly,
  type Verdict,
} from './checker/check.js';
export type { Model } from './checker/model.js';
export { partitionBy } from './checker/partition.js';
export { FaultUnavailableError, TargetUnavailableError, VerifyError } from './errors.js';
export {
  type History,
  historyFromJson,
  historyToJson,
  type Operation,
  type OperationJson,
  type OperationStatus,
  toJsonValue,
} from './history.js';
export {
  type CounterInput,
  type CounterOperation,
  type CounterOutput,
  counterModel,
} from './models/counter.js';
export {
  type ElectionInput,
  type ElectionOperation,
  type ElectionOutput,
  type ElectionState,
  electionModel,
} from './models/election.js';
export {
  type RegisterInput,
  type RegisterOperation,
  type RegisterOutput,
  type RegisterState,
  registerModel,
} from './models/register.js';
export {
  type TxnInput,
  type TxnOperation,
  type TxnOutput,
  type TxnState,
  type TxnStep,
  txnKeys,
  txnModel,
} from './models/txn.js';
export {
  checkWatch,
  type WatchedEvent,
  type WatchGuarantee,
  type WatchStream,
} from './models/watch.js';
export {
  classifyFailure,
  type PendingOperation,
  Recorder,
  type RecorderOptions,
  systemMonotonicMs,
} from './recorder.js';
export { RecordingRegister } from './recording-register.js';
export { recordTxn, runTxn } from './recording-txn.js';
export { type ReportInput, renderReport, timelineSvg } from './report/html.js';
export {
  type FaultAction,
  type FaultName,
  LEASE_EXPIRY_JUMP_MS,
  startTarget,
  type Target,
  type TargetSpec,
} from './target.js';
export {
  type VerifyOptions,
  type VerifyResult,
  verify,
  WORKLOADS,
  type WorkloadName,
} from './verify.js';
export {
  type ElectionWorkloadOptions,
  electionWorkload,
} from './workloads/election-workload.js';
export {
  type KvWorkloadOptions,
  registerWorkload,
  txnWorkload,
  type WorkloadRun,
} from './workloads/kv-workloads.js';
export { type LockWorkloadOptions, lockWorkload } from './workloads/lock-workload.js';
export {
  type FaultEvent,
  type FaultSchedule,
  type RunLimits,
  runWithFaults,
  sleep,
} from './workloads/runner.js';
export { type WatchRun, watchWorkload } from './workloads/watch-workload.js';
