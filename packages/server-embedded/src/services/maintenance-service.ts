// etcdserverpb.Maintenance over gRPC. Status, Alarm, Hash, HashKV, Defragment, Snapshot and
// MoveLeader answer as the member the context describes (who leads: its LeaderView); Downgrade
// from 3.5 as the version does (maintenance/downgrade.ts), Unimplemented on 3.4. Status and Snapshot
// carry the fields of the etcd version answered as (ServiceContext.traits). Headers are filled as etcd's maintenance server fills them:
// Defragment and MoveLeader answer without one. With auth on, Status and listing alarms need a
// user, everything else the root role, checked before anything else (etcd's
// authMaintenanceServer). A member of a simulated cluster cut off from the quorum answers from
// what it had applied (ServiceContext.appliedState): its raft term and index, sizes and alarms in
// Status, its own store for Hash, HashKV and Snapshot, and its own backend for Defragment.
import { etcdserverpb_Maintenance } from '@etcdkit/client/protocol';
import { revisionHeader } from '../api/requests.js';
import { EtcdServerError, type ServerErrorCode } from '../errors.js';
import { DowngradeJob } from '../maintenance/downgrade.js';
import { encodeSnapshot, snapshotMessages } from '../maintenance/snapshot.js';
import { Crc32c } from '../mvcc/hash.js';
import { fillHeader, type ServiceContext } from './context.js';
import type { CallInfo, ServiceRegistry } from './registry.js';

const NO_LEADER = new EtcdServerError('NO_LEADER').message;

export function registerMaintenanceService(
  registry: ServiceRegistry,
  context: ServiceContext,
): void {
  const { store, alarms, backend, authorizer } = context;
  const caller = (call: CallInfo) => authorizer.identify(authorizer.credentialsOf(call));
  const admin = (call: CallInfo) => caller(call).requireAdmin();
  const rules = context.traits.maintenanceAuth;
  // Before 3.6 the maintenance server checks these itself and answers the auth store's own error.
  const dumpAdmin =
    rules === '3.6' ? admin : (call: CallInfo) => asAuthStoreError(() => admin(call));

  const downgrade = new DowngradeJob(context.traits, context.clock);

  const status = () => {
    const leader = context.leaderView.leader();
    const applied = context.appliedState?.();
    const alarmErrors = applied?.alarmErrors ?? alarms.statusErrors();
    const index = BigInt(applied?.raftIndex ?? context.proposals.index);
    return {
      header: fillHeader(context),
      version: context.version,
      dbSize: BigInt(applied?.dbSize ?? backend.size),
      leader,
      raftIndex: index,
      raftTerm: BigInt(applied?.raftTerm ?? context.proposals.term),
      raftAppliedIndex: index,
      // A member that knows of no leader says so first, as etcd's maintenance server does.
      errors: leader === 0n ? [NO_LEADER, ...alarmErrors] : [...alarmErrors],
      dbSizeInUse: BigInt(applied?.dbSizeInUse ?? backend.sizeInUse),
      isLearner: context.membership.get(context.member.memberId)?.isLearner === true,
      // Fields etcd 3.6 added; an older etcd does not know them, so never sends them.
      ...(context.traits.storageVersion
        ? {
            storageVersion: storageVersionOf(context.version),
            dbSizeQuota: BigInt(context.quotaBackendBytes),
            downgradeInfo:
              downgrade.target === undefined
                ? { enabled: false }
                : { enabled: true, targetVersion: downgrade.target },
          }
        : {}),
    };
  };
  registry.unary(etcdserverpb_Maintenance.Status, (_request, _size, call) => {
    // etcd 3.5 wants root for Status, 3.6 a user; 3.4 does not look at the token.
    if (rules === '3.5') admin(call);
    else if (rules === '3.6') caller(call).requireUser();
    return status();
  });

  registry.unary(etcdserverpb_Maintenance.Alarm, (request, size, call) => {
    // Listing needs a user; raising or clearing an alarm is an admin's (GET is action 0).
    // etcd 3.4 lets anyone list, raise or clear alarms; the proposal looks its token up, and an
    // unknown one is the auth store's error, unmapped.
    if (rules === '3.4') asAuthStoreError(() => caller(call));
    else if ((request.action ?? 0) === 0) caller(call).requireUser();
    else admin(call);
    const response = alarms.handle(request, size);
    return { ...response, header: fillHeader(context, response.header) };
  });

  registry.unary(etcdserverpb_Maintenance.HashKV, (request, _size, call) => {
    dumpAdmin(call);
    const hashed = context.appliedState?.()?.store ?? store;
    const revision = Number(request.revision ?? 0n);
    // etcd 3.5 on answers a revision it compacted at with the hash it took then.
    const kept = context.traits.compactionHashes ? hashed.compactionHash(revision) : undefined;
    if (context.traits.hashKvAtCompactionCompacted && revision > 0) {
      if (revision === hashed.compactRevision) throw new EtcdServerError('COMPACTED');
    }
    const hash = kept ?? hashed.hashKV(revision);
    return {
      header: fillHeader(context, revisionHeader(hash.revision)),
      hash: hash.hash,
      compactRevision: BigInt(hash.compactRevision),
      ...(context.traits.hashRevision ? { hashRevision: BigInt(hash.hashRevision) } : {}),
    };
  });

  // etcd hashes its whole backend file; the embedded server hashes its snapshot, which holds the
  // same state (history, leases, members, alarms), so equal states hash equal here too.
  registry.unary(etcdserverpb_Maintenance.Hash, (_request, _size, call) => {
    dumpAdmin(call);
    return {
      header: fillHeader(context),
      hash: new Crc32c().update(takeSnapshot(context)).digest(),
    };
  });

  registry.unary(etcdserverpb_Maintenance.Defragment, (_request, _size, call) => {
    dumpAdmin(call);
    const applied = context.appliedState?.();
    if (applied === undefined) backend.defragment();
    else applied.defragment();
    return {};
  });

  registry.serverStream(etcdserverpb_Maintenance.Snapshot, async (_request, send, call) => {
    dumpAdmin(call);
    // Taken at once: the store is synchronous, so the snapshot is one consistent state.
    const data = takeSnapshot(context);
    // Snapshot messages carry the storage version from 3.6 on; '' is the field left out.
    const version = context.traits.storageVersion ? storageVersionOf(context.version) : '';
    for (const message of snapshotMessages(data, version)) {
      if (call.cancelled) return;
      await send(message);
    }
  });

  if (context.traits.downgrade !== 'none') {
    registry.waitingUnary(
      etcdserverpb_Maintenance.Downgrade,
      async (request, _size, signal, call) => {
        admin(call);
        const version = await downgrade.handle(request.action ?? 0, request.version ?? '', signal);
        return { header: fillHeader(context), version };
      },
    );
  }

  registry.waitingUnary(
    etcdserverpb_Maintenance.MoveLeader,
    async (request, _size, signal, call) => {
      // etcd 3.4 does not check MoveLeader.
      if (rules !== '3.4') admin(call);
      await context.leaderView.moveLeader(request.targetID ?? 0n, signal);
      return {};
    },
  );
}

const AUTH_STORE_ERRORS: Partial<Record<ServerErrorCode, ServerErrorCode>> = {
  USER_EMPTY: 'AUTH_STORE_USER_EMPTY',
  PERMISSION_DENIED: 'AUTH_STORE_PERMISSION_DENIED',
  INVALID_AUTH_TOKEN: 'AUTH_STORE_INVALID_TOKEN',
};

/** Runs `check`, answering its auth failure as the auth store's text with status Unknown. */
function asAuthStoreError(check: () => void): void {
  try {
    check();
  } catch (error) {
    const unmapped = error instanceof EtcdServerError ? AUTH_STORE_ERRORS[error.code] : undefined;
    if (unmapped === undefined) throw error;
    throw new EtcdServerError(unmapped, { cause: error });
  }
}

/**
 * The snapshot of the server's state now (see maintenance/snapshot.ts); for a member cut off from
 * the quorum, of the state it had applied.
 */
function takeSnapshot(context: ServiceContext): Uint8Array {
  const applied = context.appliedState?.();
  const store = applied?.store ?? context.store;
  const leases = applied?.leases ?? context.leaseTable.all();
  return encodeSnapshot(
    {
      version: context.version,
      clusterId: context.member.clusterId,
      memberId: context.member.memberId,
      revision: store.revision,
      compactRevision: store.compactRevision,
      members: applied?.members ?? context.membership.list(),
      leases: leases.map((lease) => ({ id: lease.id, ttl: lease.ttl })),
      alarms: (applied?.alarms ?? context.alarms.list()).map((alarm) => ({
        memberId: alarm.memberId,
        type: alarm.type,
      })),
    },
    store.history,
  );
}

/** etcd records its storage format by minor version: "3.7.1" writes storage version "3.7.0". */
function storageVersionOf(version: string): string {
  const [major = '3', minor = '0'] = version.split('.');
  return `${major}.${minor}.0`;
}
