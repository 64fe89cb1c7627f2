// The active alarms in the data dir. etcd keeps alarms in its backend, so a member restarted with
// NOSPACE raised still refuses writes until the alarm is disarmed; so does this one.
import type { etcdserverpb } from '@etcdkit/client/protocol';
import type { AlarmStore } from '../../maintenance/alarms.js';
import { ByteReader, ByteWriter } from '../binary.js';
import type { PersistentState, StateJournal } from '../journal.js';

/** Keeps the alarms of `alarms` in `journal`. */
export function persistAlarms(journal: StateJournal, alarms: AlarmStore): void {
  const append = journal.register(new AlarmState(alarms));
  alarms.subscribe(({ active, alarm }) =>
    append(
      new ByteWriter(16)
        .u8(active ? 1 : 0)
        .int64(alarm.memberId)
        .varint(alarm.type)
        .finish(),
    ),
  );
}

class AlarmState implements PersistentState {
  readonly name = 'alarm';

  readonly #alarms: AlarmStore;

  constructor(alarms: AlarmStore) {
    this.#alarms = alarms;
  }

  snapshot(): Uint8Array {
    const active = this.#alarms.list();
    const writer = new ByteWriter().varint(active.length);
    for (const alarm of active) writer.int64(alarm.memberId).varint(alarm.type);
    return writer.finish();
  }

  restore(snapshot: Uint8Array): void {
    const reader = new ByteReader(snapshot);
    const count = reader.varint();
    for (let i = 0; i < count; i++)
      this.#alarms.activate(memberIdOf(reader), alarmType(reader.varint()));
    reader.end();
  }

  replay(record: Uint8Array): void {
    const reader = new ByteReader(record);
    const active = reader.u8() === 1;
    const memberId = memberIdOf(reader);
    const type = alarmType(reader.varint());
    reader.end();
    if (active) this.#alarms.activate(memberId, type);
    else this.#alarms.deactivate(memberId, type);
  }
}

/** Member ids are unsigned 64-bit; the layout stores them as two's complement. */
function memberIdOf(reader: ByteReader): bigint {
  return BigInt.asUintN(64, reader.int64());
}

function alarmType(value: number): etcdserverpb.AlarmType {
  return value as etcdserverpb.AlarmType;
}
