// Alarms, as etcd's alarm store keeps them: at most one of each type per member, raised and
// cleared through raft (every Alarm request takes a log entry, a GET too). While NOSPACE is active
// for any member, puts, txns that contain a put and lease grants are refused when applied; while
// CORRUPT is, every write is (etcd's capped and corrupt appliers). Reads go on.
import { type etcdserverpb, etcdserverpb as pb } from '@etcdkit/client/protocol';
import { bigintOf, revisionHeader } from '../api/requests.js';
import { ProposalKind, type ProposalLog } from '../consensus/proposals.js';
import type { GuardedRequest } from '../consensus/write-guard.js';
import { EtcdServerError } from '../errors.js';
import type { MvccStore } from '../mvcc/store.js';
import { txnCost } from './quota.js';

export type AlarmRequest = etcdserverpb.AlarmRequest.$Properties;
export type AlarmResponse = etcdserverpb.AlarmResponse.$Properties;

const AlarmType = pb.AlarmType;
type AlarmType = etcdserverpb.AlarmType;
const Action = pb.AlarmRequest.AlarmAction;

/** An active alarm. */
export interface Alarm {
  readonly memberId: bigint;
  readonly type: AlarmType;
}

/** An alarm raised (`active`) or cleared. */
export interface AlarmChange {
  readonly active: boolean;
  readonly alarm: Alarm;
}

/** The active alarms of the cluster. */
export class AlarmStore {
  readonly #proposals: ProposalLog;
  readonly #store: MvccStore;
  // By type, then by member; listed in that order (etcd lists them in Go map order, which varies).
  readonly #active = new Map<AlarmType, Map<bigint, Alarm>>();
  readonly #changeListeners = new Set<(change: AlarmChange) => void>();

  constructor(options: { proposals: ProposalLog; store: MvccStore }) {
    this.#proposals = options.proposals;
    this.#store = options.store;
  }

  /** The Alarm RPC: GET (NONE lists every alarm, another type only those), ACTIVATE, DEACTIVATE. */
  handle(r: AlarmRequest, requestBytes: number): AlarmResponse {
    this.#proposals.propose(ProposalKind.alarm, requestBytes);
    const type = r.alarm ?? AlarmType.NONE;
    const memberId = bigintOf(r.memberID);
    const header = revisionHeader(this.#store.revision);
    switch (r.action ?? Action.GET) {
      case Action.GET:
        return { header, alarms: this.list(type).map(toWire) };
      case Action.ACTIVATE: {
        // etcd 3.5+ ignores activating NONE (3.4 stored it as an alarm of its own).
        if (type === AlarmType.NONE) return { header, alarms: [] };
        return { header, alarms: [toWire(this.activate(memberId, type))] };
      }
      case Action.DEACTIVATE: {
        const alarm = this.deactivate(memberId, type);
        return { header, alarms: alarm === undefined ? [] : [toWire(alarm)] };
      }
      default:
        // An unknown action: etcd's applier answers nothing (and its server then fails on it).
        return { header, alarms: [] };
    }
  }

  /**
   * Raises NOSPACE for `memberId` through raft, as etcd does when a write does not fit the quota.
   */
  raiseNoSpace(memberId: bigint): void {
    const request: AlarmRequest = {
      action: Action.ACTIVATE,
      memberID: memberId,
      alarm: AlarmType.NOSPACE,
    };
    this.handle(request, pb.AlarmRequest.encode(request).finish().length);
  }

  /**
   * Calls `listener` after every alarm raised or cleared from now on (not for one raised again
   * while active). Returns an unsubscribe function.
   */
  subscribe(listener: (change: AlarmChange) => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  /** Raises an alarm; returns it (the one already active, if it was). */
  activate(memberId: bigint, type: AlarmType): Alarm {
    let members = this.#active.get(type);
    if (members === undefined) {
      members = new Map();
      this.#active.set(type, members);
    }
    const existing = members.get(memberId);
    if (existing !== undefined) return existing;
    const alarm: Alarm = { memberId, type };
    members.set(memberId, alarm);
    for (const listener of this.#changeListeners) listener({ active: true, alarm });
    return alarm;
  }

  /** Clears an alarm; returns it, or undefined when it was not active. */
  deactivate(memberId: bigint, type: AlarmType): Alarm | undefined {
    const alarm = this.#active.get(type)?.get(memberId);
    this.#active.get(type)?.delete(memberId);
    if (alarm !== undefined) {
      for (const listener of this.#changeListeners) listener({ active: false, alarm });
    }
    return alarm;
  }

  /** Active alarms of `type` (NONE: all), by type then member id. */
  list(type: AlarmType = AlarmType.NONE): Alarm[] {
    const types = [...this.#active.keys()]
      .filter((t) => type === AlarmType.NONE || t === type)
      .sort((a, b) => a - b);
    return types.flatMap((t) =>
      [...(this.#active.get(t)?.values() ?? [])].sort((a, b) =>
        a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0,
      ),
    );
  }

  /** True when an alarm of `type` is active for any member. */
  isActive(type: AlarmType): boolean {
    return (this.#active.get(type)?.size ?? 0) > 0;
  }

  /**
   * The alarms as Status lists them in `errors`: the protobuf text form of each AlarmMember, as
   * etcd prints it (fields at their zero value left out, a space after each field).
   */
  statusErrors(): string[] {
    return this.list().map((alarm) => {
      const memberId = alarm.memberId === 0n ? '' : `memberID:${alarm.memberId} `;
      const type =
        alarm.type === AlarmType.NONE ? '' : `alarm:${AlarmType[alarm.type] ?? alarm.type} `;
      return memberId + type;
    });
  }

  /** Refuses, when it is applied, what the active alarms forbid (CORRUPT first, as in etcd). */
  checkApply(request: GuardedRequest): void {
    if (this.isActive(AlarmType.CORRUPT)) throw new EtcdServerError('CORRUPT');
    if (!this.isActive(AlarmType.NOSPACE)) return;
    const refused =
      request.kind === 'put' ||
      request.kind === 'leaseGrant' ||
      (request.kind === 'txn' && txnCost(request.request) > 0);
    if (refused) throw new EtcdServerError('NO_SPACE');
  }
}

function toWire(alarm: Alarm): etcdserverpb.AlarmMember.$Properties {
  return { memberID: alarm.memberId, alarm: alarm.type };
}
