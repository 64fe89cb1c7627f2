// Auth administration: enabling auth, users, roles and their key-range permissions.
// `authenticate()` is for tools managing tokens themselves: the connection gets its own.

import { type Bytes, plainBytes, prefixEnd, toBytes } from '../bytes.js';
import type { CallOptions, Rpc } from '../connection/types.js';
import { etcdserverpb_Auth as methods } from '../generated/methods.js';
import { authpb } from '../generated/protocol.js';
import {
  type Acknowledged,
  acknowledged,
  type ResponseHeader,
  toResponseHeader,
} from '../header.js';
import { jsonReady } from '../json.js';

/** What a permission allows on its keys. */
export type PermissionType = 'read' | 'write' | 'readwrite';

/**
 * Which keys a permission covers, etcd's way: `key` alone (empty `rangeEnd`) is that one key;
 * otherwise the half-open range [key, rangeEnd), where a `rangeEnd` of a single zero byte means
 * every key >= `key`. Build one with {@link keyPermission}, {@link prefixPermission} or
 * {@link rangePermission}.
 */
export interface Permission {
  readonly type: PermissionType;
  readonly key: Uint8Array;
  /** End of the range, exclusive; empty for a single key. */
  readonly rangeEnd: Uint8Array;
}

/**
 * The keys a permission is granted on or revoked from: one key, a key range, or every key with a
 * prefix. A {@link Permission} read back with {@link AuthClient.roleGet} is itself a valid selector.
 */
export type PermissionKeys =
  | { readonly key: Bytes; readonly rangeEnd?: Bytes }
  | { readonly prefix: Bytes };

/** A permission to grant: the keys and what is allowed on them. */
export type PermissionGrant = PermissionKeys & { readonly type: PermissionType };

/** A permission on one key. */
export function keyPermission(key: Bytes, type: PermissionType): Permission {
  return { type, key: toBytes(key), rangeEnd: new Uint8Array() };
}

/** A permission on every key starting with `prefix` (an empty prefix means every key). */
export function prefixPermission(prefix: Bytes, type: PermissionType): Permission {
  const start = toBytes(prefix);
  // etcd spells "every key" as the range [\0, \0), which is what an empty prefix must mean here.
  if (start.length === 0) return { type, key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]) };
  return { type, key: start, rangeEnd: prefixEnd(start) };
}

/** A permission on the keys in [key, rangeEnd). */
export function rangePermission(key: Bytes, rangeEnd: Bytes, type: PermissionType): Permission {
  return { type, key: toBytes(key), rangeEnd: toBytes(rangeEnd) };
}

/** Whether auth is enabled, as {@link AuthClient.status} reports it. */
export interface AuthStatus {
  readonly enabled: boolean;
  /** Revision of the auth store: bumped by every user, role and permission change. */
  readonly authRevision: bigint;
  readonly header: ResponseHeader;
}

/** A user, as {@link AuthClient.userGet} reports it. */
export interface User {
  readonly name: string;
  /** Names of the roles granted to the user. */
  readonly roles: readonly string[];
  readonly header: ResponseHeader;
}

/** A role, as {@link AuthClient.roleGet} reports it. */
export interface Role {
  readonly name: string;
  /** The role's permissions, in the order the server stores them (by key). */
  readonly permissions: readonly Permission[];
  readonly header: ResponseHeader;
}

/** Options of {@link AuthClient.userAdd}. */
export interface UserAddOptions extends CallOptions {
  /**
   * Create a user that cannot authenticate with a password (etcd 3.4+), for users that only log in
   * with a TLS client certificate whose common name is the user name. The password is then ignored.
   * Default false.
   */
  readonly noPassword?: boolean;
}

/**
 * Auth administration. Reads (status, get, list) are retried across endpoints; every change is a
 * write and is never retried once sent. Once auth is enabled, every call needs a client
 * authenticated as a user allowed to make it (administration needs the `root` role).
 */
export class AuthClient {
  readonly #rpc: Rpc;

  constructor(rpc: Rpc) {
    this.#rpc = rpc;
  }

  /**
   * Enables auth. Needs a `root` user holding the `root` role, else RootUserNotExistError or
   * RootRoleNotExistError. From then on, unauthenticated calls fail.
   */
  async enable(options: CallOptions = {}): Promise<Acknowledged> {
    return acknowledged(await this.#rpc.unary(methods.AuthEnable, {}, 'write', options));
  }

  /** Disables auth. Needs a client authenticated as root. */
  async disable(options: CallOptions = {}): Promise<Acknowledged> {
    return acknowledged(await this.#rpc.unary(methods.AuthDisable, {}, 'write', options));
  }

  /** Whether auth is enabled. Needs etcd 3.5+; etcd 3.4 answers UnimplementedError. */
  async status(options: CallOptions = {}): Promise<AuthStatus> {
    const response = await this.#rpc.unary(methods.AuthStatus, {}, 'read', options);
    return jsonReady({
      enabled: response.enabled,
      authRevision: response.authRevision,
      header: toResponseHeader(response.header),
    });
  }

  /**
   * Exchanges a user name and password for a token, to send as the `token` metadata header.
   * Fails with AuthFailedError on a wrong name or password, AuthNotEnabledError when auth is off.
   */
  async authenticate(name: string, password: string, options: CallOptions = {}): Promise<string> {
    // Retried like a read: a second token for the same user changes nothing anyone can observe.
    const response = await this.#rpc.unary(
      methods.Authenticate,
      { name, password },
      'read',
      options,
    );
    return response.token;
  }

  /** Adds a user. An existing name fails with UserAlreadyExistsError. */
  async userAdd(
    name: string,
    password: string,
    options: UserAddOptions = {},
  ): Promise<Acknowledged> {
    const noPassword = options.noPassword ?? false;
    const request = { name, password: noPassword ? '' : password, options: { noPassword } };
    return acknowledged(await this.#rpc.unary(methods.UserAdd, request, 'write', options));
  }

  /** A user and its roles. An unknown name fails with UserNotFoundError. */
  async userGet(name: string, options: CallOptions = {}): Promise<User> {
    const response = await this.#rpc.unary(methods.UserGet, { name }, 'read', options);
    return jsonReady({ name, roles: response.roles, header: toResponseHeader(response.header) });
  }

  /** Names of every user, sorted. */
  async userList(options: CallOptions = {}): Promise<string[]> {
    return (await this.#rpc.unary(methods.UserList, {}, 'read', options)).users;
  }

  /** Deletes a user. */
  async userDelete(name: string, options: CallOptions = {}): Promise<Acknowledged> {
    return acknowledged(await this.#rpc.unary(methods.UserDelete, { name }, 'write', options));
  }

  /** Sets a user's password. Tokens issued before stay valid until they expire. */
  async userChangePassword(
    name: string,
    password: string,
    options: CallOptions = {},
  ): Promise<Acknowledged> {
    return acknowledged(
      await this.#rpc.unary(methods.UserChangePassword, { name, password }, 'write', options),
    );
  }

  /** Grants a role to a user. Unknown users or roles fail with UserNotFoundError / RoleNotFoundError. */
  async userGrantRole(
    user: string,
    role: string,
    options: CallOptions = {},
  ): Promise<Acknowledged> {
    return acknowledged(
      await this.#rpc.unary(methods.UserGrantRole, { user, role }, 'write', options),
    );
  }

  /** Revokes a role from a user. A role the user does not hold fails with RoleNotGrantedError. */
  async userRevokeRole(
    user: string,
    role: string,
    options: CallOptions = {},
  ): Promise<Acknowledged> {
    return acknowledged(
      await this.#rpc.unary(methods.UserRevokeRole, { name: user, role }, 'write', options),
    );
  }

  /** Adds a role without permissions. An existing name fails with RoleAlreadyExistsError. */
  async roleAdd(name: string, options: CallOptions = {}): Promise<Acknowledged> {
    return acknowledged(await this.#rpc.unary(methods.RoleAdd, { name }, 'write', options));
  }

  /** A role and its permissions. An unknown name fails with RoleNotFoundError. */
  async roleGet(name: string, options: CallOptions = {}): Promise<Role> {
    const response = await this.#rpc.unary(methods.RoleGet, { role: name }, 'read', options);
    return jsonReady({
      name,
      permissions: response.perm.map(toPermission),
      header: toResponseHeader(response.header),
    });
  }

  /** Names of every role, sorted. */
  async roleList(options: CallOptions = {}): Promise<string[]> {
    return (await this.#rpc.unary(methods.RoleList, {}, 'read', options)).roles;
  }

  /** Deletes a role; users holding it lose it. */
  async roleDelete(name: string, options: CallOptions = {}): Promise<Acknowledged> {
    return acknowledged(
      await this.#rpc.unary(methods.RoleDelete, { role: name }, 'write', options),
    );
  }

  /**
   * Grants a role a permission on keys. Granting on exactly the same keys again replaces the
   * permission's type.
   */
  async roleGrantPermission(
    role: string,
    permission: PermissionGrant,
    options: CallOptions = {},
  ): Promise<Acknowledged> {
    const { key, rangeEnd } = selectKeys(permission);
    const perm = { permType: permissionTypes[permission.type], key, rangeEnd };
    return acknowledged(
      await this.#rpc.unary(methods.RoleGrantPermission, { name: role, perm }, 'write', options),
    );
  }

  /**
   * Revokes the role's permission on exactly these keys (whatever its type). Keys the role has no
   * permission on fail with PermissionNotGrantedError.
   */
  async roleRevokePermission(
    role: string,
    keys: PermissionKeys,
    options: CallOptions = {},
  ): Promise<Acknowledged> {
    const { key, rangeEnd } = selectKeys(keys);
    return acknowledged(
      await this.#rpc.unary(
        methods.RoleRevokePermission,
        { role, key, rangeEnd },
        'write',
        options,
      ),
    );
  }
}

const permissionTypes: Record<PermissionType, authpb.Permission.Type> = {
  read: authpb.Permission.Type.READ,
  write: authpb.Permission.Type.WRITE,
  readwrite: authpb.Permission.Type.READWRITE,
};

const permissionNames = new Map<authpb.Permission.Type, PermissionType>([
  [authpb.Permission.Type.READ, 'read'],
  [authpb.Permission.Type.WRITE, 'write'],
  [authpb.Permission.Type.READWRITE, 'readwrite'],
]);

function toPermission(perm: authpb.Permission.$Properties): Permission {
  return {
    type: permissionNames.get(perm.permType ?? authpb.Permission.Type.READ) ?? 'read',
    key: plainBytes(perm.key),
    rangeEnd: plainBytes(perm.rangeEnd),
  };
}

function selectKeys(keys: PermissionKeys): { key: Uint8Array; rangeEnd: Uint8Array } {
  if ('prefix' in keys) {
    const { key, rangeEnd } = prefixPermission(keys.prefix, 'read');
    return { key, rangeEnd };
  }
  return {
    key: toBytes(keys.key),
    rangeEnd: keys.rangeEnd === undefined ? new Uint8Array() : toBytes(keys.rangeEnd),
  };
}
