// Lease calls with auth on. Revoking a lease deletes its keys, so it needs write on every one of
// them (root needs nothing). etcd 3.5+ (and the embedded server) also want a user on every lease
// call, write on the keys for a keep-alive, and read on the keys a TimeToLive or LeaseLeases would
// show; etcd 3.4 serves those to anyone. Both backends.
import { etcdserverpb_KV as KV, etcdserverpb_Lease as Lease } from '@etcdkit/client/protocol';
import { expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import {
  type AuthClient,
  describeAuth,
  Errors,
  failure,
  isModern,
  READWRITE,
  setUpAuth,
} from './auth-support.js';

/** Grants a lease as `token` and attaches `keys` to it as root. */
async function leaseWith(
  client: AuthClient,
  root: string,
  keys: readonly string[],
): Promise<bigint> {
  const { ID } = await client.unary(Lease.LeaseGrant, { TTL: 60n }, root);
  for (const key of keys) {
    await client.unary(KV.Put, { key: b(key), value: b('v'), lease: ID }, root);
  }
  return ID;
}

describeAuth(
  'lease permissions',
  ({ fresh }) => {
    it('without a token, lease calls need a user on etcd 3.5+ (3.4 serves them)', async () => {
      const { client, version } = await fresh();
      const { root } = await setUpAuth(client);
      const lease = await leaseWith(client, root, []);
      const calls = [
        () => client.unary(Lease.LeaseGrant, { TTL: 60n }),
        () => client.unary(Lease.LeaseTimeToLive, { ID: lease }),
        () => client.unary(Lease.LeaseLeases, {}),
        () => client.unary(Lease.LeaseRevoke, { ID: lease }),
      ];
      for (const call of calls) {
        if (isModern(version)) expect(await failure(call())).toEqual(Errors.userEmpty);
        else await call();
      }
    });

    it('LeaseRevoke needs write on every key of the lease; root may revoke any', async () => {
      const { client } = await fresh();
      const { alice, root } = await setUpAuth(client, {
        alice: [{ type: READWRITE, key: 'p/', end: 'p0' }],
      });
      const mixed = await leaseWith(client, root, ['p/a', 'secret']);
      const own = await leaseWith(client, root, ['p/b', 'p/c']);
      const empty = await leaseWith(client, root, []);
      expect(await failure(client.unary(Lease.LeaseRevoke, { ID: mixed }, alice))).toEqual(
        Errors.permissionDenied,
      );
      await client.unary(Lease.LeaseRevoke, { ID: own }, alice);
      await client.unary(Lease.LeaseRevoke, { ID: empty }, alice);
      await client.unary(Lease.LeaseRevoke, { ID: mixed }, root);
      expect((await client.unary(KV.Range, { key: b('p/'), rangeEnd: b('p0') }, alice)).count).toBe(
        0n,
      );
      // An unknown lease is not found, whoever asks.
      expect(await failure(client.unary(Lease.LeaseRevoke, { ID: 12345n }, alice))).toEqual({
        code: 5,
        details: 'etcdserver: requested lease not found',
      });
    });

    it('TimeToLive with keys and LeaseLeases need read on the keys shown on etcd 3.5+', async () => {
      const { client, version } = await fresh();
      const { alice, root } = await setUpAuth(client, {
        alice: [{ type: READWRITE, key: 'p/', end: 'p0' }],
      });
      const own = await leaseWith(client, root, ['p/a']);
      const foreign = await leaseWith(client, root, ['secret']);
      const modern = isModern(version);
      expect(
        (await client.unary(Lease.LeaseTimeToLive, { ID: own, keys: true }, alice)).TTL > 0n,
      ).toBe(true);
      expect((await client.unary(Lease.LeaseTimeToLive, { ID: foreign }, alice)).TTL > 0n).toBe(
        true,
      );
      const withKeys = client.unary(Lease.LeaseTimeToLive, { ID: foreign, keys: true }, alice);
      if (modern) expect(await failure(withKeys)).toEqual(Errors.permissionDenied);
      else expect((await withKeys).keys).toHaveLength(1);
      const leases = client.unary(Lease.LeaseLeases, {}, alice);
      if (modern) expect(await failure(leases)).toEqual(Errors.permissionDenied);
      else expect((await leases).leases).toHaveLength(2);
      expect((await client.unary(Lease.LeaseLeases, {}, root)).leases).toHaveLength(2);
      await client.unary(Lease.LeaseRevoke, { ID: foreign }, root);
      expect((await client.unary(Lease.LeaseLeases, {}, alice)).leases).toHaveLength(1);
    });

    it('a keep-alive needs a user and write on the keys on etcd 3.5+, or the stream ends', async () => {
      const { client, version } = await fresh();
      const { alice, root } = await setUpAuth(client, {
        alice: [{ type: READWRITE, key: 'p/', end: 'p0' }],
      });
      const own = await leaseWith(client, root, ['p/a']);
      const foreign = await leaseWith(client, root, ['secret']);
      const renew = async (token: string | undefined, lease: bigint) => {
        const stream = client.bidi(Lease.LeaseKeepAlive, token);
        try {
          stream.write({ ID: lease });
          await Promise.race([stream.take(1), stream.end()]).catch(() => undefined);
          return stream.responses.length > 0 ? stream.responses[0]!.TTL : await stream.end();
        } finally {
          stream.close();
        }
      };
      expect(await renew(alice, own)).toBe(60n);
      expect(await renew(root, foreign)).toBe(60n);
      if (isModern(version)) {
        expect(await renew(alice, foreign)).toEqual(Errors.permissionDenied);
        expect(await renew(undefined, own)).toEqual(Errors.userEmpty);
        expect(await renew('abcdefghijklmnop.1', own)).toEqual(Errors.invalidToken);
      } else {
        expect(await renew(alice, foreign)).toBe(60n);
        expect(await renew(undefined, own)).toBe(60n);
      }
    });
  },
  { embeddedAs: ['3.4'] },
);
