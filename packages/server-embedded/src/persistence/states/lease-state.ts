// The leases in the data dir: their ids and granted TTLs, in grant order (which breaks ties between
// leases expiring together). Expiry times are not kept: as on an etcd restart, every lease gets its
// full TTL again when the member comes back (nothing could have kept one alive meanwhile), so a
// lease granted just before a crash lives up to one TTL longer, never shorter.
import type { Clock } from '../../clock.js';
import type { LeaseTable } from '../../lease/lease-table.js';
import type { MvccStore } from '../../mvcc/store.js';
import { ByteReader, ByteWriter, MalformedDataError } from '../binary.js';
import type { PersistentState, StateJournal } from '../journal.js';

const RecordKind = { grant: 1, revoke: 2 } as const;

/** Keeps the leases of `table` in `journal`. */
export function persistLeases(
  journal: StateJournal,
  table: LeaseTable,
  store: MvccStore,
  clock: Clock,
): void {
  const append = journal.register(new LeaseState(table, store, clock));
  table.subscribe((change) => {
    const writer = new ByteWriter(24);
    if (change.type === 'grant')
      writer.u8(RecordKind.grant).int64(change.leaseId).varint(change.ttl);
    else writer.u8(RecordKind.revoke).int64(change.leaseId);
    append(writer.finish());
  });
}

class LeaseState implements PersistentState {
  readonly name = 'lease';

  readonly #table: LeaseTable;
  readonly #store: MvccStore;
  readonly #clock: Clock;

  constructor(table: LeaseTable, store: MvccStore, clock: Clock) {
    this.#table = table;
    this.#store = store;
    this.#clock = clock;
  }

  snapshot(): Uint8Array {
    const leases = this.#table.all();
    const writer = new ByteWriter(16 + leases.length * 12).varint(leases.length);
    for (const lease of leases) writer.int64(lease.id).varint(lease.ttl);
    return writer.finish();
  }

  restore(snapshot: Uint8Array): void {
    const reader = new ByteReader(snapshot);
    const count = reader.varint();
    for (let i = 0; i < count; i++) this.#grant(reader.int64(), reader.varint());
    reader.end();
  }

  replay(record: Uint8Array): void {
    const reader = new ByteReader(record);
    const kind = reader.u8();
    const leaseId = reader.int64();
    if (kind === RecordKind.grant) {
      this.#grant(leaseId, reader.varint());
    } else if (kind === RecordKind.revoke) {
      // The revoke's key deletions were logged (and replayed) before it: none may be left.
      const lease = this.#table.get(leaseId);
      if (lease === undefined || lease.keyCount > 0) {
        throw new Error(`lease ${leaseId} cannot be revoked here`);
      }
      this.#table.revoke(leaseId, this.#store);
    } else {
      throw new MalformedDataError(`unknown lease record ${kind}`);
    }
    reader.end();
  }

  #grant(leaseId: bigint, ttl: number): void {
    if (!this.#table.grant(leaseId, ttl, this.#clock.now() + ttl * 1000)) {
      throw new Error(`lease ${leaseId} granted twice`);
    }
  }
}
