// The auth store (etcd's server/auth/store.go): users, roles and their key permissions, whether
// auth is on, the auth revision, and the simple tokens it issues. Every management operation
// answers etcd's exact errors in etcd's order of checks; every successful change bumps the auth
// revision (AuthEnable alone does not, as in etcd). It also answers the questions requests ask:
// who presents this token, may this user touch these keys, is this user an admin.
import type { Clock } from '../clock.js';
import { EtcdServerError } from '../errors.js';
import { type Access, isValidPermissionRange, KeyPermissions } from './key-permissions.js';
import { compareNames, sortedInsert } from './names.js';
import { hashPassword, type PasswordHash, verifyPassword } from './password.js';
import { SimpleTokens } from './simple-tokens.js';
import {
  type AuthInfo,
  type AuthStatus,
  type AuthUser,
  type CallCredentials,
  type KeyPermission,
  PermissionType,
} from './types.js';

/** The user and the role that may do everything. */
export const ROOT = 'root';

/** What RoleGet shows for the root role, whatever was granted to it: read-write on every key. */
const ROOT_PERMISSION: KeyPermission = {
  type: PermissionType.READWRITE,
  key: new Uint8Array(0),
  rangeEnd: new Uint8Array([0]),
};

interface StoredUser {
  readonly name: string;
  /** Sorted. */
  roles: string[];
  /** Undefined for a `no_password` user. */
  password: PasswordHash | undefined;
  readonly noPassword: boolean;
}

interface StoredRole {
  readonly name: string;
  /** Sorted by key. */
  permissions: KeyPermission[];
}

/**
 * Everything auth keeps across a restart (tokens are not: a restarted etcd forgets its simple
 * tokens). What a data dir stores of the auth store.
 * @internal
 */
export interface AuthState {
  readonly enabled: boolean;
  readonly revision: number;
  readonly users: readonly {
    readonly name: string;
    readonly roles: readonly string[];
    readonly password: PasswordHash | undefined;
    readonly noPassword: boolean;
  }[];
  readonly roles: readonly {
    readonly name: string;
    readonly permissions: readonly KeyPermission[];
  }[];
}

/** Options of {@link AuthStore}. */
export interface AuthStoreOptions {
  /** The server's clock, which token expiry runs on. */
  readonly clock: Clock;
  /** Seconds an unused token lives (`--auth-token-ttl`). Default 300. */
  readonly tokenTtlSeconds?: number;
}

/** Users, roles, permissions, tokens, and the checks requests go through. */
export class AuthStore {
  readonly #users = new Map<string, StoredUser>();
  readonly #roles = new Map<string, StoredRole>();
  readonly #tokens: SimpleTokens;
  // Merged permissions per user, rebuilt after any change (etcd's range permission cache).
  readonly #permissionCache = new Map<string, KeyPermissions>();
  #isEnabled = false;
  /**
   * A call's token is looked up while auth is off too, as etcd 3.4 does; set by the auth service
   * for the version it answers as (the store outlives no version change).
   */
  tokensCheckedWhileOff = false;
  /**
   * A token after "Bearer " is taken as the token (etcd 3.5.32 on); set by the auth service for
   * the version it answers as.
   */
  bearerTokens = true;
  /**
   * 3.4's permission checks of KV, lease and maintenance calls (see the `legacyPermissionChecks`
   * trait); set by the auth service for the version it answers as.
   */
  legacyPermissionChecks = false;
  // A new etcd store starts at revision 1.
  #currentRevision = 1;
  readonly #changeListeners = new Set<() => void>();

  constructor(options: AuthStoreOptions) {
    this.#tokens = new SimpleTokens(options.clock, options.tokenTtlSeconds);
  }

  /** Whether auth is on. */
  get enabled(): boolean {
    return this.#isEnabled;
  }

  /** The auth revision: bumped by every change of users, roles or permissions. */
  get revision(): number {
    return this.#currentRevision;
  }

  /** AuthStatus. */
  status(): AuthStatus {
    return { enabled: this.#isEnabled, revision: this.#currentRevision };
  }

  /** AuthEnable: needs a root user holding the root role; enabling twice does nothing. */
  enable(): void {
    if (this.#isEnabled) return;
    const root = this.#users.get(ROOT);
    if (root === undefined) throw new EtcdServerError('ROOT_USER_NOT_EXIST');
    if (!hasRootRole(root)) throw new EtcdServerError('ROOT_ROLE_NOT_EXIST');
    this.#isEnabled = true;
    this.#notify();
  }

  /** AuthDisable: every token is forgotten. Disabling twice does nothing. */
  disable(): void {
    if (!this.#isEnabled) return;
    this.#isEnabled = false;
    this.#tokens.clear();
    this.#changed();
  }

  /** Forgets every token, as a restarted etcd has (auth stays as it was). */
  forgetTokens(): void {
    this.#tokens.clear();
  }

  /**
   * Checks a password before a token is issued (etcd's CheckPassword, which runs before the
   * Authenticate request is proposed).
   */
  checkPassword(name: string, password: string): void {
    if (!this.#isEnabled) throw new EtcdServerError('AUTH_NOT_ENABLED');
    const user = this.#users.get(name);
    if (user === undefined) throw new EtcdServerError('AUTH_FAILED');
    if (user.noPassword) throw new EtcdServerError('NO_PASSWORD_USER');
    // No hash at all: the password was changed to an empty one (see userChangePassword).
    if (user.password === undefined || !verifyPassword(user.password, password)) {
      throw new EtcdServerError('AUTH_FAILED');
    }
  }

  /** Authenticate, applied: a new token for `name`; `index` is the request's raft index. */
  authenticate(name: string, index: number): string {
    if (!this.#isEnabled) throw new EtcdServerError('AUTH_NOT_ENABLED');
    const user = this.#users.get(name);
    if (user === undefined || user.noPassword) throw new EtcdServerError('AUTH_FAILED');
    return this.#tokens.assign(name, index);
  }

  /** UserAdd. A `noPassword` user has no password and can only be identified by certificate. */
  userAdd(name: string, password: string, noPassword = false): void {
    if (name.length === 0) throw new EtcdServerError('USER_EMPTY');
    if (this.#users.has(name)) throw new EtcdServerError('USER_ALREADY_EXISTS');
    this.#users.set(name, {
      name,
      roles: [],
      password: noPassword ? undefined : hashPassword(password),
      noPassword,
    });
    this.#changed();
  }

  /** UserDelete: the user's tokens die with it. Root cannot go while auth is on. */
  userDelete(name: string): void {
    if (this.#isEnabled && name === ROOT) throw new EtcdServerError('INVALID_AUTH_MGMT');
    if (!this.#users.delete(name)) throw new EtcdServerError('USER_NOT_FOUND');
    this.#tokens.invalidateUser(name);
    this.#changed();
  }

  /**
   * UserChangePassword: the user's tokens are forgotten; a no-password user stays one. As in
   * etcd 3.5+, an empty new password is not hashed (etcd hashes only a non-empty one before it
   * proposes the change, and stores an empty hash), so no password opens the account any more.
   */
  userChangePassword(
    name: string,
    password: string,
    { hashEmpty = false }: { readonly hashEmpty?: boolean } = {},
  ): void {
    const user = this.#requireUser(name);
    if (!user.noPassword) {
      // etcd 3.4 hashes an empty password too (hashEmpty), which then opens the account.
      user.password = password === '' && !hashEmpty ? undefined : hashPassword(password);
    }
    this.#tokens.invalidateUser(name);
    this.#changed();
  }

  /**
   * UserGrantRole. The root role may be granted before it exists (etcd allows it, so a root user
   * can be set up in any order); granting a role twice changes nothing.
   */
  userGrantRole(name: string, role: string): void {
    const user = this.#requireUser(name);
    if (role !== ROOT && !this.#roles.has(role)) throw new EtcdServerError('ROLE_NOT_FOUND');
    if (user.roles.includes(role)) return;
    user.roles = sortedInsert(user.roles, role);
    this.#changed();
  }

  /** UserRevokeRole. Root keeps the root role while auth is on. */
  userRevokeRole(name: string, role: string): void {
    if (this.#isEnabled && name === ROOT && role === ROOT) {
      throw new EtcdServerError('INVALID_AUTH_MGMT');
    }
    const user = this.#requireUser(name);
    if (!user.roles.includes(role)) throw new EtcdServerError('ROLE_NOT_GRANTED');
    user.roles = user.roles.filter((granted) => granted !== role);
    this.#changed();
  }

  /** UserGet. */
  userGet(name: string): AuthUser {
    const user = this.#requireUser(name);
    return { name: user.name, roles: [...user.roles], noPassword: user.noPassword };
  }

  /** UserList: every user name, in byte order (etcd lists its bucket). */
  userList(): string[] {
    return [...this.#users.keys()].sort(compareNames);
  }

  /** RoleAdd. */
  roleAdd(name: string): void {
    if (name.length === 0) throw new EtcdServerError('ROLE_EMPTY');
    if (this.#roles.has(name)) throw new EtcdServerError('ROLE_ALREADY_EXISTS');
    this.#roles.set(name, { name, permissions: [] });
    this.#changed();
  }

  /** RoleDelete: the role is revoked from every user. Root's stays while auth is on. */
  roleDelete(name: string): void {
    if (this.#isEnabled && name === ROOT) throw new EtcdServerError('INVALID_AUTH_MGMT');
    if (!this.#roles.delete(name)) throw new EtcdServerError('ROLE_NOT_FOUND');
    for (const user of this.#users.values()) {
      user.roles = user.roles.filter((role) => role !== name);
    }
    this.#changed();
  }

  /**
   * RoleGet: the role's permissions sorted by key; the root role shows read-write on all keys
   * (etcd 3.6 on), or with `rootAsGranted` what was granted to it (etcd 3.4 and 3.5).
   */
  roleGet(name: string, rootAsGranted = false): KeyPermission[] {
    const role = this.#roles.get(name);
    if (role === undefined) throw new EtcdServerError('ROLE_NOT_FOUND');
    if (name === ROOT && !rootAsGranted) return [ROOT_PERMISSION];
    return role.permissions.map((p) => ({ ...p }));
  }

  /** RoleList: every role name, in byte order. */
  roleList(): string[] {
    return [...this.#roles.keys()].sort(compareNames);
  }

  /**
   * RoleGrantPermission. A permission on the same key and range end as one the role has replaces
   * its type; otherwise it is added in key order. An empty key, or a range end at or below the key
   * (other than "\0"), is invalid auth management.
   */
  roleGrantPermission(
    name: string,
    permission: KeyPermission | undefined,
    { checkRange = true }: { readonly checkRange?: boolean } = {},
  ): void {
    if (permission === undefined) throw new EtcdServerError('PERMISSION_NOT_GIVEN');
    // etcd 3.4 stores any range (checkRange false); 3.5 on refuses these.
    if (checkRange && !isValidPermissionRange(permission.key, permission.rangeEnd)) {
      throw new EtcdServerError('INVALID_AUTH_MGMT');
    }
    const role = this.#roles.get(name);
    if (role === undefined) throw new EtcdServerError('ROLE_NOT_FOUND');
    const same = role.permissions.findIndex((p) => samePermissionKeys(p, permission));
    const granted = { ...permission };
    if (same >= 0) role.permissions[same] = granted;
    else role.permissions = insertByKey(role.permissions, granted);
    this.#changed();
  }

  /** RoleRevokePermission: removes the permission on exactly `key` and `rangeEnd`. */
  roleRevokePermission(name: string, key: Uint8Array, rangeEnd: Uint8Array): void {
    const role = this.#roles.get(name);
    if (role === undefined) throw new EtcdServerError('ROLE_NOT_FOUND');
    const kept = role.permissions.filter((p) => !samePermissionKeys(p, { key, rangeEnd }));
    if (kept.length === role.permissions.length) {
      throw new EtcdServerError('PERMISSION_NOT_GRANTED');
    }
    role.permissions = kept;
    this.#changed();
  }

  /**
   * Who a call comes from (etcd's AuthInfoFromCtx, then the certificate): nobody while auth is off
   * or when it presents nothing; its token's user, restarting the token's TTL; else the common
   * name of its client certificate. A token the store does not know is an error, even when a
   * certificate would name a user.
   */
  identify(credentials: CallCredentials): AuthInfo | undefined {
    if (!this.#isEnabled) {
      // etcd 3.4 looks tokens up while auth is off, when it knows none (AuthDisable forgot them).
      if (this.tokensCheckedWhileOff && credentials.token !== undefined) {
        throw new EtcdServerError('INVALID_AUTH_TOKEN');
      }
      return undefined;
    }
    if (credentials.token !== undefined) {
      const token = this.bearerTokens ? stripBearer(credentials.token) : credentials.token;
      const username = this.#tokens.use(token);
      if (username === undefined) throw new EtcdServerError('INVALID_AUTH_TOKEN');
      return { username, revision: this.#currentRevision };
    }
    if (credentials.commonName !== undefined) {
      return { username: credentials.commonName, revision: this.#currentRevision };
    }
    return undefined;
  }

  /**
   * Throws unless `info`'s user may have `access` to the keys (etcd's isOpPermitted): no user is
   * USER_EMPTY, an unknown user or missing permission PERMISSION_DENIED. Always passes while auth
   * is off; the root role passes everywhere.
   */
  checkKeys(
    info: AuthInfo | undefined,
    access: Access,
    key: Uint8Array,
    rangeEnd: Uint8Array,
  ): void {
    if (!this.#isEnabled) return;
    if (info === undefined || info.revision === 0) throw new EtcdServerError('USER_EMPTY');
    const user = this.#users.get(info.username);
    if (user === undefined) throw new EtcdServerError('PERMISSION_DENIED');
    if (hasRootRole(user)) return;
    if (!this.#permissionsOf(user).allows(access, key, rangeEnd)) {
      throw new EtcdServerError('PERMISSION_DENIED');
    }
  }

  /** Throws unless `info`'s user has the root role (etcd's IsAdminPermitted); passes while off. */
  checkAdmin(info: AuthInfo | undefined): void {
    if (!this.#isEnabled) return;
    if (info === undefined || info.username.length === 0) throw new EtcdServerError('USER_EMPTY');
    const user = this.#users.get(info.username);
    if (user === undefined) throw new EtcdServerError('USER_NOT_FOUND');
    if (!hasRootRole(user)) throw new EtcdServerError('PERMISSION_DENIED');
  }

  /** Whether `info`'s user is an admin (or auth is off), without throwing. */
  isAdmin(info: AuthInfo | undefined): boolean {
    try {
      this.checkAdmin(info);
      return true;
    } catch {
      return false;
    }
  }

  /** Whether the user exists and has been granted `role`. */
  hasRole(username: string, role: string): boolean {
    return this.#users.get(username)?.roles.includes(role) ?? false;
  }

  /** Number of live or not yet swept tokens (for tests). */
  get tokenCount(): number {
    return this.#tokens.size;
  }

  #requireUser(name: string): StoredUser {
    const user = this.#users.get(name);
    if (user === undefined) throw new EtcdServerError('USER_NOT_FOUND');
    return user;
  }

  #permissionsOf(user: StoredUser): KeyPermissions {
    let permissions = this.#permissionCache.get(user.name);
    if (permissions === undefined) {
      const granted = user.roles.flatMap((role) => this.#roles.get(role)?.permissions ?? []);
      permissions = new KeyPermissions(granted);
      this.#permissionCache.set(user.name, permissions);
    }
    return permissions;
  }

  /**
   * Calls `listener` after every change of users, roles, permissions or whether auth is on (a
   * data dir logs them). Returns an unsubscribe function.
   * @internal
   */
  subscribe(listener: () => void): () => void {
    this.#changeListeners.add(listener);
    return () => this.#changeListeners.delete(listener);
  }

  /** Everything a restart keeps (see {@link AuthState}). @internal */
  state(): AuthState {
    return {
      enabled: this.#isEnabled,
      revision: this.#currentRevision,
      users: [...this.#users.values()].map((user) => ({ ...user, roles: [...user.roles] })),
      roles: [...this.#roles.values()].map((role) => ({
        name: role.name,
        permissions: role.permissions.map((p) => ({ ...p })),
      })),
    };
  }

  /** Replaces users, roles and the auth revision with a state read back from a data dir. @internal */
  restore(state: AuthState): void {
    this.#users.clear();
    this.#roles.clear();
    for (const user of state.users) this.#users.set(user.name, { ...user, roles: [...user.roles] });
    for (const role of state.roles) {
      this.#roles.set(role.name, { name: role.name, permissions: [...role.permissions] });
    }
    this.#isEnabled = state.enabled;
    this.#currentRevision = state.revision;
    this.#permissionCache.clear();
  }

  #changed(): void {
    this.#currentRevision++;
    this.#permissionCache.clear();
    this.#notify();
  }

  #notify(): void {
    for (const listener of this.#changeListeners) listener();
  }
}

function hasRootRole(user: StoredUser): boolean {
  return user.roles.includes(ROOT);
}

/** gRPC-gateway clients send `authorization: Bearer <token>`; etcd takes the token after it. */
function stripBearer(token: string): string {
  return token.startsWith('Bearer ') ? token.slice('Bearer '.length) : token;
}

function samePermissionKeys(
  a: Pick<KeyPermission, 'key' | 'rangeEnd'>,
  b: Pick<KeyPermission, 'key' | 'rangeEnd'>,
): boolean {
  return Buffer.compare(a.key, b.key) === 0 && Buffer.compare(a.rangeEnd, b.rangeEnd) === 0;
}

/** Inserts after every permission whose key is not above the new one (keys sorted, ties kept). */
function insertByKey(permissions: KeyPermission[], added: KeyPermission): KeyPermission[] {
  const at = permissions.findIndex((p) => Buffer.compare(p.key, added.key) > 0);
  const index = at < 0 ? permissions.length : at;
  return [...permissions.slice(0, index), added, ...permissions.slice(index)];
}
