// What etcd's HTTP endpoints read of a member: its versions, leader, alarms, store and backend.
// Kept apart from the services' context so the endpoints can be tested on a view made by hand.

/** The etcd release lines whose HTTP endpoints the server can answer as (3.7: etcd's main branch). */
export type EtcdHttpVersion = '3.4' | '3.5' | '3.6' | '3.7';

/** An alarm's name as etcd spells its type (NOSPACE, CORRUPT). */
export type AlarmName = string;

/** A member as the HTTP endpoints see it. */
export interface MemberView {
  /** The release line answered as: decides which endpoints exist and their bodies. */
  readonly etcdVersion: EtcdHttpVersion;
  /** The version the member claims (`etcdserver` of /version, Status' version). */
  readonly serverVersion: string;
  readonly memberId: bigint;
  hasLeader(): boolean;
  isLeader(): boolean;
  isLearner(): boolean;
  /** Leader changes this member has seen, its first leader included. */
  leaderChanges(): number;
  /** Active alarms of the cluster, in the order Alarm lists them. */
  alarms(): readonly AlarmName[];
  /**
   * A one-key read as etcd's health checks make it: undefined when it succeeds, else the error's
   * text. `serializable`: a local read, which needs no leader.
   */
  readFault(serializable: boolean): string | undefined;
  /** The store and backend figures /metrics exports. */
  figures(): MemberFigures;
}

/** Numbers of the member at one moment. */
export interface MemberFigures {
  readonly revision: number;
  /** The last compaction's revision; 0 when the store was never compacted. */
  readonly compactRevision: number;
  /** Keys that exist now. */
  readonly keys: number;
  readonly dbSize: number;
  readonly dbSizeInUse: number;
  readonly quotaBackendBytes: number;
  /** The raft index applied (equal to the committed one here). */
  readonly appliedIndex: number;
}
