// Permission checks of KV requests with auth on: who may read and write which keys (one key,
// ranges, prefixes, from a key on, pieces granted by several roles), prev_kv, leases attached by
// a put, every op and compare of a txn, compaction; and the order of the checks (validation
// first, then the token, then the permission). On the embedded server and a real etcd.
import {
  etcdserverpb_Auth as Auth,
  type etcdserverpb,
  etcdserverpb_KV as KV,
  etcdserverpb_Lease as Lease,
} from '@etcdkit/client/protocol';
import { expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { op, Result, Target } from '../support/kv.js';
import {
  type AuthClient,
  describeAuth,
  Errors,
  failure,
  fromPatch,
  isModern,
  READ,
  READWRITE,
  setUpAuth,
  WRITE,
} from './auth-support.js';

const NUL = '\0';

type TxnRequest = etcdserverpb.TxnRequest.$Properties;

/** Range, Put and DeleteRange as a token holder. */
function as(client: AuthClient, token: string | undefined) {
  return {
    range: (key: string, rangeEnd = '') =>
      client.unary(KV.Range, { key: b(key), rangeEnd: b(rangeEnd) }, token),
    put: (key: string, extra: { prevKv?: boolean; lease?: bigint } = {}) =>
      client.unary(KV.Put, { key: b(key), value: b('v'), ...extra }, token),
    del: (key: string, rangeEnd = '', prevKv = false) =>
      client.unary(KV.DeleteRange, { key: b(key), rangeEnd: b(rangeEnd), prevKv }, token),
  };
}

describeAuth(
  'KV permissions',
  ({ fresh }) => {
    it('without a token every KV call is "user name is empty", after the request is validated', async () => {
      const { client } = await fresh();
      await setUpAuth(client);
      const anonymous = as(client, undefined);
      expect(await failure(anonymous.range('k'))).toEqual(Errors.userEmpty);
      expect(await failure(anonymous.put('k'))).toEqual(Errors.userEmpty);
      expect(await failure(anonymous.del('k'))).toEqual(Errors.userEmpty);
      expect(await failure(client.unary(KV.Txn, { success: [op.range('k')] }))).toEqual(
        Errors.userEmpty,
      );
      // A request etcd's gRPC layer refuses never gets to the auth check.
      expect(await failure(client.unary(KV.Put, { key: b(''), value: b('v') }))).toEqual({
        code: 3,
        details: 'etcdserver: key is not provided',
      });
      expect(
        await failure(client.unary(KV.Put, { key: b(''), value: b('v') }, 'unknown.1')),
      ).toEqual({ code: 3, details: 'etcdserver: key is not provided' });
      // A txn that touches no key needs no permission.
      expect((await client.unary(KV.Txn, {})).succeeded).toBe(true);
    });

    it('an unknown token is "invalid auth token"; `authorization` carries a token too', async () => {
      const { client, version } = await fresh();
      const { root } = await setUpAuth(client);
      // An index the log has reached: etcd waits for a token's index to be applied before it looks
      // the token up, so a made-up token with a future index would hang there.
      expect(await failure(as(client, 'abcdefghijklmnop.1').range('k'))).toEqual(
        Errors.invalidToken,
      );
      expect(await failure(as(client, 'no-dot').put('k'))).toEqual(Errors.invalidToken);
      expect((await client.unary(KV.Range, { key: b('k') }, { authorization: root })).count).toBe(
        0n,
      );
      // gRPC-gateway style: etcd 3.5.32 and 3.6.13 on take the token after "Bearer ".
      const bearer = client.unary(KV.Range, { key: b('k') }, { authorization: `Bearer ${root}` });
      if (fromPatch(version, { '3.5': 32, '3.6': 13 })) expect((await bearer).count).toBe(0n);
      else expect(await failure(bearer)).toEqual(Errors.invalidToken);
    });

    it('one key, a range, a prefix and from a key on, each read, write or both', async () => {
      const { client } = await fresh();
      const { alice } = await setUpAuth(client, {
        alice: [
          { type: READ, key: 'r' },
          { type: WRITE, key: 'w' },
          { type: READWRITE, key: 'a', end: 'c' },
          { type: READ, key: 'p/', end: 'p0' },
          { type: READWRITE, key: 'z', end: NUL },
        ],
      });
      const user = as(client, alice);
      await user.range('r');
      expect(await failure(user.put('r'))).toEqual(Errors.permissionDenied);
      await user.put('w');
      expect(await failure(user.range('w'))).toEqual(Errors.permissionDenied);
      await user.put('a');
      await user.put('bbb');
      await user.range('a', 'c');
      await user.range('a0', 'b');
      expect(await failure(user.put('c'))).toEqual(Errors.permissionDenied);
      expect(await failure(user.range('a', 'd'))).toEqual(Errors.permissionDenied);
      await user.range('p/', 'p0');
      await user.range('p/x');
      expect(await failure(user.range('p', 'p0'))).toEqual(Errors.permissionDenied);
      expect(await failure(user.put('p/x'))).toEqual(Errors.permissionDenied);
      await user.put('zebra');
      await user.range('z', NUL);
      await user.range('zz', NUL);
      expect(await failure(user.range('y', NUL))).toEqual(Errors.permissionDenied);
      await user.del('z', NUL);
      expect(await failure(user.del('a', 'd'))).toEqual(Errors.permissionDenied);
    });

    it('ranges granted in pieces, by one role or several, add up; a gap between them does not', async () => {
      const { client } = await fresh();
      const { alice, bob, carol, root } = await setUpAuth(client, {
        alice: [
          { type: READ, key: 'a', end: 'c' },
          { type: READ, key: 'c', end: 'e' },
        ],
        bob: [{ type: READ, key: 'a', end: 'c' }],
        carol: [
          { type: READ, key: 'a', end: 'b' },
          { type: READ, key: 'c', end: 'e' },
        ],
      });
      // bob gets the second piece through another role.
      await client.unary(Auth.RoleAdd, { name: 'upper' }, root);
      await client.unary(
        Auth.RoleGrantPermission,
        { name: 'upper', perm: { permType: READ, key: b('c'), rangeEnd: b('e') } },
        root,
      );
      await client.unary(Auth.UserGrantRole, { user: 'bob', role: 'upper' }, root);
      for (const token of [alice, bob]) {
        await as(client, token).range('a', 'e');
        await as(client, token).range('b', 'd');
        expect(await failure(as(client, token).range('a', 'f'))).toEqual(Errors.permissionDenied);
      }
      expect(await failure(as(client, carol).range('a', 'e'))).toEqual(Errors.permissionDenied);
      await as(client, carol).range('c', 'e');
    });

    it('prev_kv needs read as well; a lease whose keys the user may not write may not be attached', async () => {
      const { client } = await fresh();
      const { alice, root } = await setUpAuth(client, {
        alice: [
          { type: WRITE, key: 'w/', end: 'w0' },
          { type: READWRITE, key: 'rw' },
        ],
      });
      const user = as(client, alice);
      await user.put('w/1');
      expect(await failure(user.put('w/1', { prevKv: true }))).toEqual(Errors.permissionDenied);
      await user.put('rw', { prevKv: true });
      expect(await failure(user.del('w/', 'w0', true))).toEqual(Errors.permissionDenied);
      await user.del('w/', 'w0');
      // A lease with a key only root may write.
      const { ID } = await client.unary(Lease.LeaseGrant, { TTL: 60n }, root);
      await as(client, root).put('secret', { lease: ID });
      expect(await failure(user.put('w/2', { lease: ID }))).toEqual(Errors.permissionDenied);
      // A lease of its own, or one without keys, is fine.
      const own = await client.unary(Lease.LeaseGrant, { TTL: 60n }, alice);
      await user.put('w/2', { lease: own.ID });
      await user.put('w/3', { lease: own.ID });
    });

    it('a txn needs read on every compare and its rights on every op of both branches, nested ones too', async () => {
      const { client, version } = await fresh();
      const { alice } = await setUpAuth(client, {
        alice: [
          { type: READ, key: 'r' },
          { type: READWRITE, key: 'rw' },
        ],
      });
      const run = (request: TxnRequest) => client.unary(KV.Txn, request, alice);
      const readable = {
        key: b('r'),
        target: Target.VERSION,
        result: Result.EQUAL,
        version: 0n,
      };
      expect(
        (await run({ compare: [readable], success: [op.put('rw', 'x')], failure: [op.range('r')] }))
          .succeeded,
      ).toBe(true);
      // The branch that does not run is checked all the same.
      expect(
        await failure(
          run({ compare: [readable], success: [op.put('rw', 'x')], failure: [op.put('r', 'x')] }),
        ),
      ).toEqual(Errors.permissionDenied);
      expect(
        await failure(run({ compare: [{ ...readable, key: b('other') }], success: [] })),
      ).toEqual(Errors.permissionDenied);
      // etcd 3.4 does not look inside nested txns (a hole later versions closed).
      const nested = run({ success: [op.txn([], [op.range('rw')], [op.del('r')])] });
      if (isModern(version)) expect(await failure(nested)).toEqual(Errors.permissionDenied);
      else expect((await nested).succeeded).toBe(true);
      // A read-only txn is checked the same way.
      expect(await failure(run({ success: [op.range('r')], failure: [op.range('x')] }))).toEqual(
        Errors.permissionDenied,
      );
    });

    it('compaction is for root on etcd 3.5+ (anyone on 3.4)', async () => {
      const { client, version } = await fresh();
      const { alice, root } = await setUpAuth(client, { alice: [{ type: READWRITE, key: 'k' }] });
      await as(client, alice).put('k');
      const compact = client.unary(KV.Compact, { revision: 2n }, alice);
      if (isModern(version)) {
        expect(await failure(compact)).toEqual(Errors.permissionDenied);
        expect(await failure(client.unary(KV.Compact, { revision: 2n }))).toEqual(Errors.userEmpty);
        await client.unary(KV.Compact, { revision: 2n }, root);
      } else {
        await compact;
      }
    });

    it('root may do anything; a user whose role was revoked may do nothing more', async () => {
      const { client } = await fresh();
      const { alice, root } = await setUpAuth(client, { alice: [{ type: READWRITE, key: 'k' }] });
      await as(client, root).put('anything');
      await as(client, root).range('\0', NUL);
      await as(client, alice).put('k');
      await client.unary(Auth.UserRevokeRole, { name: 'alice', role: 'alice-role' }, root);
      expect(await failure(as(client, alice).put('k'))).toEqual(Errors.permissionDenied);
    });
  },
  { embeddedAs: ['3.4'] },
);
