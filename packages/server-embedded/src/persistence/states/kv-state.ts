// The store in the data dir. Its snapshot is the embedded server's snapshot format (see
// maintenance/snapshot.ts) holding the revision, the compaction revision and every kept change;
// its records are the committed revisions (each change's key, value and lease: create revision
// and version follow from replaying them in order) and the compactions. Replaying a revision
// through a store write rebuilds the index, the history and the lease attachments exactly as the
// original write did, and must land on the same revision number, which is checked.

import type { LeaseTable } from '../../lease/lease-table.js';
import { decodeSnapshot, encodeSnapshot } from '../../maintenance/snapshot.js';
import type { MvccStore } from '../../mvcc/store.js';
import type { CommittedRevision } from '../../mvcc/types.js';
import { ByteReader, ByteWriter, MalformedDataError } from '../binary.js';
import type { PersistentState, StateJournal } from '../journal.js';

const RecordKind = { revision: 1, compaction: 2 } as const;
const EventKind = { put: 0, delete: 1 } as const;
const EVERY_KEY = { key: new Uint8Array(0), end: new Uint8Array(0) };

/** Keeps `store` in `journal`; `leases` gets the attachments of restored keys back. */
export function persistStore(journal: StateJournal, store: MvccStore, leases: LeaseTable): void {
  const append = journal.register(new KvState(store, leases));
  store.subscribe((committed) => append(encodeRevision(committed)));
  store.subscribeCompactions((revision) =>
    append(new ByteWriter(16).u8(RecordKind.compaction).varint(revision).finish()),
  );
}

class KvState implements PersistentState {
  readonly name = 'kv';

  readonly #store: MvccStore;
  readonly #leases: LeaseTable;

  constructor(store: MvccStore, leases: LeaseTable) {
    this.#store = store;
    this.#leases = leases;
  }

  snapshot(): Uint8Array {
    const store = this.#store;
    return encodeSnapshot(
      {
        version: '',
        clusterId: 0n,
        memberId: 0n,
        revision: store.revision,
        compactRevision: store.compactRevision,
        members: [],
        leases: [],
        alarms: [],
      },
      store.history,
    );
  }

  restore(snapshot: Uint8Array): void {
    const { metadata, changes } = decodeSnapshot(snapshot);
    this.#store.restore({
      revision: metadata.revision,
      compactRevision: metadata.compactRevision,
      changes: changes.map((change) => ({
        revision: { main: change.main, sub: change.sub },
        tombstone: change.tombstone,
        // Copies: the decoded bytes are views into the whole snapshot, not worth keeping alive.
        kv: { ...change.kv, key: change.kv.key.slice(), value: change.kv.value.slice() },
      })),
    });
    // A restore is no write, so the lessor heard nothing: attach the live keys to their leases
    // (the lease state is restored before this one).
    for (const kv of this.#store.range(EVERY_KEY).kvs) {
      if (kv.lease !== 0n) this.#leases.attach(kv.lease, kv.key);
    }
  }

  replay(record: Uint8Array): void {
    const reader = new ByteReader(record);
    const kind = reader.u8();
    if (kind === RecordKind.compaction) {
      const revision = reader.varint();
      reader.end();
      this.#store.compact(revision);
      return;
    }
    if (kind !== RecordKind.revision) throw new MalformedDataError(`unknown kv record ${kind}`);
    const revision = reader.varint();
    const count = reader.varint();
    if (revision !== this.#store.revision + 1) {
      throw new Error(`revision ${revision} replayed on a store at ${this.#store.revision}`);
    }
    const write = this.#store.write();
    try {
      for (let i = 0; i < count; i++) {
        const event = reader.u8();
        const key = reader.bytes();
        if (event === EventKind.put) {
          const value = reader.bytes();
          write.put(key, value, reader.int64());
        } else if (event !== EventKind.delete || write.deleteRange({ key }) !== 1) {
          throw new Error(`change ${i} of revision ${revision} does not apply`);
        }
      }
      reader.end();
    } finally {
      write.end();
    }
    if (this.#store.revision !== revision) {
      throw new Error(`revision ${revision} replayed as ${this.#store.revision}`);
    }
  }
}

function encodeRevision(committed: CommittedRevision): Uint8Array {
  const writer = new ByteWriter(256)
    .u8(RecordKind.revision)
    .varint(committed.revision)
    .varint(committed.events.length);
  for (const { type, kv } of committed.events) {
    if (type === 'put') writer.u8(EventKind.put).bytes(kv.key).bytes(kv.value).int64(kv.lease);
    else writer.u8(EventKind.delete).bytes(kv.key);
  }
  return writer.finish();
}
