import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { EtcdTlsOptions } from './etcd-node.js';
import { makeTempDir, removeTempDir } from './internal/temp-dir.js';

/** A certificate and its key: paths and PEM text. */
export interface CertificateFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** PEM of the certificate. */
  readonly cert: string;
  /** PEM of the private key (PKCS#8). */
  readonly key: string;
}

/** PEM material in the shape the client's `TlsOptions` takes. */
export interface ClientTlsMaterial {
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
}

/** A throwaway PKI for TLS and mutual-TLS tests. */
export interface TestCertificates {
  /** Directory holding every file. */
  readonly dir: string;
  /** Self-signed CA that signed the other two. */
  readonly ca: CertificateFiles;
  /** Server certificate valid for IP 127.0.0.1 and DNS localhost. */
  readonly server: CertificateFiles;
  /** Client certificate; with `--client-cert-auth` etcd takes its CN as the user name. */
  readonly client: CertificateFiles & { readonly commonName: string };
  /** `{ ca, cert, key }` of the client certificate, for the client's TLS options. */
  readonly clientTls: ClientTlsMaterial;
  /** TLS options for {@link startEtcd} serving with these certificates. */
  etcdTls(options?: { readonly clientCertAuth?: boolean }): EtcdTlsOptions;
  /** Removes {@link dir} if the testkit created it. */
  remove(): Promise<void>;
}

/** Options of {@link makeTestCertificates}. */
export interface TestCertificateOptions {
  /** CN of the client certificate. Default `root`. */
  readonly clientCommonName?: string;
  /** Validity in days. Default 7. */
  readonly days?: number;
}

const OPENSSL = 'openssl';

/**
 * Creates a CA, a server certificate (SAN IP:127.0.0.1, DNS:localhost) and a client certificate
 * with the `openssl` CLI. P-256 keys: fast to generate, accepted by every etcd version. Writes
 * into `dir` when given, else into a new temp dir (removed by `remove()` or at process exit).
 */
export async function makeTestCertificates(
  dir?: string,
  options: TestCertificateOptions = {},
): Promise<TestCertificates> {
  const commonName = options.clientCommonName ?? 'root';
  if (!/^[A-Za-z0-9][A-Za-z0-9 ._@:-]*$/.test(commonName)) {
    throw new Error(`unsupported client common name: ${JSON.stringify(commonName)}`);
  }
  const days = String(options.days ?? 7);
  const ownsDir = dir === undefined;
  const target = dir ?? (await makeTempDir('etcdkit-certs-'));
  await mkdir(target, { recursive: true });
  const path = (name: string) => join(target, name);

  await writeFile(
    path('ca.cnf'),
    [
      '[req]',
      'distinguished_name = dn',
      'prompt = no',
      'x509_extensions = ext',
      '[dn]',
      'CN = etcdkit test CA',
      '[ext]',
      'basicConstraints = critical,CA:TRUE',
      'keyUsage = critical,keyCertSign,cRLSign',
      'subjectKeyIdentifier = hash',
      '',
    ].join('\n'),
  );
  await openssl([
    'req',
    '-x509',
    '-config',
    path('ca.cnf'),
    ...newKey(path('ca.key')),
    '-days',
    days,
    '-out',
    path('ca.crt'),
  ]);

  const issue = async (name: string, cn: string, extensions: string[]) => {
    await writeFile(
      path(`${name}.cnf`),
      [
        '[req]',
        'distinguished_name = dn',
        'prompt = no',
        '[dn]',
        `CN = ${cn}`,
        '[ext]',
        'basicConstraints = CA:FALSE',
        'keyUsage = critical,digitalSignature,keyEncipherment',
        'authorityKeyIdentifier = keyid',
        ...extensions,
        '',
      ].join('\n'),
    );
    await openssl([
      'req',
      '-new',
      '-config',
      path(`${name}.cnf`),
      ...newKey(path(`${name}.key`)),
      '-out',
      path(`${name}.csr`),
    ]);
    await openssl([
      'x509',
      '-req',
      '-in',
      path(`${name}.csr`),
      '-CA',
      path('ca.crt'),
      '-CAkey',
      path('ca.key'),
      '-set_serial',
      `0x${randomBytes(8).toString('hex')}`,
      '-days',
      days,
      '-extfile',
      path(`${name}.cnf`),
      '-extensions',
      'ext',
      '-out',
      path(`${name}.crt`),
    ]);
  };
  await issue('server', 'localhost', [
    'extendedKeyUsage = serverAuth,clientAuth',
    'subjectAltName = IP:127.0.0.1,DNS:localhost',
  ]);
  await issue('client', commonName, ['extendedKeyUsage = clientAuth']);

  const load = async (name: string): Promise<CertificateFiles> => ({
    certFile: path(`${name}.crt`),
    keyFile: path(`${name}.key`),
    cert: await readFile(path(`${name}.crt`), 'utf8'),
    key: await readFile(path(`${name}.key`), 'utf8'),
  });
  const ca = await load('ca');
  const server = await load('server');
  const client = { ...(await load('client')), commonName };
  return {
    dir: target,
    ca,
    server,
    client,
    clientTls: { ca: ca.cert, cert: client.cert, key: client.key },
    etcdTls: ({ clientCertAuth = false } = {}) => ({
      certFile: server.certFile,
      keyFile: server.keyFile,
      // etcd demands client certificates as soon as it has a trusted CA: only pass it for mTLS.
      trustedCaFile: clientCertAuth ? ca.certFile : undefined,
      clientCertAuth,
      caFile: ca.certFile,
      clientCertFile: client.certFile,
      clientKeyFile: client.keyFile,
    }),
    remove: async () => {
      if (ownsDir) await removeTempDir(target);
    },
  };
}

function newKey(keyFile: string): string[] {
  return [
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    keyFile,
  ];
}

function openssl(args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(OPENSSL, args, { timeout: 30_000 }, (error, _stdout, stderr) => {
      if (error === null) {
        resolve();
        return;
      }
      reject(
        new Error(
          `openssl ${args.slice(0, 2).join(' ')} failed: ${stderr.trim() || error.message}`,
          {
            cause: error,
          },
        ),
      );
    });
  });
}
