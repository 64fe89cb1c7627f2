// The cluster's members in the data dir: the whole membership (members and removed ids) after
// each change, since changes are rare and small. After a restart this member reports the name and
// client URLs it was started with, as a restarted etcd member publishes its new attributes; that
// publication is itself a change and is logged.
import type { Member, Membership, MembershipState } from '../../consensus/membership.js';
import { ByteReader, ByteWriter } from '../binary.js';
import type { StateJournal } from '../journal.js';
import { journalWholeState } from './whole-state.js';

/** Keeps the members of `membership` in `journal`. Call the result once recovery is done. */
export function persistMembership(journal: StateJournal, membership: Membership): () => void {
  const logMembership = journalWholeState(journal, 'membership', membership, {
    encode: encodeMembership,
    decode: decodeMembership,
  });
  membership.subscribe(logMembership);
  return logMembership;
}

function encodeMembership(state: MembershipState): Uint8Array {
  const writer = new ByteWriter(256).varint(state.members.length);
  for (const member of state.members) {
    writer
      .int64(member.id)
      .string(member.name)
      .u8(member.isLearner ? 1 : 0);
    writer.varint(member.peerUrls.length);
    for (const url of member.peerUrls) writer.string(url);
    writer.varint(member.clientUrls.length);
    for (const url of member.clientUrls) writer.string(url);
  }
  writer.varint(state.removed.length);
  for (const id of state.removed) writer.int64(id);
  return writer.finish();
}

function decodeMembership(bytes: Uint8Array): MembershipState {
  const reader = new ByteReader(bytes);
  const strings = (): string[] => Array.from({ length: reader.varint() }, () => reader.string());
  const members: Member[] = Array.from({ length: reader.varint() }, () => {
    const id = BigInt.asUintN(64, reader.int64());
    const name = reader.string();
    const isLearner = reader.u8() === 1;
    return { id, name, isLearner, peerUrls: strings(), clientUrls: strings() };
  });
  const removed = Array.from({ length: reader.varint() }, () => BigInt.asUintN(64, reader.int64()));
  reader.end();
  return { members, removed };
}
