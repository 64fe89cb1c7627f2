// Puts the member's own state into a data dir: the raft term, the members, the alarms, auth, the
// leases and the store, registered in that order, which is the order they are restored in (the
// store's keys attach to leases that must exist by then).
import type { AuthStore } from '../auth/auth-store.js';
import type { Clock } from '../clock.js';
import type { Membership } from '../consensus/membership.js';
import type { ProposalLog } from '../consensus/proposals.js';
import type { LeaseTable } from '../lease/lease-table.js';
import type { AlarmStore } from '../maintenance/alarms.js';
import type { MvccStore } from '../mvcc/store.js';
import type { DataDir } from './data-dir.js';
import { persistAlarms } from './states/alarm-state.js';
import { persistAuth } from './states/auth-state.js';
import { persistStore } from './states/kv-state.js';
import { persistLeases } from './states/lease-state.js';
import { persistMembership } from './states/membership-state.js';
import { RaftTermRecorder } from './states/raft-state.js';

/** The member's state that a data dir keeps. */
export interface CoreState {
  readonly store: MvccStore;
  readonly leases: LeaseTable;
  readonly alarms: AlarmStore;
  readonly membership: Membership;
  readonly proposals: ProposalLog;
  /** Users, roles and permissions. */
  readonly auth: AuthStore;
  /** Restored leases expire a full TTL from now on this clock. */
  readonly clock: Clock;
}

/** The core state, registered with a data dir. */
export interface PersistedCoreState {
  /** Logs leader changes (the term). */
  readonly raft: RaftTermRecorder;
  /**
   * Call right after `dataDir.recover()`: the restarted member is elected again and publishes its
   * current attributes, both logged.
   */
  recovered(): void;
}

/** Registers the core state with `dataDir`; other states may register after it. */
export function persistCoreState(dataDir: DataDir, core: CoreState): PersistedCoreState {
  const raft = new RaftTermRecorder(dataDir, core.proposals);
  const publishMembership = persistMembership(dataDir, core.membership);
  persistAlarms(dataDir, core.alarms);
  persistAuth(dataDir, core.auth);
  persistLeases(dataDir, core.leases, core.store, core.clock);
  persistStore(dataDir, core.store, core.leases);
  return {
    raft,
    recovered() {
      if (!dataDir.fresh) raft.restarted(dataDir.replayedRecords);
      publishMembership();
    },
  };
}
