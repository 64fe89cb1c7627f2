// etcd's HTTP endpoints over TLS, side by side with a real etcd: HTTP/1.1 (ALPN http/1.1 or no
// ALPN) and HTTP/2 (ALPN h2, what curl picks) answer alike, and with client-certificate auth a
// client without a certificate is refused at the handshake, for these endpoints as for gRPC.
import { connect as h2Connect } from 'node:http2';
import {
  describeRealEtcd,
  type EtcdProcess,
  makeTestCertificates,
  startEtcd,
  type TestCertificates,
} from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEtcd, type EtcdVersion } from '../../../src/index.js';
import { comparable, type Exchange, exchange, get } from './raw-http.js';

/** Status, content type and body of a GET over HTTP/2 with TLS. */
async function h2Get(
  port: number,
  path: string,
  tls: { ca: string; cert?: string; key?: string },
): Promise<{ status: number; type: unknown; body: string }> {
  const session = h2Connect(`https://127.0.0.1:${port}`, tls);
  try {
    const stream = session.request({ ':path': path });
    let status = 0;
    let type: unknown;
    let body = '';
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
      type = headers['content-type'];
    });
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      body += chunk;
    });
    await new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    return { status, type, body };
  } finally {
    session.close();
  }
}

function comparableExchange(result: Exchange): unknown {
  return {
    closed: result.closed,
    refused: result.failure !== undefined,
    responses: result.responses.map(comparable),
  };
}

describeRealEtcd('HTTP endpoints over TLS, as etcd answers', () => {
  let certs: TestCertificates;

  beforeAll(async () => {
    certs = await makeTestCertificates();
  });

  afterAll(async () => {
    await certs?.remove();
  });

  for (const clientCertAuth of [false, true]) {
    describe(clientCertAuth ? 'with --client-cert-auth' : 'server TLS only', () => {
      let etcd: EtcdProcess;
      let embedded: EmbeddedEtcd;

      beforeAll(async () => {
        etcd = await startEtcd({ tls: certs.etcdTls({ clientCertAuth }) });
        embedded = await EmbeddedEtcd.start({
          // Answering as the real one's version, claiming its release.
          etcdVersion: etcd.version.split('.').slice(0, 2).join('.') as EtcdVersion,
          version: etcd.version,
          tls: {
            cert: certs.server.cert,
            key: certs.server.key,
            ...(clientCertAuth ? { ca: certs.ca.cert, clientCertAuth } : {}),
          },
        });
      }, 60_000);

      afterAll(async () => {
        await etcd?.stop();
        await embedded?.stop();
      });

      async function same(
        request: string,
        tls: { ca: string; cert?: string; key?: string; ALPNProtocols?: string[] },
      ): Promise<Exchange> {
        const [theirs, ours] = await Promise.all([
          exchange(etcd.clientPort, request, { tls }),
          exchange(embedded.port, request, { tls }),
        ]);
        expect(comparableExchange(ours)).toEqual(comparableExchange(theirs));
        return ours;
      }

      it('HTTP/1.1 with a client certificate: /health and /version', async () => {
        const tls = { ca: certs.ca.cert, cert: certs.client.cert, key: certs.client.key };
        const health = await same(get('/health'), tls);
        expect(health.responses[0]?.status).toBe(200);
        await same(get('/version'), { ...tls, ALPNProtocols: [] });
        await same(get('/nope'), tls);
      });

      it(
        clientCertAuth
          ? 'HTTP/1.1 without a client certificate is refused at the handshake'
          : 'HTTP/1.1 without a client certificate is served',
        async () => {
          const result = await same(get('/health'), { ca: certs.ca.cert });
          expect(result.responses.length).toBe(clientCertAuth ? 0 : 1);
          expect(result.failure !== undefined || result.closed).toBe(clientCertAuth);
        },
      );

      it('HTTP/2 (ALPN h2, as curl asks) gets the same endpoints', async () => {
        const tls = { ca: certs.ca.cert, cert: certs.client.cert, key: certs.client.key };
        for (const path of ['/health', '/version', '/livez', '/nope']) {
          const [theirs, ours] = await Promise.all([
            h2Get(etcd.clientPort, path, tls),
            h2Get(embedded.port, path, tls),
          ]);
          expect(ours).toEqual(theirs);
        }
      });
    });
  }
});
