/**
 * @etcdkit/testkit: the servers etcdkit's own suites run against, and tools to break them.
 *
 * @module @etcdkit/testkit
 */
export { abortRegistrations, dependantSignals } from './abort-registrations.js';
export { containerBackend, DEFAULT_ETCD_IMAGE } from './backends/container.js';
export { embeddedBackend } from './backends/embedded.js';
export { etcdBackend, listedEtcdBackends } from './backends/etcd.js';
export { externalBackend, externalEndpoints } from './backends/external.js';
export { etcdFeatures } from './backends/features.js';
export {
  BACKEND_PROVIDERS,
  type BackendPlan,
  backendProviders,
  type PlanOptions,
  planBackends,
  selectedBackends,
} from './backends/plan.js';
export {
  BACKEND_NAMES,
  type BackendAvailability,
  type BackendFeatures,
  type BackendName,
  type BackendProvider,
  type TestBackend,
} from './backends/types.js';
export { type BlackHole, startBlackHole } from './black-hole.js';
export {
  type CertificateFiles,
  type ClientTlsMaterial,
  makeTestCertificates,
  type TestCertificateOptions,
  type TestCertificates,
} from './certificates.js';
export {
  type BackendSuiteContext,
  type DescribeEachBackendOptions,
  describeEachBackend,
  describeRealEtcd,
  type RealEtcdSuiteContext,
} from './describe-each-backend.js';
export {
  type ClusterBackendName,
  type ClusterSuiteContext,
  type DescribeEachClusterOptions,
  describeEachCluster,
  fromEmbedded,
  fromEtcd,
  type TestCluster,
  type TestClusterMember,
} from './describe-each-cluster.js';
export { BackendUnavailableError, EtcdStartError, type EtcdStartFailure } from './errors.js';
export {
  type EtcdBinary,
  type EtcdBinaryLookup,
  findEtcdBinary,
  listedEtcdBinaries,
  lookUpEtcdBinary,
  requireEtcdBinary,
  type TestkitEnv,
} from './etcd-binary.js';
export {
  type EtcdCluster,
  type EtcdClusterMember,
  type MemberAddAnswer,
  type MemberStartOptions,
  type StartAddedOptions,
  type StartEtcdClusterOptions,
  startEtcdCluster,
} from './etcd-cluster.js';
export type { EtcdTlsOptions } from './etcd-node.js';
export { type EtcdProcess, type StartEtcdOptions, startEtcd } from './etcd-process.js';
export { EtcdHttpGateway, type MemberStatus } from './gateway.js';
export { backendReport } from './global-setup.js';
export type { HttpTls } from './internal/http.js';
export { freePort, freePorts } from './internal/ports.js';
export { type ModuleScriptOptions, runModuleScript } from './module-script.js';
export { type ProxyTarget, startTcpProxy, type TcpProxy } from './tcp-proxy.js';
