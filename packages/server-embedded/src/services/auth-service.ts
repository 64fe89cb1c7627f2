// etcdserverpb.Auth over gRPC, as etcd serves it: every call is a raft request (it takes a log
// entry even when it then fails), the caller is identified before it is proposed (an unknown token
// fails first), and user and role management needs the root role once auth is on. Authenticate is
// the exception: the password is checked before anything is proposed and the call's own token,
// if any, is not looked at. Every answer carries a full header.
import { type authpb, etcdserverpb_Auth } from '@etcdkit/client/protocol';
import { bytesOf } from '../api/requests.js';
import type { Caller } from '../auth/caller.js';
import { type KeyPermission, PermissionType } from '../auth/types.js';
import { ProposalKind } from '../consensus/proposals.js';
import { fillHeader, type ServiceContext } from './context.js';
import type { CallInfo, ServiceRegistry } from './registry.js';

/** Length of the random part of a simple token, which etcd proposes with Authenticate. */
const TOKEN_PREFIX_LENGTH = 16;
/** etcd proposes the bcrypt hash (60 bytes, base64: 80 characters) instead of the password. */
const PROPOSED_PASSWORD_HASH = 'x'.repeat(80);

export function registerAuthService(registry: ServiceRegistry, context: ServiceContext): void {
  const { authorizer } = context;
  const { store } = authorizer;
  const A = etcdserverpb_Auth;
  const header = () => fillHeader(context);

  /**
   * Identifies the caller, then proposes: an unknown token fails before the log entry is taken,
   * anything else (a missing permission too) after.
   */
  const propose = (call: CallInfo, requestBytes: number): Caller => {
    const caller = authorizer.identify(authorizer.credentialsOf(call));
    context.proposals.propose(ProposalKind.auth, requestBytes, caller.info);
    return caller;
  };
  const admin = (call: CallInfo, requestBytes: number): void => {
    propose(call, requestBytes).requireAdmin();
  };

  const legacy = context.traits.legacyAuthManagement;
  store.tokensCheckedWhileOff = legacy;
  store.bearerTokens = context.traits.bearerTokens;
  store.legacyPermissionChecks = context.traits.legacyPermissionChecks;

  registry.unary(A.Authenticate, (request, _size, call) => {
    // etcd 3.4 checks the call's token first, as for any request; 3.5 on skips it here.
    if (legacy) authorizer.identify(authorizer.credentialsOf(call));
    const name = request.name ?? '';
    store.checkPassword(name, request.password ?? '');
    // The proposed request carries the token's random part where the password was.
    const proposed = { name, password: 'x'.repeat(TOKEN_PREFIX_LENGTH) };
    context.proposals.propose(ProposalKind.auth, encodedSize(A.Authenticate.request, proposed));
    // etcd 3.5 on reads its consistent index while applying, before it counts this entry.
    const index = context.proposals.index - (context.traits.tokenIndexBeforeEntry ? 1 : 0);
    return { header: header(), token: store.authenticate(name, index) };
  });

  registry.unary(A.AuthEnable, (_request, size, call) => {
    admin(call, size);
    store.enable();
    return { header: header() };
  });

  registry.unary(A.AuthDisable, (_request, size, call) => {
    admin(call, size);
    store.disable();
    return { header: header() };
  });

  // AuthStatus came with etcd 3.5; on 3.4 the method is unknown (see registry.unimplemented).
  if (context.traits.authStatus) {
    registry.unary(A.AuthStatus, (_request, size, call) => {
      if (context.traits.authStatusNeedsAdmin) admin(call, size);
      else propose(call, size);
      const status = store.status();
      return { header: header(), enabled: status.enabled, authRevision: BigInt(status.revision) };
    });
  }

  registry.unary(A.UserAdd, (request, size, call) => {
    const noPassword = request.options?.noPassword === true;
    admin(call, noPassword ? size : passwordHashedSize(A.UserAdd.request, request));
    store.userAdd(request.name ?? '', request.password ?? '', noPassword);
    return { header: header() };
  });

  registry.unary(A.UserGet, (request, size, call) => {
    const name = request.name ?? '';
    propose(call, size).checkUserGet(name);
    return { header: header(), roles: [...store.userGet(name).roles] };
  });

  registry.unary(A.UserList, (_request, size, call) => {
    admin(call, size);
    return { header: header(), users: store.userList() };
  });

  registry.unary(A.UserDelete, (request, size, call) => {
    admin(call, size);
    store.userDelete(request.name ?? '');
    return { header: header() };
  });

  registry.unary(A.UserChangePassword, (request, size, call) => {
    // etcd hashes a non-empty password only; an empty one is proposed as it came.
    admin(
      call,
      request.password ? passwordHashedSize(A.UserChangePassword.request, request) : size,
    );
    store.userChangePassword(request.name ?? '', request.password ?? '', { hashEmpty: legacy });
    return { header: header() };
  });

  registry.unary(A.UserGrantRole, (request, size, call) => {
    admin(call, size);
    store.userGrantRole(request.user ?? '', request.role ?? '');
    return { header: header() };
  });

  registry.unary(A.UserRevokeRole, (request, size, call) => {
    admin(call, size);
    store.userRevokeRole(request.name ?? '', request.role ?? '');
    return { header: header() };
  });

  registry.unary(A.RoleAdd, (request, size, call) => {
    admin(call, size);
    store.roleAdd(request.name ?? '');
    return { header: header() };
  });

  registry.unary(A.RoleGet, (request, size, call) => {
    const role = request.role ?? '';
    propose(call, size).checkRoleGet(role);
    const perm = store.roleGet(role, !context.traits.rootRoleShowsEveryKey);
    return { header: header(), perm: perm.map(toWirePermission) };
  });

  registry.unary(A.RoleList, (_request, size, call) => {
    admin(call, size);
    return { header: header(), roles: store.roleList() };
  });

  registry.unary(A.RoleDelete, (request, size, call) => {
    admin(call, size);
    store.roleDelete(request.role ?? '');
    return { header: header() };
  });

  registry.unary(A.RoleGrantPermission, (request, size, call) => {
    admin(call, size);
    store.roleGrantPermission(request.name ?? '', fromWirePermission(request.perm), {
      checkRange: !legacy,
    });
    return { header: header() };
  });

  registry.unary(A.RoleRevokePermission, (request, size, call) => {
    admin(call, size);
    store.roleRevokePermission(request.role ?? '', bytesOf(request.key), bytesOf(request.rangeEnd));
    return { header: header() };
  });
}

function fromWirePermission(
  permission: authpb.Permission.$Properties | null | undefined,
): KeyPermission | undefined {
  if (permission === null || permission === undefined) return undefined;
  return {
    // Kept as sent, known or not: etcd stores any number, and an unknown type grants nothing.
    type: Number(permission.permType ?? PermissionType.READ) as PermissionType,
    key: bytesOf(permission.key),
    rangeEnd: bytesOf(permission.rangeEnd),
  };
}

function toWirePermission(permission: KeyPermission): authpb.Permission.$Properties {
  return {
    permType: permission.type as number as authpb.Permission.Type,
    key: permission.key,
    rangeEnd: permission.rangeEnd,
  };
}

interface Encoder<T> {
  encode(message: T): { finish(): Uint8Array };
}

function encodedSize<T>(codec: Encoder<T>, message: T): number {
  return codec.encode(message).finish().length;
}

/** The size of a request with a password as etcd proposes it: the password replaced by its hash. */
function passwordHashedSize<T extends { password?: string | null }>(
  codec: Encoder<T>,
  request: T,
): number {
  // The hash goes in its own field instead of the password; both take a one-byte tag.
  return encodedSize(codec, { ...request, password: PROPOSED_PASSWORD_HASH });
}
