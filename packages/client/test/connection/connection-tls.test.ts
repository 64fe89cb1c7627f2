// TLS and mutual TLS against real etcd members serving https with a throwaway CA.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type EtcdProcess,
  freePorts,
  makeTestCertificates,
  requireEtcdBinary,
  startEtcd,
  type TestCertificates,
} from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import { InvalidConfigError, UnavailableError } from '../../src/errors.js';
import { etcdserverpb_KV, etcdserverpb_Watch } from '../../src/generated/methods.js';

const bytes = (s: string) => new TextEncoder().encode(s);

/**
 * etcd serving https WITHOUT client certificate checks. (etcd turns client-cert auth on whenever
 * `--trusted-ca-file` is given, so this member gets only `--cert-file` and `--key-file`.)
 */
async function startServerTlsOnlyEtcd(certs: TestCertificates) {
  const [clientPort, peerPort] = (await freePorts(2)) as [number, number];
  const dir = await mkdtemp(join(tmpdir(), 'etcdkit-tls-only-'));
  const endpoint = `https://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const child: ChildProcess = spawn(
    requireEtcdBinary().path,
    [
      '--name=tlsonly',
      `--data-dir=${join(dir, 'data')}`,
      `--listen-client-urls=${endpoint}`,
      `--advertise-client-urls=${endpoint}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=tlsonly=${peer}`,
      `--cert-file=${certs.server.certFile}`,
      `--key-file=${certs.server.keyFile}`,
    ],
    { stdio: 'ignore' },
  );
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    await rm(dir, { recursive: true, force: true });
  };
  const probe = new Connection({
    endpoints: [endpoint],
    tls: { ca: certs.ca.cert },
    retry: { maxAttempts: 200, minDelayMs: 50, maxDelayMs: 100 },
  });
  try {
    await probe.unary(etcdserverpb_KV.Range, { key: bytes('probe') }, 'read', {
      timeoutMs: 20_000,
    });
  } catch (error) {
    await stop();
    throw error;
  } finally {
    await probe.close();
  }
  return { endpoint, stop };
}

async function roundTrip(conn: Connection): Promise<void> {
  await conn.unary(etcdserverpb_KV.Put, { key: bytes('tls'), value: bytes('v') }, 'write');
  const res = await conn.unary(etcdserverpb_KV.Range, { key: bytes('tls') }, 'read');
  expect(res.kvs).toHaveLength(1);
}

async function failure(options: ConstructorParameters<typeof Connection>[0]): Promise<unknown> {
  const conn = new Connection({ dialTimeoutMs: 2_000, retry: { maxAttempts: 1 }, ...options });
  try {
    return await conn
      .unary(etcdserverpb_KV.Range, { key: bytes('tls') }, 'read')
      .then(() => 'succeeded')
      .catch((e: unknown) => e);
  } finally {
    await conn.close();
  }
}

describe('TLS', () => {
  let certs: TestCertificates;
  let tlsEtcd: { endpoint: string; stop(): Promise<void> };
  let mtlsEtcd: EtcdProcess;

  beforeAll(async () => {
    certs = await makeTestCertificates();
    [tlsEtcd, mtlsEtcd] = await Promise.all([
      startServerTlsOnlyEtcd(certs),
      startEtcd({ tls: certs.etcdTls({ clientCertAuth: true }) }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([tlsEtcd?.stop(), mtlsEtcd?.stop()]);
    await certs?.remove();
  });

  it('talks to an https endpoint with a user-supplied CA, on calls and streams', async () => {
    expect(tlsEtcd.endpoint).toMatch(/^https:/);
    const conn = new Connection({ endpoints: [tlsEtcd.endpoint], tls: { ca: certs.ca.cert } });
    try {
      await roundTrip(conn);
      const watch = await conn.bidiStream(etcdserverpb_Watch.Watch);
      watch.write({ createRequest: { key: bytes('tls') } });
      expect((await watch[Symbol.asyncIterator]().next()).value?.created).toBe(true);
      watch.cancel();
    } finally {
      await conn.close();
    }
  });

  it('accepts the CA as bytes', async () => {
    const conn = new Connection({
      endpoints: [tlsEtcd.endpoint],
      tls: { ca: new TextEncoder().encode(certs.ca.cert) },
    });
    try {
      await roundTrip(conn);
    } finally {
      await conn.close();
    }
  });

  it('refuses a server its CA did not sign (system roots): UnavailableError', async () => {
    expect(await failure({ endpoints: [tlsEtcd.endpoint] })).toBeInstanceOf(UnavailableError);
  });

  it('verifies against serverName when given', async () => {
    const ok = new Connection({
      endpoints: [tlsEtcd.endpoint],
      tls: { ca: certs.ca.cert, serverName: 'localhost' },
    });
    try {
      await roundTrip(ok);
    } finally {
      await ok.close();
    }
    expect(
      await failure({
        endpoints: [tlsEtcd.endpoint],
        tls: { ca: certs.ca.cert, serverName: 'not-the-server.example' },
      }),
    ).toBeInstanceOf(UnavailableError);
  });

  it('does mutual TLS with a client certificate and key', async () => {
    const conn = new Connection({ endpoints: [mtlsEtcd.endpoint], tls: certs.clientTls });
    try {
      await roundTrip(conn);
    } finally {
      await conn.close();
    }
  });

  it('fails without a client certificate when the server requires one', async () => {
    const error = await failure({ endpoints: [mtlsEtcd.endpoint], tls: { ca: certs.ca.cert } });
    expect(error).toBeInstanceOf(UnavailableError);
    // The reason grpc-js saw is part of the message.
    expect((error as Error).message).toMatch(/certificate/i);
  });

  it('rejects half a key pair and tls on http endpoints before connecting', () => {
    expect(
      () =>
        new Connection({
          endpoints: [mtlsEtcd.endpoint],
          tls: { ca: certs.ca.cert, key: certs.client.key },
        }),
    ).toThrow(InvalidConfigError);
    expect(
      () => new Connection({ endpoints: ['http://127.0.0.1:2379'], tls: certs.clientTls }),
    ).toThrow(InvalidConfigError);
  });
});
