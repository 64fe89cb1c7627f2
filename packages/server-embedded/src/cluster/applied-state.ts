// What a member of a simulated cluster had applied when it was cut off from the quorum: the quorum
// goes on changing the shared store, and a real member cut off applies nothing more, so it answers
// from this copy (docs/embedded-server.md, "What a cut-off member keeps").
import type { Member } from '../consensus/membership.js';
import { ProposalLog } from '../consensus/proposals.js';
import type { WriteGuard } from '../consensus/write-guard.js';
import { KvApplier } from '../kv/kv-applier.js';
import type { Alarm } from '../maintenance/alarms.js';
import type { ServerCore } from '../member/server-core.js';
import type { HistoryEntry } from '../mvcc/history.js';
import { MvccStore } from '../mvcc/store.js';
import type { AppliedState } from '../services/context.js';

/** A member's state at the moment it was cut off (see the file comment). */
export class MemberAppliedState implements AppliedState {
  readonly revision: number;
  readonly raftTerm: number;
  readonly raftIndex: number;
  readonly leases: readonly { readonly id: bigint; readonly ttl: number }[];
  readonly leaseIds: readonly bigint[];
  readonly members: readonly Member[];
  readonly alarms: readonly Alarm[];
  readonly alarmErrors: readonly string[];
  readonly dbSizeInUse: number;
  #fileSize: number;
  readonly #compactRevision: number;
  #changes: HistoryEntry[] | undefined;
  #ownStore: MvccStore | undefined;
  #ownKv: KvApplier | undefined;
  readonly #core: ServerCore;

  private constructor(core: ServerCore) {
    const { store, proposals, services } = core;
    this.#core = core;
    this.revision = store.revision;
    this.#compactRevision = store.compactRevision;
    this.#changes = [...store.history.upTo(store.revision)];
    this.raftTerm = proposals.term;
    this.raftIndex = proposals.index;
    this.leases = core.leaseTable.all().map((lease) => ({ id: lease.id, ttl: lease.ttl }));
    // The lease applier's own listing (no credentials: the server asking), in its order.
    this.leaseIds = (services.leases.leases().leases ?? []).map((lease) => lease.ID ?? 0n);
    this.members = services.membership.list();
    this.alarms = services.alarms.list();
    this.alarmErrors = services.alarms.statusErrors();
    this.#fileSize = services.backend.size;
    this.dbSizeInUse = services.backend.sizeInUse;
  }

  /** The state `core` is in now, as the member about to be cut off had applied it. */
  static capture(core: ServerCore): MemberAppliedState {
    return new MemberAppliedState(core);
  }

  get dbSize(): number {
    return this.#fileSize;
  }

  /** The member's own store, rebuilt from the changes it had on first use. */
  get store(): MvccStore {
    if (this.#ownStore === undefined) {
      const store = new MvccStore();
      store.restore({
        revision: this.revision,
        compactRevision: this.#compactRevision,
        changes: this.#changes ?? [],
      });
      this.#ownStore = store;
      this.#changes = undefined;
    }
    return this.#ownStore;
  }

  /** A KV applier over {@link store} that refuses every write (see {@link READ_ONLY}). */
  get kv(): KvApplier {
    this.#ownKv ??= new KvApplier({
      store: this.store,
      lessor: this.#core.leaseTable,
      // Its own log: a write refused below still takes an entry first, never in the cluster's.
      proposals: new ProposalLog({ memberId: 0n, maxRequestBytes: this.#core.maxRequestBytes }),
      maxTxnOps: this.#core.maxTxnOps,
      guard: READ_ONLY,
      authorizer: this.#core.authorizer,
    });
    return this.#ownKv;
  }

  defragment(): void {
    this.#fileSize = this.dbSizeInUse;
  }
}

/**
 * The member's store must never change: only reads are routed to it (services/local-reads.ts), and
 * this guard, which every write passes when it would be applied, makes sure of it. Nothing is
 * refused before the proposal, since a read-only txn passes there too.
 */
const READ_ONLY: WriteGuard = {
  beforeProposal: () => {},
  atApply: () => {
    throw new Error('a member cut off from the quorum applies no write');
  },
};
