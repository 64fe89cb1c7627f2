// The raft term and index in the data dir. A restarted single etcd member campaigns again and
// wins: its term goes up by one and the new leader's empty entry takes an index, so headers after
// a restart show a new term. That election is logged like any term change (the leader-change
// fault makes one too). The index is not logged per request: after a restart it continues from
// the snapshot's index plus one per record replayed, which is what those changes took.
import type { ProposalLog } from '../../consensus/proposals.js';
import { ByteReader, ByteWriter } from '../binary.js';
import type { AppendRecord, PersistentState, StateJournal } from '../journal.js';

/** Keeps the raft term of `proposals` in `journal`. */
export class RaftTermRecorder {
  readonly #append: AppendRecord;
  readonly #proposals: ProposalLog;

  constructor(journal: StateJournal, proposals: ProposalLog) {
    this.#proposals = proposals;
    this.#append = journal.register(new RaftState(proposals));
  }

  /**
   * After recovery: the member has been down, so it is elected again (term + 1); the index moves
   * past every replayed change first.
   */
  restarted(replayedRecords: number): void {
    const proposals = this.#proposals;
    proposals.restore(proposals.term, proposals.index + replayedRecords);
    this.electLeader();
  }

  /** A leader change now: the term goes up, in memory and in the log. Returns the new term. */
  electLeader(): number {
    const term = this.#proposals.electLeader();
    this.#append(encode(term, this.#proposals.index));
    return term;
  }
}

class RaftState implements PersistentState {
  readonly name = 'raft';

  readonly #proposals: ProposalLog;

  constructor(proposals: ProposalLog) {
    this.#proposals = proposals;
  }

  snapshot(): Uint8Array {
    return encode(this.#proposals.term, this.#proposals.index);
  }

  restore(snapshot: Uint8Array): void {
    this.#apply(snapshot);
  }

  replay(record: Uint8Array): void {
    this.#apply(record);
  }

  #apply(bytes: Uint8Array): void {
    const reader = new ByteReader(bytes);
    const term = reader.varint();
    const index = reader.varint();
    reader.end();
    this.#proposals.restore(term, Math.max(index, this.#proposals.index));
  }
}

function encode(term: number, index: number): Uint8Array {
  return new ByteWriter(16).varint(term).varint(index).finish();
}
