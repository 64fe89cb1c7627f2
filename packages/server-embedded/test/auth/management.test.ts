// The Auth service's management calls: users, roles, permissions, the root rules, enabling and
// disabling, Authenticate and AuthStatus, with etcd's exact codes and messages. Every test runs on
// the embedded server and on a real etcd; where etcd 3.4 answers differently from etcd 3.5+ (which
// the embedded server follows), both answers are spelled out.
import {
  etcdserverpb_Auth as Auth,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { expect, it } from 'vitest';
import { b, text } from '../support/bytes.js';
import { atLeast } from '../support/test-server.js';
import {
  Code,
  describeAuth,
  Errors,
  failure,
  isModern,
  READ,
  READWRITE,
  ROOT_PASSWORD,
  setUpAuth,
  WRITE,
} from './auth-support.js';

/** A permission as RoleGet answers it, in text. */
function permissions(response: {
  perm: { permType?: number | null; key?: Uint8Array | null; rangeEnd?: Uint8Array | null }[];
}) {
  return response.perm.map((p) => [Number(p.permType ?? 0), text(p.key), text(p.rangeEnd)]);
}

describeAuth(
  'management',
  ({ fresh }) => {
    it('AuthEnable needs a root user holding the root role; Authenticate needs auth on', async () => {
      const { client } = await fresh();
      expect(await failure(client.unary(Auth.AuthEnable, {}))).toEqual(Errors.rootUserMissing);
      await client.unary(Auth.UserAdd, { name: 'root', password: ROOT_PASSWORD });
      expect(await failure(client.unary(Auth.AuthEnable, {}))).toEqual(Errors.rootRoleMissing);
      // The root role may be granted before it exists; enabling then works.
      await client.unary(Auth.UserGrantRole, { user: 'root', role: 'root' });
      expect(await failure(client.token('root', ROOT_PASSWORD))).toEqual(Errors.notEnabled);
      await client.unary(Auth.AuthEnable, {});
      expect(await client.token('root', ROOT_PASSWORD)).toMatch(/^[A-Za-z]{16}\.\d+$/);
    });

    it('names must not be empty; users and roles exist once; lists are in byte order', async () => {
      const { client } = await fresh();
      expect(await failure(client.unary(Auth.UserAdd, { name: '', password: 'x' }))).toEqual(
        Errors.userEmpty,
      );
      expect(await failure(client.unary(Auth.RoleAdd, { name: '' }))).toEqual(Errors.roleEmpty);
      for (const name of ['b', 'a', 'B']) {
        await client.unary(Auth.UserAdd, { name, password: 'x' });
        await client.unary(Auth.RoleAdd, { name: `${name}-role` });
      }
      expect(await failure(client.unary(Auth.UserAdd, { name: 'a', password: 'y' }))).toEqual(
        Errors.userExists,
      );
      expect(await failure(client.unary(Auth.RoleAdd, { name: 'a-role' }))).toEqual(
        Errors.roleExists,
      );
      expect((await client.unary(Auth.UserList, {})).users).toEqual(['B', 'a', 'b']);
      expect((await client.unary(Auth.RoleList, {})).roles).toEqual(['B-role', 'a-role', 'b-role']);
      const missing = [
        () => client.unary(Auth.UserGet, { name: 'nobody' }),
        () => client.unary(Auth.UserDelete, { name: 'nobody' }),
        () => client.unary(Auth.UserChangePassword, { name: 'nobody', password: 'x' }),
        () => client.unary(Auth.UserGrantRole, { user: 'nobody', role: 'a-role' }),
        () => client.unary(Auth.UserRevokeRole, { name: 'nobody', role: 'a-role' }),
      ];
      for (const call of missing) expect(await failure(call())).toEqual(Errors.userNotFound);
      const missingRole = [
        () => client.unary(Auth.RoleGet, { role: 'none' }),
        () => client.unary(Auth.RoleDelete, { role: 'none' }),
        () => client.unary(Auth.UserGrantRole, { user: 'a', role: 'none' }),
        () => client.unary(Auth.RoleGrantPermission, { name: 'none', perm: { key: b('k') } }),
        () => client.unary(Auth.RoleRevokePermission, { role: 'none', key: b('k') }),
      ];
      for (const call of missingRole) expect(await failure(call())).toEqual(Errors.roleNotFound);
    });

    it('roles are granted once, listed sorted, revoked once; deleting a role revokes it everywhere', async () => {
      const { client } = await fresh();
      await client.unary(Auth.UserAdd, { name: 'alice', password: 'x' });
      await client.unary(Auth.UserAdd, { name: 'bob', password: 'x' });
      for (const role of ['writer', 'reader']) await client.unary(Auth.RoleAdd, { name: role });
      await client.unary(Auth.UserGrantRole, { user: 'alice', role: 'writer' });
      await client.unary(Auth.UserGrantRole, { user: 'alice', role: 'reader' });
      await client.unary(Auth.UserGrantRole, { user: 'alice', role: 'reader' });
      await client.unary(Auth.UserGrantRole, { user: 'bob', role: 'reader' });
      expect((await client.unary(Auth.UserGet, { name: 'alice' })).roles).toEqual([
        'reader',
        'writer',
      ]);
      await client.unary(Auth.UserRevokeRole, { name: 'alice', role: 'writer' });
      expect(
        await failure(client.unary(Auth.UserRevokeRole, { name: 'alice', role: 'writer' })),
      ).toEqual(Errors.roleNotGranted);
      await client.unary(Auth.RoleDelete, { role: 'reader' });
      expect((await client.unary(Auth.UserGet, { name: 'alice' })).roles).toEqual([]);
      expect((await client.unary(Auth.UserGet, { name: 'bob' })).roles).toEqual([]);
      expect((await client.unary(Auth.RoleList, {})).roles).toEqual(['writer']);
    });

    it('permissions: one key, a range, a prefix, from a key on; sorted by key; a re-grant replaces the type; revoked exactly', async () => {
      const { client } = await fresh();
      await client.unary(Auth.RoleAdd, { name: 'r' });
      const grant = (permType: number, key: string, rangeEnd = '') =>
        client.unary(Auth.RoleGrantPermission, {
          name: 'r',
          perm: { permType, key: b(key), rangeEnd: b(rangeEnd) },
        });
      await grant(READ, 'z', '\0');
      await grant(WRITE, 'k');
      await grant(READWRITE, 'p/', 'p0');
      await grant(READ, 'a', 'c');
      expect(permissions(await client.unary(Auth.RoleGet, { role: 'r' }))).toEqual([
        [READ, 'a', 'c'],
        [WRITE, 'k', ''],
        [READWRITE, 'p/', 'p0'],
        [READ, 'z', '\0'],
      ]);
      await grant(READWRITE, 'k');
      await client.unary(Auth.RoleRevokePermission, { role: 'r', key: b('a'), rangeEnd: b('c') });
      expect(
        await failure(
          client.unary(Auth.RoleRevokePermission, { role: 'r', key: b('a'), rangeEnd: b('b') }),
        ),
      ).toEqual(Errors.permissionNotGranted);
      expect(
        await failure(client.unary(Auth.RoleRevokePermission, { role: 'r', key: b('p/') })),
      ).toEqual(Errors.permissionNotGranted);
      expect(permissions(await client.unary(Auth.RoleGet, { role: 'r' }))).toEqual([
        [READWRITE, 'k', ''],
        [READWRITE, 'p/', 'p0'],
        [READ, 'z', '\0'],
      ]);
    });

    it('etcd 3.5+ refuses a permission without a key or with an empty range (3.4 stores it)', async () => {
      const { client, version } = await fresh();
      await client.unary(Auth.RoleAdd, { name: 'r' });
      const invalid = [
        { permType: READ, key: b('') },
        { permType: READ, key: b('b'), rangeEnd: b('a') },
        { permType: READ, key: b('b'), rangeEnd: b('b') },
      ];
      for (const perm of invalid) {
        const granted = client.unary(Auth.RoleGrantPermission, { name: 'r', perm });
        if (isModern(version)) expect(await failure(granted)).toEqual(Errors.invalidManagement);
        else await granted;
      }
      const stored = permissions(await client.unary(Auth.RoleGet, { role: 'r' }));
      expect(stored).toEqual(
        isModern(version)
          ? []
          : [
              [READ, '', ''],
              [READ, 'b', 'a'],
              [READ, 'b', 'b'],
            ],
      );
    });

    it('RoleGet of root shows read-write on every key on etcd 3.6+, whatever was granted', async () => {
      const { client, version } = await fresh();
      await client.unary(Auth.RoleAdd, { name: 'root' });
      await client.unary(Auth.RoleGrantPermission, {
        name: 'root',
        perm: { permType: READ, key: b('a') },
      });
      const shown = permissions(await client.unary(Auth.RoleGet, { role: 'root' }));
      expect(shown).toEqual(atLeast(version, 3, 6) ? [[READWRITE, '', '\0']] : [[READ, 'a', '']]);
    });

    it('while auth is on, root and its role stay: invalid auth management; once off they may go', async () => {
      const { client } = await fresh();
      const { root } = await setUpAuth(client);
      expect(await failure(client.unary(Auth.UserDelete, { name: 'root' }, root))).toEqual(
        Errors.invalidManagement,
      );
      expect(await failure(client.unary(Auth.RoleDelete, { role: 'root' }, root))).toEqual(
        Errors.invalidManagement,
      );
      expect(
        await failure(client.unary(Auth.UserRevokeRole, { name: 'root', role: 'root' }, root)),
      ).toEqual(Errors.invalidManagement);
      await client.unary(Auth.AuthDisable, {}, root);
      await client.unary(Auth.UserRevokeRole, { name: 'root', role: 'root' });
      await client.unary(Auth.RoleDelete, { role: 'root' });
      await client.unary(Auth.UserDelete, { name: 'root' });
      expect((await client.unary(Auth.UserList, {})).users).toEqual([]);
    });

    it('with auth on, management needs the root role; a user may read itself and its roles', async () => {
      const { client } = await fresh();
      const tokens = await setUpAuth(client, { alice: [{ type: READ, key: 'a' }] });
      const asAlice = tokens.alice;
      const adminCalls = (token?: string) => [
        () => client.unary(Auth.UserAdd, { name: 'x', password: 'x' }, token),
        () => client.unary(Auth.UserList, {}, token),
        () => client.unary(Auth.RoleList, {}, token),
        () => client.unary(Auth.UserGet, { name: 'root' }, token),
        () => client.unary(Auth.RoleGet, { role: 'root' }, token),
        () => client.unary(Auth.UserChangePassword, { name: 'alice', password: 'new' }, token),
        () => client.unary(Auth.RoleAdd, { name: 'x' }, token),
        () => client.unary(Auth.AuthDisable, {}, token),
        () => client.unary(Auth.AuthEnable, {}, token),
      ];
      for (const call of adminCalls()) expect(await failure(call())).toEqual(Errors.userEmpty);
      for (const call of adminCalls(asAlice)) {
        expect(await failure(call())).toEqual(Errors.permissionDenied);
      }
      expect((await client.unary(Auth.UserGet, { name: 'alice' }, asAlice)).roles).toEqual([
        'alice-role',
      ]);
      const own = await client.unary(Auth.RoleGet, { role: 'alice-role' }, asAlice);
      expect(permissions(own)).toEqual([[READ, 'a', '']]);
      // Enabling an enabled auth is an admin call that changes nothing.
      await client.unary(Auth.AuthEnable, {}, tokens.root);
    });

    it('Authenticate: a wrong password or an unknown user fail alike; a no-password user cannot; an empty password can', async () => {
      const { client } = await fresh();
      await client.unary(Auth.UserAdd, {
        name: 'cert-only',
        password: 'x',
        options: { noPassword: true },
      });
      await client.unary(Auth.UserAdd, { name: 'blank', password: '' });
      await setUpAuth(client);
      expect(await failure(client.token('root', 'wrong'))).toEqual(Errors.authFailed);
      expect(await failure(client.token('nobody', ROOT_PASSWORD))).toEqual(Errors.authFailed);
      expect(await failure(client.token('cert-only', 'x'))).toEqual(Errors.noPasswordUser);
      expect(await failure(client.token('cert-only', ''))).toEqual(Errors.noPasswordUser);
      expect(await client.token('blank', '')).toMatch(/^[A-Za-z]{16}\.\d+$/);
    });

    it("a token is 16 letters, a dot and its Authenticate request's raft index (3.5+: the one before)", async () => {
      const { client, version } = await fresh();
      const { root } = await setUpAuth(client);
      const before = await client.unary(Maintenance.Status, {}, root);
      const token = await client.token('root', ROOT_PASSWORD);
      expect(token).toMatch(/^[A-Za-z]{16}\.\d+$/);
      const own = before.raftIndex + 1n;
      expect(BigInt(token.split('.')[1]!)).toBe(isModern(version) ? own - 1n : own);
      // A failed password check proposes nothing.
      await failure(client.token('root', 'wrong'));
      const after = await client.unary(Maintenance.Status, {}, root);
      expect(after.raftIndex).toBe(before.raftIndex + 1n);
    });

    it('a new password and a deleted user invalidate their tokens; a deleted role only its permissions', async () => {
      const { client } = await fresh();
      const tokens = await setUpAuth(client, {
        alice: [{ type: READ, key: 'a' }],
        bob: [{ type: READ, key: 'a' }],
      });
      const get = (token: string) => client.unary(Auth.UserGet, { name: 'alice' }, token);
      await client.unary(Auth.UserChangePassword, { name: 'alice', password: 'new' }, tokens.root);
      expect(await failure(get(tokens.alice))).toEqual(Errors.invalidToken);
      await client.unary(Auth.UserDelete, { name: 'bob' }, tokens.root);
      expect(await failure(get(tokens.bob))).toEqual(Errors.invalidToken);
      expect(await failure(client.token('alice', 'alice-secret'))).toEqual(Errors.authFailed);
      expect(await client.token('alice', 'new')).toMatch(/\./);
    });

    it('a password changed to an empty one opens nothing on etcd 3.5+ (3.4 hashes it)', async () => {
      const { client, version } = await fresh();
      const { root } = await setUpAuth(client, { alice: [] });
      await client.unary(Auth.UserChangePassword, { name: 'alice', password: '' }, root);
      const login = client.token('alice', '');
      if (isModern(version)) expect(await failure(login)).toEqual(Errors.authFailed);
      else expect(await login).toMatch(/\./);
      expect(await failure(client.token('alice', 'alice-secret'))).toEqual(Errors.authFailed);
    });

    it('AuthDisable forgets every token; with auth off, calls need none', async () => {
      const { client, version } = await fresh();
      const { root } = await setUpAuth(client);
      await client.unary(Auth.AuthDisable, {}, root);
      expect(await failure(client.token('root', ROOT_PASSWORD))).toEqual(Errors.notEnabled);
      await client.unary(Auth.UserList, {});
      // etcd 3.5+ does not look at tokens while auth is off; 3.4 still rejects the forgotten one.
      const withOldToken = client.unary(Auth.UserList, {}, root);
      if (isModern(version)) expect((await withOldToken).users).toEqual(['root']);
      else expect(await failure(withOldToken)).toEqual(Errors.invalidToken);
      await client.unary(Auth.AuthDisable, {});
    });

    it('AuthStatus (etcd 3.5+): enabled, and a revision every change bumps, AuthEnable excepted', async () => {
      const { client, version } = await fresh();
      if (!isModern(version)) {
        expect((await failure(client.unary(Auth.AuthStatus, {}))).code).toBe(Code.UNIMPLEMENTED);
        return;
      }
      const status = async (token?: string) => {
        const response = await client.unary(Auth.AuthStatus, {}, token);
        return [response.enabled, Number(response.authRevision)];
      };
      expect(await status()).toEqual([false, 1]);
      await client.unary(Auth.UserAdd, { name: 'root', password: ROOT_PASSWORD });
      await client.unary(Auth.RoleAdd, { name: 'root' });
      await client.unary(Auth.UserGrantRole, { user: 'root', role: 'root' });
      // Granting a role the user has changes nothing; failures change nothing.
      await client.unary(Auth.UserGrantRole, { user: 'root', role: 'root' });
      await failure(client.unary(Auth.RoleAdd, { name: 'root' }));
      expect(await status()).toEqual([false, 4]);
      await client.unary(Auth.AuthEnable, {});
      const root = await client.token('root', ROOT_PASSWORD);
      expect(await status(root)).toEqual([true, 4]);
      // With auth on, etcd 3.5 and 3.6 tell the status only to the root role; etcd main (3.7) anyone.
      if (atLeast(version, 3, 7)) expect(await status()).toEqual([true, 4]);
      else expect(await failure(client.unary(Auth.AuthStatus, {}))).toEqual(Errors.userEmpty);
      await client.unary(Auth.AuthDisable, {}, root);
      expect(await status()).toEqual([false, 5]);
    });

    it('an unknown token fails every management call before it is proposed (Authenticate on 3.5+ ignores it)', async () => {
      const { client, version } = await fresh();
      const { root } = await setUpAuth(client);
      const before = (await client.unary(Maintenance.Status, {}, root)).raftIndex;
      const bad = 'abcdefghijklmnop.1';
      expect(await failure(client.unary(Auth.UserList, {}, bad))).toEqual(Errors.invalidToken);
      expect(await failure(client.unary(Auth.RoleAdd, { name: 'x' }, bad))).toEqual(
        Errors.invalidToken,
      );
      const authenticate = client.unary(
        Auth.Authenticate,
        { name: 'root', password: ROOT_PASSWORD },
        bad,
      );
      if (isModern(version)) expect((await authenticate).token).toMatch(/\./);
      else expect(await failure(authenticate)).toEqual(Errors.invalidToken);
      const after = (await client.unary(Maintenance.Status, {}, root)).raftIndex;
      expect(after).toBe(before + (isModern(version) ? 1n : 0n));
    });
  },
  // 3.4's management rules run on the embedded server answering as 3.4 (3.5 is its default).
  { embeddedAs: ['3.4'] },
);
