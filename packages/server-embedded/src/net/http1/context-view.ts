// A member's view for the HTTP endpoints, read from the state its services share.
import { etcdserverpb as pb } from '@etcdkit/client/protocol';
import { EtcdServerError } from '../../errors.js';
import type { ServiceContext } from '../../services/context.js';
import type { EtcdHttpVersion, MemberFigures, MemberView } from './member-view.js';

/** Every key: the range from the smallest key on. */
const ALL_KEYS = { key: Uint8Array.of(0), end: new Uint8Array(0) };

/** etcd's error for a linearizable read that no leader can confirm. */
const NO_LEADER_READ = EtcdServerError.messageOf('REQUEST_TIMEOUT');

/** The view of the member `context` serves, answering as `etcdVersion`. */
export function contextView(context: ServiceContext, etcdVersion: EtcdHttpVersion): MemberView {
  const self = context.member.memberId;
  // Leader changes are noticed when the endpoints look: a scrape sees each leader it finds.
  let lastLeader = 0n;
  let changes = 0;
  const leader = (): bigint => {
    const current = context.leaderView.leader();
    if (current !== 0n && current !== lastLeader) {
      lastLeader = current;
      changes++;
    }
    return current;
  };
  leader();
  return {
    etcdVersion,
    serverVersion: context.version,
    memberId: self,
    hasLeader: () => leader() !== 0n,
    isLeader: () => leader() === self,
    isLearner: () => context.membership.get(self)?.isLearner === true,
    leaderChanges: () => {
      leader();
      return changes;
    },
    alarms: () => {
      const alarms = context.appliedState?.()?.alarms ?? context.alarms.list();
      return alarms.map((alarm) => pb.AlarmType[alarm.type] ?? 'UNKNOWN');
    },
    readFault: (serializable) => (serializable || leader() !== 0n ? undefined : NO_LEADER_READ),
    figures: (): MemberFigures => {
      const applied = context.appliedState?.();
      const store = applied?.store ?? context.store;
      return {
        revision: store.revision,
        compactRevision: store.compactRevision,
        keys: store.range(ALL_KEYS, { countOnly: true }).count,
        dbSize: applied?.dbSize ?? context.backend.size,
        dbSizeInUse: applied?.dbSizeInUse ?? context.backend.sizeInUse,
        quotaBackendBytes: context.quotaBackendBytes,
        appliedIndex: applied?.raftIndex ?? context.proposals.index,
      };
    },
  };
}
