// Maintenance: status, alarms, defragmentation, hashes, snapshots and leader transfer. Most calls
// are about the one member they reach: use a client with that member as its only endpoint.
import { Readable } from 'node:stream';
import { plainBytes } from '../bytes.js';
import type { CallOptions, Rpc } from '../connection/types.js';
import { etcdserverpb_Maintenance as methods } from '../generated/methods.js';
import { etcdserverpb } from '../generated/protocol.js';
import {
  type Acknowledged,
  acknowledged,
  type ResponseHeader,
  toResponseHeader,
} from '../header.js';
import { jsonReady } from '../json.js';
import { type SnapshotFile, verifySnapshot, writeSnapshotFile } from './snapshot.js';

/** The state of the member that answered {@link MaintenanceClient.status}. */
export interface MemberStatus {
  /** Id of the answering member (its `header.memberId`). */
  readonly memberId: bigint;
  /** Its etcd version, for example `3.5.17`. */
  readonly version: string;
  /** Size of its backend database file, in bytes, free pages included. */
  readonly dbSize: bigint;
  /** Bytes of the database actually in use; `dbSize - dbSizeInUse` is what defragment reclaims. */
  readonly dbSizeInUse: bigint;
  /** Id of the leader as this member knows it; `0n` when it knows of no leader. */
  readonly leader: bigint;
  /** True when this member is the leader. */
  readonly isLeader: boolean;
  /** True when this member is a learner. */
  readonly isLearner: boolean;
  /** Raft log index of the member. */
  readonly raftIndex: bigint;
  /** Raft term of the member. */
  readonly raftTerm: bigint;
  /** Raft index the member has applied to its store. */
  readonly raftAppliedIndex: bigint;
  /** Active alarms and errors the member reports, as text (for example `memberID:... alarm:NOSPACE`). */
  readonly errors: readonly string[];
  /** Version of the storage format (etcd 3.6+); undefined on older servers. */
  readonly storageVersion?: string;
  /** The backend quota in bytes, `--quota-backend-bytes` (etcd 3.6+); undefined on older servers. */
  readonly dbSizeQuota?: bigint;
  /** The cluster's downgrade state (etcd 3.6+); undefined on older servers. */
  readonly downgrade?: DowngradeInfo;
  readonly header: ResponseHeader;
}

/** Whether a cluster downgrade is in progress, and to which version. */
export interface DowngradeInfo {
  readonly enabled: boolean;
  readonly targetVersion: string;
}

/**
 * Kinds of alarm: `NOSPACE` (the backend quota is exhausted; writes and lease grants fail with
 * NoSpaceError until it is deactivated after freeing space) and `CORRUPT` (a member's data
 * diverged from the others').
 */
export type AlarmType = 'NOSPACE' | 'CORRUPT';

/** An alarm raised on a member. */
export interface Alarm {
  readonly memberId: bigint;
  readonly type: AlarmType;
}

/** The answer of {@link MaintenanceClient.hash}. */
export interface BackendHash {
  /** CRC-32 of the member's whole backend (all buckets); differs between members by design. */
  readonly hash: number;
  readonly header: ResponseHeader;
}

/** The answer of {@link MaintenanceClient.hashKV}. */
export interface KeyValueHash {
  /**
   * CRC-32 of the key-value history between the compaction revision and `hashRevision`. Members
   * with the same history give the same hash; comparing them detects corruption.
   */
  readonly hash: number;
  /** The store's compaction revision; `-1n` if it was never compacted. */
  readonly compactRevision: bigint;
  /** The revision the hash covers up to (etcd 3.6+); undefined on older servers. */
  readonly hashRevision?: bigint;
  readonly header: ResponseHeader;
}

/** A snapshot being received: iterate its chunks once; `cancel()` stops it early. */
export interface SnapshotStream extends AsyncIterable<Uint8Array> {
  /** Stops the transfer; iteration ends with AbortedError or simply stops. */
  cancel(): void;
}

/** Maintenance operations. */
export class MaintenanceClient {
  readonly #rpc: Rpc;

  constructor(rpc: Rpc) {
    this.#rpc = rpc;
  }

  /** Status of the member the call reaches. */
  async status(options: CallOptions = {}): Promise<MemberStatus> {
    const response = await this.#rpc.unary(methods.Status, {}, 'read', options);
    const header = toResponseHeader(response.header);
    return jsonReady({
      memberId: header.memberId,
      version: response.version,
      dbSize: response.dbSize,
      dbSizeInUse: response.dbSizeInUse,
      leader: response.leader,
      isLeader: response.leader !== 0n && response.leader === header.memberId,
      isLearner: response.isLearner,
      raftIndex: response.raftIndex,
      raftTerm: response.raftTerm,
      raftAppliedIndex: response.raftAppliedIndex,
      errors: response.errors,
      // proto3 has no presence for scalars: empty and zero mean "this server does not say".
      ...(response.storageVersion ? { storageVersion: response.storageVersion } : {}),
      ...(response.dbSizeQuota ? { dbSizeQuota: response.dbSizeQuota } : {}),
      ...(response.downgradeInfo
        ? {
            downgrade: {
              enabled: response.downgradeInfo.enabled ?? false,
              targetVersion: response.downgradeInfo.targetVersion ?? '',
            },
          }
        : {}),
      header,
    });
  }

  /** Every active alarm in the cluster. */
  async alarms(options: CallOptions = {}): Promise<Alarm[]> {
    return this.#alarm(Action.GET, 0n, etcdserverpb.AlarmType.NONE, 'read', options);
  }

  /**
   * Raises an alarm on a member. Activating NOSPACE makes the cluster refuse writes and lease
   * grants with NoSpaceError, exactly as when the quota runs out. Resolves with the alarms the call
   * activated.
   */
  async activateAlarm(
    memberId: bigint,
    type: AlarmType,
    options: CallOptions = {},
  ): Promise<Alarm[]> {
    return this.#alarm(Action.ACTIVATE, memberId, alarmTypes[type], 'write', options);
  }

  /**
   * Clears an alarm of a member (`etcdctl alarm disarm` clears every listed one this way). Resolves
   * with the alarms the call deactivated: empty if it was not active.
   */
  async deactivateAlarm(
    memberId: bigint,
    type: AlarmType,
    options: CallOptions = {},
  ): Promise<Alarm[]> {
    return this.#alarm(Action.DEACTIVATE, memberId, alarmTypes[type], 'write', options);
  }

  /**
   * Rewrites the member's database file to give free pages back to the file system. The member
   * stops serving while it runs (seconds for a large database): defragment members one at a time,
   * and pass a generous `timeoutMs`.
   */
  async defragment(options: CallOptions = {}): Promise<void> {
    // Never retried: a timed-out defragment may still be running on the member.
    await this.#rpc.unary(methods.Defragment, {}, 'write', options);
  }

  /** CRC-32 of the member's whole backend. For tests and debugging; prefer {@link hashKV}. */
  async hash(options: CallOptions = {}): Promise<BackendHash> {
    const response = await this.#rpc.unary(methods.Hash, {}, 'read', options);
    return jsonReady({ hash: response.hash, header: toResponseHeader(response.header) });
  }

  /**
   * Hash of the key-value history up to `revision` (default: the current revision). Equal on every
   * member with the same history; a compacted or future revision fails with CompactedError or
   * FutureRevisionError.
   */
  async hashKV(revision = 0n, options: CallOptions = {}): Promise<KeyValueHash> {
    const response = await this.#rpc.unary(methods.HashKV, { revision }, 'read', options);
    return jsonReady({
      hash: response.hash,
      compactRevision: response.compactRevision,
      ...(response.hashRevision ? { hashRevision: response.hashRevision } : {}),
      header: toResponseHeader(response.header),
    });
  }

  /**
   * Streams a snapshot of the member's database: the bbolt file followed by its 32-byte SHA-256
   * digest, the exact bytes `etcdctl snapshot save` writes (so a file of them restores with
   * `etcdctl snapshot restore`). The digest is checked as the stream ends; on mismatch or
   * truncation iteration throws SnapshotIntegrityError before the last chunks are yielded.
   */
  snapshot(options: CallOptions = {}): SnapshotStream {
    const stream = this.#rpc.serverStream(methods.Snapshot, {}, 'read', options);
    async function* blobs(): AsyncGenerator<Uint8Array> {
      try {
        for await (const response of stream) yield plainBytes(response.blob);
      } finally {
        // Ends the server stream when the consumer stops early; a no-op once it completed.
        stream.cancel();
      }
    }
    const chunks = verifySnapshot(blobs());
    return {
      [Symbol.asyncIterator]: () => chunks,
      cancel: () => stream.cancel(),
    };
  }

  /** The snapshot as a Node.js Readable stream of bytes. See {@link snapshot}. */
  snapshotReadable(options: CallOptions = {}): Readable {
    return Readable.from(this.snapshot(options), { objectMode: false });
  }

  /**
   * Saves a verified snapshot to `path` atomically (temporary file, fsync, rename), like
   * `etcdctl snapshot save`. On failure `path` is untouched and no temporary file is left behind.
   * File-system failures reject with the Node.js error as is.
   */
  async snapshotToFile(path: string, options: CallOptions = {}): Promise<SnapshotFile> {
    return writeSnapshotFile(path, this.snapshot(options));
  }

  /**
   * Transfers leadership to another voting member. Must reach the current leader: a client
   * connected to any other member gets NotLeaderError. A learner or unknown target fails with
   * BadLeaderTransfereeError.
   */
  async moveLeader(targetMemberId: bigint, options: CallOptions = {}): Promise<Acknowledged> {
    return acknowledged(
      await this.#rpc.unary(methods.MoveLeader, { targetID: targetMemberId }, 'write', options),
    );
  }

  async #alarm(
    action: etcdserverpb.AlarmRequest.AlarmAction,
    memberId: bigint,
    alarm: etcdserverpb.AlarmType,
    retry: 'read' | 'write',
    options: CallOptions,
  ): Promise<Alarm[]> {
    const response = await this.#rpc.unary(
      methods.Alarm,
      { action, memberID: memberId, alarm },
      retry,
      options,
    );
    return response.alarms.flatMap((member) => {
      const type = alarmNames.get(member.alarm ?? etcdserverpb.AlarmType.NONE);
      return type ? [jsonReady({ memberId: member.memberID ?? 0n, type })] : [];
    });
  }
}

const Action = etcdserverpb.AlarmRequest.AlarmAction;

const alarmTypes: Record<AlarmType, etcdserverpb.AlarmType> = {
  NOSPACE: etcdserverpb.AlarmType.NOSPACE,
  CORRUPT: etcdserverpb.AlarmType.CORRUPT,
};

const alarmNames = new Map<etcdserverpb.AlarmType, AlarmType>([
  [etcdserverpb.AlarmType.NOSPACE, 'NOSPACE'],
  [etcdserverpb.AlarmType.CORRUPT, 'CORRUPT'],
]);
