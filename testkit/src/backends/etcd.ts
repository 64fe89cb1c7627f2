import { findEtcdBinary } from '../etcd-binary.js';
import { startEtcd } from '../etcd-process.js';
import { etcdFeatures } from './features.js';
import type { BackendProvider } from './types.js';

/** A real etcd binary, one fresh single-member server per suite. */
export const etcdBackend: BackendProvider = {
  name: 'etcd',
  startTimeoutMs: 60_000,
  availability(env) {
    const lookup = findEtcdBinary(env);
    return lookup.found
      ? { available: true, detail: `etcd ${lookup.binary.version} at ${lookup.binary.path}` }
      : { available: false, reason: lookup.reason };
  },
  async start(env) {
    const etcd = await startEtcd({ env });
    return {
      name: 'etcd',
      endpoints: [...etcd.endpoints],
      version: etcd.version,
      features: etcdFeatures(etcd.version),
      stop: () => etcd.stop(),
    };
  },
};
