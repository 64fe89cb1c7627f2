// etcdserverpb.Maintenance over gRPC. Only Status so far; the others answer Unimplemented.
import { etcdserverpb_Maintenance } from '@etcdkit/client/protocol';
import { fillHeader, type ServiceContext } from './context.js';
import type { ServiceRegistry } from './registry.js';

/** Size of a fresh etcd's bbolt file, and how much of it is in use (measured on etcd 3.4). */
const EMPTY_DB_SIZE = 20_480;
const EMPTY_DB_SIZE_IN_USE = 16_384;

export function registerMaintenanceService(
  registry: ServiceRegistry,
  context: ServiceContext,
): void {
  registry.unary(etcdserverpb_Maintenance.Status, () => {
    const history = context.store.historyBytes;
    return {
      header: fillHeader(context),
      version: context.version,
      dbSize: BigInt(EMPTY_DB_SIZE + history),
      leader: context.member.memberId,
      raftIndex: BigInt(context.proposals.index),
      raftTerm: BigInt(context.proposals.term),
      raftAppliedIndex: BigInt(context.proposals.index),
      errors: [],
      dbSizeInUse: BigInt(EMPTY_DB_SIZE_IN_USE + history),
      isLearner: false,
      storageVersion: storageVersionOf(context.version),
      dbSizeQuota: BigInt(context.quotaBackendBytes),
      downgradeInfo: { enabled: false },
    };
  });
}

/** etcd records its storage format by minor version: "3.7.1" writes storage version "3.7.0". */
function storageVersionOf(version: string): string {
  const [major = '3', minor = '0'] = version.split('.');
  return `${major}.${minor}.0`;
}
