// Auth in the data dir: users (with their password hashes), roles, permissions, whether auth is
// on, and the auth revision; the whole state after each change, since changes are rare and small.
// Tokens are not kept: a restarted etcd has forgotten its simple tokens, and clients authenticate
// again.
import type { AuthState, AuthStore } from '../../auth/auth-store.js';
import type { KeyPermission, PermissionType } from '../../auth/types.js';
import { ByteReader, ByteWriter } from '../binary.js';
import type { StateJournal } from '../journal.js';
import { journalWholeState } from './whole-state.js';

/** Keeps the users, roles and permissions of `auth` in `journal`. */
export function persistAuth(journal: StateJournal, auth: AuthStore): void {
  const logAuth = journalWholeState(journal, 'auth', auth, {
    encode: encodeAuth,
    decode: decodeAuth,
  });
  auth.subscribe(logAuth);
}

function encodeAuth(state: AuthState): Uint8Array {
  const writer = new ByteWriter(256)
    .u8(state.enabled ? 1 : 0)
    .varint(state.revision)
    .varint(state.users.length);
  for (const user of state.users) {
    writer.string(user.name).u8(user.noPassword ? 1 : 0);
    writer.varint(user.roles.length);
    for (const role of user.roles) writer.string(role);
    if (user.password === undefined) writer.u8(0);
    else writer.u8(1).bytes(user.password.salt).bytes(user.password.hash);
  }
  writer.varint(state.roles.length);
  for (const role of state.roles) {
    writer.string(role.name).varint(role.permissions.length);
    for (const permission of role.permissions) {
      writer.u8(permission.type).bytes(permission.key).bytes(permission.rangeEnd);
    }
  }
  return writer.finish();
}

function decodeAuth(bytes: Uint8Array): AuthState {
  const reader = new ByteReader(bytes);
  const enabled = reader.u8() === 1;
  const revision = reader.varint();
  const users = Array.from({ length: reader.varint() }, () => {
    const name = reader.string();
    const noPassword = reader.u8() === 1;
    const roles = Array.from({ length: reader.varint() }, () => reader.string());
    const password =
      reader.u8() === 1
        ? { salt: Buffer.from(reader.bytes()), hash: Buffer.from(reader.bytes()) }
        : undefined;
    return { name, noPassword, roles, password };
  });
  const roles = Array.from({ length: reader.varint() }, () => {
    const name = reader.string();
    const permissions = Array.from(
      { length: reader.varint() },
      (): KeyPermission => ({
        type: reader.u8() as PermissionType,
        key: reader.bytes(),
        rangeEnd: reader.bytes(),
      }),
    );
    return { name, permissions };
  });
  reader.end();
  return { enabled, revision, users, roles };
}
