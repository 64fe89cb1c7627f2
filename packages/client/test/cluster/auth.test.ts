// AuthClient against a real etcd and the embedded server: users, roles, permissions, enabling and
// disabling auth.
import { describeEachBackend, type TestBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toBytes } from '../../src/bytes.js';
import {
  AuthClient,
  keyPermission,
  type Permission,
  prefixPermission,
  rangePermission,
} from '../../src/cluster/auth.js';
import { MaintenanceClient } from '../../src/cluster/maintenance.js';
import { Connection } from '../../src/connection/connection.js';
import {
  AuthFailedError,
  AuthNotEnabledError,
  PermissionDeniedError,
  PermissionNotGrantedError,
  RoleNotFoundError,
  RoleNotGrantedError,
  RootUserNotExistError,
  type ServerErrorClass,
  UnimplementedError,
  UserAlreadyExistsError,
  UserEmptyError,
  UserNotFoundError,
} from '../../src/errors.js';
import { etcdserverpb_KV as kv } from '../../src/generated/methods.js';
import { AUTH_BACKENDS } from '../auth-servers.js';

/**
 * Matches an etcd error by its stable code and exact message. (`toBeInstanceOf` would be the natural
 * check, but errors.ts registers the anonymous base class of each error, not the exported one.)
 */
const etcdError = (kind: ServerErrorClass) =>
  expect.objectContaining({ code: kind.errorCode, message: kind.etcdMessage });

describe('permission helpers', () => {
  it('spell one key, a prefix, a range and every key the way etcd does', () => {
    expect(keyPermission('a', 'read')).toEqual({
      type: 'read',
      key: toBytes('a'),
      rangeEnd: new Uint8Array(),
    });
    expect(prefixPermission('config/', 'write')).toEqual({
      type: 'write',
      key: toBytes('config/'),
      rangeEnd: toBytes('config0'),
    });
    expect(prefixPermission('', 'readwrite')).toEqual({
      type: 'readwrite',
      key: new Uint8Array([0]),
      rangeEnd: new Uint8Array([0]),
    });
    expect(rangePermission('a', 'c', 'read')).toEqual({
      type: 'read',
      key: toBytes('a'),
      rangeEnd: toBytes('c'),
    });
  });
});

describeEachBackend(
  'AuthClient administration',
  ({ backend }) => {
    /** The suite's own server, started fresh for it by the testkit; auth is turned on below. */
    let etcd: TestBackend;
    /** The server's own version (its Status answer), for the answers that differ by version. */
    let version: string;
    const connections: Connection[] = [];
    /** No credentials: the admin before auth is enabled, and the outsider after. */
    let anonymous: Connection;
    let auth: AuthClient;

    const rootPassword = 'root-secret';

    beforeAll(async () => {
      etcd = backend();
      anonymous = connect();
      auth = new AuthClient(anonymous);
      ({ version } = await new MaintenanceClient(anonymous).status());
    });

    afterAll(async () => {
      await Promise.all(connections.map((c) => c.close()));
    });

    function connect(credentials?: { username: string; password: string }): Connection {
      const connection = new Connection({
        endpoints: etcd.endpoints,
        ...(credentials ? { auth: credentials } : {}),
      });
      connections.push(connection);
      return connection;
    }

    const put = (connection: Connection, key: string) =>
      connection.unary(kv.Put, { key: toBytes(key), value: toBytes('v') }, 'write');
    const get = (connection: Connection, key: string) =>
      connection.unary(kv.Range, { key: toBytes(key) }, 'read');

    it('refuses to enable auth without a root user, and to authenticate while it is off', async () => {
      await expect(auth.enable()).rejects.toEqual(etcdError(RootUserNotExistError));
      await expect(auth.authenticate('root', rootPassword)).rejects.toEqual(
        etcdError(AuthNotEnabledError),
      );
    });

    it('reports auth status on etcd 3.5+, and UnimplementedError on 3.4', async () => {
      if (version.startsWith('3.4.')) {
        await expect(auth.status()).rejects.toBeInstanceOf(UnimplementedError);
      } else {
        expect(await auth.status()).toMatchObject({ enabled: false });
      }
    });

    it('adds users and roles, and lists them sorted', async () => {
      await auth.userAdd('root', rootPassword);
      await auth.roleAdd('root');
      await auth.userGrantRole('root', 'root');
      await auth.userAdd('alice', 'alice-1');
      await auth.roleAdd('reader');

      expect(await auth.userList()).toEqual(['alice', 'root']);
      expect(await auth.roleList()).toEqual(['reader', 'root']);
      expect(await auth.userGet('root')).toMatchObject({ name: 'root', roles: ['root'] });
      expect(await auth.userGet('alice')).toMatchObject({ name: 'alice', roles: [] });
      expect(await auth.roleGet('reader')).toMatchObject({ name: 'reader', permissions: [] });

      await expect(auth.userAdd('alice', 'again')).rejects.toEqual(
        etcdError(UserAlreadyExistsError),
      );
      await expect(auth.userGet('nobody')).rejects.toEqual(etcdError(UserNotFoundError));
      await expect(auth.roleGet('nothing')).rejects.toEqual(etcdError(RoleNotFoundError));
    });

    it('grants and revokes key, prefix and range permissions with exact lists', async () => {
      await auth.roleGrantPermission('reader', { prefix: 'config/', type: 'read' });
      await auth.roleGrantPermission('reader', { key: 'single', type: 'readwrite' });
      await auth.roleGrantPermission('reader', { key: 'a', rangeEnd: 'c', type: 'write' });
      const expected: Permission[] = [
        rangePermission('a', 'c', 'write'),
        prefixPermission('config/', 'read'),
        keyPermission('single', 'readwrite'),
      ];
      expect((await auth.roleGet('reader')).permissions).toEqual(expected);

      // Granting on the same keys again replaces the type.
      await auth.roleGrantPermission('reader', { key: 'single', type: 'read' });
      await auth.roleRevokePermission('reader', rangePermission('a', 'c', 'write'));
      expect((await auth.roleGet('reader')).permissions).toEqual([
        prefixPermission('config/', 'read'),
        keyPermission('single', 'read'),
      ]);

      await expect(
        auth.roleRevokePermission('reader', { key: 'a', rangeEnd: 'c' }),
      ).rejects.toEqual(etcdError(PermissionNotGrantedError));
    });

    it('grants and revokes user roles with exact lists', async () => {
      await auth.userGrantRole('alice', 'reader');
      expect((await auth.userGet('alice')).roles).toEqual(['reader']);
      await auth.userRevokeRole('alice', 'reader');
      expect((await auth.userGet('alice')).roles).toEqual([]);
      await expect(auth.userRevokeRole('alice', 'reader')).rejects.toEqual(
        etcdError(RoleNotGrantedError),
      );
      await auth.userGrantRole('alice', 'reader');
    });

    it('enables auth: anonymous calls fail, users authenticate and get what their roles allow', async () => {
      await auth.enable();

      if (!version.startsWith('3.4.')) {
        const asRoot = new AuthClient(connect({ username: 'root', password: rootPassword }));
        expect(await asRoot.status()).toMatchObject({ enabled: true });
      }
      // Once auth is on, etcd 3.5 and 3.6 tell the auth status only to the root role (etcd's main
      // branch, 3.7, tells anyone).
      if (version.startsWith('3.5.') || version.startsWith('3.6.')) {
        await expect(auth.status()).rejects.toEqual(etcdError(UserEmptyError));
      }
      await expect(put(anonymous, 'config/x')).rejects.toEqual(etcdError(UserEmptyError));

      const token = await auth.authenticate('root', rootPassword);
      expect(token).toMatch(/^\w+\.\d+$/);
      await expect(auth.authenticate('root', 'wrong')).rejects.toEqual(etcdError(AuthFailedError));

      const alice = connect({ username: 'alice', password: 'alice-1' });
      expect((await get(alice, 'config/x')).count).toBe(0n);
      await expect(put(alice, 'config/x')).rejects.toEqual(etcdError(PermissionDeniedError));
    });

    it('administers users as root while auth is enabled, then disables it', async () => {
      const admin = new AuthClient(connect({ username: 'root', password: rootPassword }));

      await admin.userChangePassword('alice', 'alice-2');
      expect(await admin.authenticate('alice', 'alice-2')).toMatch(/^\w+\.\d+$/);
      await expect(admin.authenticate('alice', 'alice-1')).rejects.toEqual(
        etcdError(AuthFailedError),
      );

      // A no-password user cannot authenticate with any password. etcd 3.4 says so with an unmapped
      // message ("auth: authentication failed, password was given for no password user", gRPC
      // Unknown), so match the words common to every version.
      await admin.userAdd('cert-only', 'ignored', { noPassword: true });
      const refused = expect.objectContaining({
        message: expect.stringContaining('authentication failed'),
      });
      await expect(admin.authenticate('cert-only', 'ignored')).rejects.toEqual(refused);
      await expect(admin.authenticate('cert-only', '')).rejects.toEqual(refused);

      await admin.userDelete('cert-only');
      await admin.userDelete('alice');
      await admin.roleDelete('reader');
      expect(await admin.userList()).toEqual(['root']);
      expect(await admin.roleList()).toEqual(['root']);

      await admin.disable();
      expect((await put(anonymous, 'config/x')).header?.revision).toBeGreaterThan(1n);
    });
  },
  { only: AUTH_BACKENDS },
);
