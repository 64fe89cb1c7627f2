// A state small and rarely changed enough to be logged whole after each change (auth, the
// membership): its snapshot and its records are the same encoding, and restoring either one
// replaces everything.
import type { PersistentState, StateJournal } from '../journal.js';

/** A store read and replaced as one value. */
export interface WholeStateStore<State> {
  state(): State;
  restore(state: State): void;
}

/** How a whole state is written to bytes and read back. */
export interface WholeStateCodec<State> {
  encode(state: State): Uint8Array;
  decode(bytes: Uint8Array): State;
}

/**
 * Registers `store` in `journal` under `name`. Returns the function that logs the store's whole
 * state as it is now, to call after each change.
 */
export function journalWholeState<State>(
  journal: StateJournal,
  name: string,
  store: WholeStateStore<State>,
  codec: WholeStateCodec<State>,
): () => void {
  const restore = (bytes: Uint8Array): void => store.restore(codec.decode(bytes));
  const state: PersistentState = {
    name,
    snapshot: () => codec.encode(store.state()),
    restore,
    replay: restore,
  };
  const append = journal.register(state);
  return () => append(codec.encode(store.state()));
}
