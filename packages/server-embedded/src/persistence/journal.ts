// Every change of server state that must survive a restart goes through one journal: an
// append-only log, in the order the changes happened, plus from time to time a snapshot of every
// state so that the log can be cut. A piece of state (the store, the leases, the alarms, the
// members, the raft term, auth...) takes part by implementing PersistentState and registering:
// it then appends one record per change, and on restart gets back its snapshot and every record
// appended after it, in order. The journal never looks inside records or snapshots.
//
// Without a data dir the server uses the in-memory journal, which keeps nothing and touches no
// file, so a state can register and append unconditionally.

/** A piece of server state kept in the data dir. */
export interface PersistentState {
  /**
   * Stable name of the state in the data dir (`kv`, `lease`, `auth`...): snapshot sections and
   * log records are filed under it. At most 255 bytes of UTF-8.
   */
  readonly name: string;
  /**
   * The whole state now, encoded. Called synchronously between two changes, so the snapshot
   * covers exactly the records appended before it.
   */
  snapshot(): Uint8Array;
  /**
   * Replaces the state with one {@link PersistentState.snapshot} produced. Called at most once per
   * start, before any {@link PersistentState.replay}; states are restored in registration order.
   */
  restore(snapshot: Uint8Array): void;
  /** Applies one record this state appended, in log order, after the snapshot was restored. */
  replay(record: Uint8Array): void;
}

/**
 * Appends one record to the log. Records must be appended in the order the changes they describe
 * were made, synchronously with the change: a response that reveals the change is held back until
 * its record is on disk. Appends made while the journal replays (recovery) are dropped, since
 * they are the replayed changes themselves.
 */
export type AppendRecord = (record: Uint8Array) => void;

/** Where the server's state changes go. */
export interface StateJournal {
  /** True when changes are written to a data dir; false for the in-memory journal. */
  readonly persistent: boolean;
  /**
   * Registers a state; returns the function that appends its records. Register every state
   * before the journal recovers (the server does that before it serves anything).
   */
  register(state: PersistentState): AppendRecord;
}

/** The journal of a server without a data dir: keeps nothing. */
export const inMemoryJournal: StateJournal = {
  persistent: false,
  register: () => () => {},
};
