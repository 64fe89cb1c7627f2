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
  classifyFailure,
  type PendingOperation,
  Recorder,
  type RecorderOptions,
} from './recorder.js';
export { RecordingRegister } from './recording-register.js';
