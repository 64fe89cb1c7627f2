// The client certificate as identity (etcd's --client-cert-auth): with auth on, a call that sends
// no token is the user its verified certificate's common name names; a token, when sent, wins,
// and an unknown one is refused even with a good certificate. On the embedded server (tls with
// clientCertAuth) and a real etcd (--client-cert-auth --trusted-ca-file).
import {
  etcdserverpb_Auth as Auth,
  etcdserverpb_KV as KV,
  etcdserverpb_Watch as Watch,
} from '@etcdkit/client/protocol';
import {
  describeEachBackend,
  makeTestCertificates,
  startEtcd,
  type TestCertificates,
} from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';
import { b } from '../support/bytes.js';
import { AuthClient, Errors, failure, READ, READWRITE, ROOT_PASSWORD } from './auth-support.js';

/** The user the client certificate names. */
const COMMON_NAME = 'alice';

/** Sets up root and alice (read on `a`, read-write on `k`), then turns auth on. */
async function setUp(client: AuthClient): Promise<void> {
  await client.unary(Auth.UserAdd, { name: 'root', password: ROOT_PASSWORD });
  await client.unary(Auth.RoleAdd, { name: 'root' });
  await client.unary(Auth.UserGrantRole, { user: 'root', role: 'root' });
  // A certificate user needs no password at all.
  await client.unary(Auth.UserAdd, { name: COMMON_NAME, options: { noPassword: true } });
  await client.unary(Auth.RoleAdd, { name: 'reader' });
  for (const [permType, key] of [
    [READ, 'a'],
    [READWRITE, 'k'],
  ] as const) {
    await client.unary(Auth.RoleGrantPermission, {
      name: 'reader',
      perm: { permType, key: b(key) },
    });
  }
  await client.unary(Auth.UserGrantRole, { user: COMMON_NAME, role: 'reader' });
  await client.unary(Auth.AuthEnable, {});
}

describeEachBackend(
  'auth: client certificate identity',
  ({ name }) => {
    let certs: TestCertificates;
    let endpoint: string;
    let stop: () => Promise<void>;
    let client: AuthClient;

    beforeAll(async () => {
      certs = await makeTestCertificates(undefined, { clientCommonName: COMMON_NAME });
      if (name === 'embedded') {
        const server = await EmbeddedEtcd.start({
          tls: {
            cert: certs.server.cert,
            key: certs.server.key,
            ca: certs.ca.cert,
            clientCertAuth: true,
          },
        });
        endpoint = server.endpoint;
        stop = () => server.stop();
      } else {
        const etcd = await startEtcd({ tls: certs.etcdTls({ clientCertAuth: true }) });
        endpoint = etcd.endpoint;
        stop = () => etcd.stop();
      }
      client = new AuthClient(endpoint, certs.clientTls);
      await setUp(client);
    });
    afterAll(async () => {
      client?.close();
      await stop?.();
      await certs?.remove();
    });

    it('a call without a token is the certificate user, with its permissions', async () => {
      await client.unary(KV.Put, { key: b('k'), value: b('v') });
      expect((await client.unary(KV.Range, { key: b('a') })).count).toBe(0n);
      expect(await failure(client.unary(KV.Put, { key: b('a'), value: b('v') }))).toEqual(
        Errors.permissionDenied,
      );
      expect(await failure(client.unary(Auth.UserList, {}))).toEqual(Errors.permissionDenied);
      expect((await client.unary(Auth.UserGet, { name: COMMON_NAME })).roles).toEqual(['reader']);
    });

    it('a watch stream without a token is the certificate user too', async () => {
      const stream = client.bidi(Watch.Watch);
      try {
        stream.write({ createRequest: { key: b('k') } });
        stream.write({ createRequest: { key: b('secret') } });
        const [allowed, refused] = await stream.take(2);
        expect([allowed?.created, allowed?.canceled]).toEqual([true, false]);
        expect([refused?.watchId, refused?.canceled, refused?.cancelReason]).toEqual([
          -1n,
          true,
          'rpc error: code = PermissionDenied desc = etcdserver: permission denied',
        ]);
      } finally {
        stream.close();
      }
    });

    it('a token wins over the certificate; an unknown one is refused', async () => {
      const root = await client.token('root', ROOT_PASSWORD);
      expect((await client.unary(Auth.UserList, {}, root)).users).toEqual([COMMON_NAME, 'root']);
      expect(await failure(client.unary(KV.Range, { key: b('a') }, 'abcdefghijklmnop.1'))).toEqual(
        Errors.invalidToken,
      );
    });
  },
  { only: ['embedded', 'etcd'] },
);

describe('auth: a client certificate without clientCertAuth (embedded)', () => {
  let certs: TestCertificates | undefined;
  let server: EmbeddedEtcd | undefined;
  let client: AuthClient | undefined;
  afterEach(async () => {
    client?.close();
    await server?.stop();
    await certs?.remove();
  });

  it('is only a certificate: a trusted CA alone names no user', async () => {
    certs = await makeTestCertificates(undefined, { clientCommonName: COMMON_NAME });
    server = await EmbeddedEtcd.start({
      tls: { cert: certs.server.cert, key: certs.server.key, ca: certs.ca.cert },
    });
    client = new AuthClient(server.endpoint, certs.clientTls);
    await setUp(client);
    expect(await failure(client.unary(KV.Range, { key: b('a') }))).toEqual(Errors.userEmpty);
  });
});
