// Builds the parts of the member that the lease, maintenance and cluster services share: the lease
// applier on the server's clock, the alarms and the backend quota (which the KV and lease appliers
// consult through one WriteGuard), the database size estimate, and the membership.
import type { Authorizer } from '../auth/authorizer.js';
import { type Clock, systemClock } from '../clock.js';
import type { MemberIdentity } from '../consensus/member-identity.js';
import { Membership } from '../consensus/membership.js';
import type { ProposalLog } from '../consensus/proposals.js';
import type { WriteGuard } from '../consensus/write-guard.js';
import { LeaseApplier } from '../lease/lease-applier.js';
import type { LeaseTable } from '../lease/lease-table.js';
import { AlarmStore } from '../maintenance/alarms.js';
import { BackendSize } from '../maintenance/backend-size.js';
import { BackendQuota } from '../maintenance/quota.js';
import type { MvccStore } from '../mvcc/store.js';
import { VirtualClock } from '../virtual-clock.js';

/** The clock option of the server: the real clock, a fresh virtual one, or one of your own. */
export type ClockOption = 'real' | 'virtual' | Clock;

/** The clock a {@link ClockOption} stands for. */
export function resolveClock(option: ClockOption | undefined): Clock {
  if (option === undefined || option === 'real') return systemClock;
  if (option === 'virtual') return new VirtualClock();
  return option;
}

/** What {@link createMemberServices} builds. */
export interface MemberServices {
  readonly leases: LeaseApplier;
  readonly alarms: AlarmStore;
  readonly backend: BackendSize;
  readonly membership: Membership;
  /** For the KV applier: the quota before proposing, the alarms when applying. */
  readonly guard: WriteGuard;
}

export function createMemberServices(options: {
  readonly member: MemberIdentity;
  readonly store: MvccStore;
  readonly leaseTable: LeaseTable;
  readonly proposals: ProposalLog;
  readonly clock: Clock;
  /** The quota in force, in bytes; negative: none. */
  readonly quotaBytes: number;
  readonly minLeaseTtl: number | undefined;
  /** Users and permissions the lease requests are checked against; none: no checks. */
  readonly authorizer?: Authorizer;
}): MemberServices {
  const { member, store, leaseTable, proposals, clock } = options;
  const alarms = new AlarmStore({ proposals, store });
  const backend = new BackendSize(store, leaseTable);
  const quota = new BackendQuota({
    quotaBytes: options.quotaBytes,
    size: () => backend.size,
    raiseNoSpace: () => alarms.raiseNoSpace(member.memberId),
  });
  const guard: WriteGuard = {
    beforeProposal: (request) => quota.check(request),
    atApply: (request) => alarms.checkApply(request),
  };
  const leases = new LeaseApplier({
    table: leaseTable,
    store,
    proposals,
    clock,
    guard,
    ...(options.minLeaseTtl === undefined ? {} : { minTtl: options.minLeaseTtl }),
    ...(options.authorizer === undefined ? {} : { authorizer: options.authorizer }),
  });
  return { leases, alarms, backend, membership: new Membership(member, proposals), guard };
}
