// A TLS connection to an IP endpoint sends no IP address as SNI (RFC 6066; Node warns DEP0123 once
// per process when given one), on either transport, and still verifies the certificate against the
// IP (the test certificate's IP SAN is 127.0.0.1). Node warns once per process: this file makes the
// process's first TLS connections, so a warning from either transport would be seen.
import {
  type EtcdProcess,
  makeTestCertificates,
  startEtcd,
  type TestCertificates,
} from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnavailableError, WriteNotAppliedError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import type { TransportName } from '../../src/transport/select.js';

describe('TLS to an IP endpoint', () => {
  let certs: TestCertificates;
  let etcd: EtcdProcess;
  const warnings: string[] = [];
  const onWarning = (warning: Error & { code?: string }) =>
    warnings.push(`${warning.name} ${warning.code ?? ''}: ${warning.message}`);

  beforeAll(async () => {
    certs = await makeTestCertificates();
    etcd = await startEtcd({ tls: certs.etcdTls({ clientCertAuth: true }) });
    process.on('warning', onWarning);
  });
  afterAll(async () => {
    process.off('warning', onWarning);
    await etcd?.stop();
    await certs?.remove();
  });

  /** A put and a get over a new client; then a turn, since Node emits warnings on the next tick. */
  async function roundTrip(transport: TransportName, serverName?: string): Promise<string> {
    const client = new Etcd({
      endpoints: [etcd.endpoint],
      transport,
      tls: { ...certs.clientTls, serverName },
      dialTimeoutMs: 2_000,
      retry: { maxAttempts: 1 },
    });
    try {
      await client.put('sni', transport);
      return (await client.get('sni'))?.text() ?? 'missing';
    } finally {
      await client.close();
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  for (const transport of ['http2', 'grpc-js'] as const) {
    it(`${transport}: connects to 127.0.0.1 and prints no warning`, async () => {
      expect(etcd.endpoint).toMatch(/^https:\/\/127\.0\.0\.1:/);
      expect(await roundTrip(transport)).toBe(transport);
      // An IP given as serverName is checked the same way, and sent as SNI neither.
      expect(await roundTrip(transport, '127.0.0.1')).toBe(transport);
      expect(warnings).toEqual([]);
    });

    it(`${transport}: still checks the certificate against the IP`, async () => {
      const error = await roundTrip(transport, '127.0.0.2').catch((e: unknown) => e);
      // The round trip's put never reached the server: certainly not applied.
      expect(error).toBeInstanceOf(WriteNotAppliedError);
      expect((error as Error).cause).toBeInstanceOf(UnavailableError);
      expect((error as Error).message).toMatch(/127\.0\.0\.2/);
      expect(warnings).toEqual([]);
    });
  }
});
