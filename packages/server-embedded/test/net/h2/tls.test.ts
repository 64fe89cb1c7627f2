// The server's own HTTP/2 layer over TLS (ALPN h2), reached by grpc-js with a client certificate
// the handler sees.
import { makeTestCertificates, type TestCertificates } from '@etcdkit/testkit';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { H2GrpcServer } from '../../../src/net/h2/server.js';
import { newSeen, toyRoutes } from './toy-service.js';

let certs: TestCertificates;
beforeAll(async () => {
  certs = await makeTestCertificates();
});
afterAll(async () => {
  await certs.remove();
});

describe('H2GrpcServer over TLS', () => {
  it('serves a call and shows the client certificate to the handler', async () => {
    const server = new H2GrpcServer({ routes: toyRoutes(newSeen()) });
    const { port } = await server.listenTls(0, '127.0.0.1', {
      cert: certs.server.cert,
      key: certs.server.key,
      ca: certs.ca.cert,
      requestCert: true,
      rejectUnauthorized: true,
    });
    const client = new grpc.Client(
      `127.0.0.1:${port}`,
      grpc.credentials.createSsl(
        Buffer.from(certs.clientTls.ca),
        Buffer.from(certs.clientTls.key),
        Buffer.from(certs.clientTls.cert),
      ),
    );
    try {
      const subject = await new Promise<string>((resolve, reject) => {
        client.makeUnaryRequest(
          '/toy.Echo/Subject',
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.alloc(0),
          (error, response) => (error ? reject(error) : resolve(String(response))),
        );
      });
      expect(subject).toBe(certs.client.commonName);
    } finally {
      client.close();
      await server.destroy();
    }
  });
});
