// The auth store's public vocabulary: permission types and key permissions as etcd's authpb has
// them, who a request comes from (etcd's AuthInfo), and what a call presents to say so.

/** The access a role's key permission grants (authpb.Permission.Type, same numbers). */
export const PermissionType = { READ: 0, WRITE: 1, READWRITE: 2 } as const;

/** A permission type: {@link PermissionType}.READ, WRITE or READWRITE. */
export type PermissionType = (typeof PermissionType)[keyof typeof PermissionType];

/**
 * A role's permission on keys, spelled as etcd spells it: `rangeEnd` empty for the one key `key`,
 * `"\0"` for every key from `key` on, anything else for the range [key, rangeEnd).
 */
export interface KeyPermission {
  readonly type: PermissionType;
  readonly key: Uint8Array;
  readonly rangeEnd: Uint8Array;
}

/**
 * Who a request comes from, once identified by its token or client certificate (etcd's
 * AuthInfo): the user name and the auth revision at that moment.
 */
export interface AuthInfo {
  readonly username: string;
  /** The auth store's revision when the request was identified; 0 means no user. */
  readonly revision: number;
}

/** What a call presents to say who it comes from. */
export interface CallCredentials {
  /** The simple token of the `token` (or `authorization`) metadata, if the call sent one. */
  readonly token?: string;
  /**
   * The common name of the client certificate the TLS handshake verified, when the server takes
   * it as the user (`--client-cert-auth`).
   */
  readonly commonName?: string;
}

/** A user as UserGet and UserList show it. */
export interface AuthUser {
  readonly name: string;
  /** Granted roles, sorted. */
  readonly roles: readonly string[];
  /** Created with `no_password`: it can authenticate only by certificate. */
  readonly noPassword: boolean;
}

/** Whether auth is on and how often the users and roles changed (AuthStatus). */
export interface AuthStatus {
  readonly enabled: boolean;
  /** Bumped by every change of users, roles or permissions, and by AuthDisable. */
  readonly revision: number;
}
