// TLS and mutual TLS of the client port, with etcd's rule: a trusted CA or clientCertAuth makes a
// valid client certificate required.
import { Etcd } from '@etcdkit/client';
import { makeTestCertificates, type TestCertificates } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEtcd, type ServerTlsOptions } from '../../src/index.js';

/** The deadline of a put that must be answered: a TLS dial on a loaded machine is slow. */
const ANSWERED_WITHIN_MS = 15_000;

describe('TLS', () => {
  let certs: TestCertificates;
  let stranger: TestCertificates;

  beforeAll(async () => {
    certs = await makeTestCertificates();
    // A second PKI: its client certificate is valid, but not signed by the server's trusted CA.
    stranger = await makeTestCertificates();
  });
  afterAll(async () => {
    await certs.remove();
    await stranger.remove();
  });

  async function withServer(
    tls: ServerTlsOptions,
    run: (server: EmbeddedEtcd) => Promise<void>,
  ): Promise<void> {
    const server = await EmbeddedEtcd.start({ tls });
    try {
      await run(server);
    } finally {
      await server.stop();
    }
  }

  /**
   * Whether a put over `tls` is answered within `callTimeoutMs`: short where a refusal is expected
   * (a refused client retries until its deadline), long where an answer is, for a loaded machine.
   */
  async function answers(
    server: EmbeddedEtcd,
    tls: ConstructorParameters<typeof Etcd>[0]['tls'],
    callTimeoutMs = 2_000,
  ) {
    const etcd = new Etcd({
      endpoints: [...server.endpoints],
      tls,
      dialTimeoutMs: Math.min(callTimeoutMs, 5_000),
      callTimeoutMs,
    });
    try {
      return (await etcd.put('k', 'v')).header.revision > 0n;
    } catch {
      return false;
    } finally {
      await etcd.close();
    }
  }

  it('serves https on 127.0.0.1 with the given certificate', async () => {
    await withServer({ cert: certs.server.cert, key: certs.server.key }, async (server) => {
      expect(server.endpoint).toBe(`https://127.0.0.1:${server.port}`);
      expect(await answers(server, { ca: certs.ca.cert }, ANSWERED_WITHIN_MS)).toBe(true);
      // A client that does not trust the issuer refuses the server.
      expect(await answers(server, { ca: stranger.ca.cert })).toBe(false);
    });
  });

  it('with a trusted CA, refuses clients without a certificate or with one of another CA', async () => {
    const tls = { cert: certs.server.cert, key: certs.server.key, ca: certs.ca.cert };
    await withServer(tls, async (server) => {
      expect(await answers(server, certs.clientTls, ANSWERED_WITHIN_MS)).toBe(true);
      expect(await answers(server, { ca: certs.ca.cert })).toBe(false);
      expect(
        await answers(server, {
          ca: certs.ca.cert,
          cert: stranger.client.cert,
          key: stranger.client.key,
        }),
      ).toBe(false);
    });
  });

  it('with clientCertAuth and no CA, verifies client certificates against the system roots', async () => {
    const tls = { cert: certs.server.cert, key: certs.server.key, clientCertAuth: true };
    await withServer(tls, async (server) => {
      expect(await answers(server, { ca: certs.ca.cert })).toBe(false);
      expect(await answers(server, certs.clientTls)).toBe(false);
    });
  });

  it('accepts a client certificate after a restart too', async () => {
    const tls = {
      cert: certs.server.cert,
      key: certs.server.key,
      ca: certs.ca.cert,
      clientCertAuth: true,
    };
    await withServer(tls, async (server) => {
      const etcd = new Etcd({ endpoints: [...server.endpoints], tls: certs.clientTls });
      try {
        await etcd.put('k', 'v');
        await server.restart();
        expect((await etcd.get('k'))?.text()).toBe('v');
      } finally {
        await etcd.close();
      }
    });
  });
});
