import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  EtcdHttpGateway,
  makeTestCertificates,
  startEtcd,
  type TestCertificates,
} from '../src/index.js';
import { noEtcd } from './helpers.js';

describe('makeTestCertificates', () => {
  let certs: TestCertificates;
  beforeAll(async () => {
    certs = await makeTestCertificates(undefined, { clientCommonName: 'alice' });
  });
  afterAll(() => certs.remove());

  it('signs a server certificate for 127.0.0.1 and localhost with its CA', () => {
    const ca = new X509Certificate(certs.ca.cert);
    const server = new X509Certificate(certs.server.cert);

    expect(ca.ca).toBe(true);
    expect(server.verify(ca.publicKey)).toBe(true);
    expect(server.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(server.checkHost('localhost')).toBe('localhost');
  });

  it('signs a client certificate with the requested common name', () => {
    const client = new X509Certificate(certs.client.cert);

    expect(client.subject).toBe('CN=alice');
    expect(certs.client.commonName).toBe('alice');
    expect(client.verify(new X509Certificate(certs.ca.cert).publicKey)).toBe(true);
    expect(certs.clientTls).toEqual({
      ca: certs.ca.cert,
      cert: certs.client.cert,
      key: certs.client.key,
    });
  });

  it('rejects a common name that would break the openssl config', async () => {
    await expect(
      makeTestCertificates(undefined, { clientCommonName: 'x\n[evil]' }),
    ).rejects.toThrow(/unsupported client common name/);
  });
});

describe.skipIf(noEtcd)('startEtcd with TLS (real etcd binary)', () => {
  let certs: TestCertificates;
  beforeAll(async () => {
    certs = await makeTestCertificates();
  });
  afterAll(() => certs.remove());

  it('serves https when given a server certificate', async () => {
    const etcd = await startEtcd({ tls: certs.etcdTls() });
    onTestFinished(() => etcd.stop());

    expect(etcd.endpoint).toBe(`https://127.0.0.1:${etcd.clientPort}`);
    const gateway = new EtcdHttpGateway(etcd.endpoint, { ca: certs.ca.cert });
    await gateway.put('tls', 'on');
    expect(await gateway.get('tls')).toBe('on');
  });

  it('with clientCertAuth, accepts the client certificate and refuses a client without one', async () => {
    const etcd = await startEtcd({ tls: certs.etcdTls({ clientCertAuth: true }) });
    onTestFinished(() => etcd.stop());

    await new EtcdHttpGateway(etcd.endpoint, certs.clientTls).put('mtls', 'on');
    await expect(
      new EtcdHttpGateway(etcd.endpoint, { ca: certs.ca.cert }).get('mtls'),
    ).rejects.toThrow(/certificate/);
  });
});
