import {
  type EtcdBinaryLookup,
  findEtcdBinary,
  listedEtcdBinaries,
  lookUpEtcdBinary,
  type TestkitEnv,
} from '../etcd-binary.js';
import { startEtcd } from '../etcd-process.js';
import { etcdFeatures } from './features.js';
import type { BackendAvailability, BackendProvider } from './types.js';

/**
 * A real etcd binary (`ETCDKIT_ETCD_BIN`, else `etcd` on PATH), one fresh single-member server per
 * suite.
 */
export const etcdBackend: BackendProvider = {
  name: 'etcd',
  startTimeoutMs: 60_000,
  availability: (env) => availabilityOf(findEtcdBinary(env)),
  start: (env) => startEtcdBackend({ env }),
};

/**
 * One real-etcd provider per binary `ETCDKIT_ETCD_BINS` lists, labelled with its version
 * (`etcd 3.4.23`), or with its path while it cannot run; undefined when the variable is unset.
 * Two binaries of one version are told apart by their paths.
 */
export function listedEtcdBackends(env: TestkitEnv): BackendProvider[] | undefined {
  const paths = [...new Set(listedEtcdBinaries(env))];
  if (paths.length === 0) return undefined;
  const lookups = paths.map((path) => lookUpEtcdBinary(path, 'ETCDKIT_ETCD_BINS entry '));
  const versions = lookups.map((lookup) => (lookup.found ? lookup.binary.version : undefined));
  return paths.map((path, i): BackendProvider => {
    const version = versions[i];
    const shared = versions.indexOf(version) !== versions.lastIndexOf(version);
    const label =
      version === undefined ? `etcd ${path}` : `etcd ${version}${shared ? ` (${path})` : ''}`;
    return {
      name: 'etcd',
      label,
      etcdBinary: path,
      startTimeoutMs: etcdBackend.startTimeoutMs,
      availability: () => availabilityOf(lookups[i]!),
      start: () => startEtcdBackend({ binary: path }),
    };
  });
}

function availabilityOf(lookup: EtcdBinaryLookup): BackendAvailability {
  return lookup.found
    ? { available: true, detail: `etcd ${lookup.binary.version} at ${lookup.binary.path}` }
    : { available: false, reason: lookup.reason };
}

async function startEtcdBackend(
  options: { readonly env: TestkitEnv } | { readonly binary: string },
): ReturnType<BackendProvider['start']> {
  const etcd = await startEtcd(options);
  return {
    name: 'etcd',
    endpoints: [...etcd.endpoints],
    version: etcd.version,
    features: etcdFeatures(etcd.version),
    stop: () => etcd.stop(),
  };
}
