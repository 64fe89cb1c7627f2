// TLS of the client port, with etcd's rule for client certificates: once a trusted CA is given
// (`--trusted-ca-file`) or `--client-cert-auth` is set, every client must present a certificate
// that verifies, or the handshake fails.
import type { TlsOptions } from 'node:tls';

/** TLS of the client port. Certificates and keys are PEM, as text or bytes. */
export interface ServerTlsOptions {
  /** The server's certificate chain (`--cert-file`). */
  readonly cert: string | Uint8Array;
  /** The server's private key (`--key-file`). */
  readonly key: string | Uint8Array;
  /**
   * CA certificates that client certificates must chain to (`--trusted-ca-file`). As in etcd,
   * giving one makes client certificates required.
   */
  readonly ca?: string | Uint8Array;
  /**
   * Require a valid client certificate (`--client-cert-auth`): mutual TLS. Without {@link ca}
   * the certificates are verified against the system's roots, as etcd does. Default false.
   */
  readonly clientCertAuth?: boolean;
}

/** Whether clients must present a certificate, by etcd's rule. */
export function requiresClientCertificate(options: ServerTlsOptions): boolean {
  return options.ca !== undefined || options.clientCertAuth === true;
}

/** Options of a Node.js TLS server for the client port. */
export function tlsServerOptions(options: ServerTlsOptions): TlsOptions {
  const verify = requiresClientCertificate(options);
  return {
    cert: pem(options.cert),
    key: pem(options.key),
    ...(options.ca === undefined ? {} : { ca: pem(options.ca) }),
    requestCert: verify,
    rejectUnauthorized: verify,
    // gRPC runs over HTTP/2; newer gRPC clients refuse a TLS server that does not agree on h2.
    // HTTP/1.1 is offered too, for etcd's HTTP endpoints (a health check's curl).
    ALPNProtocols: ['h2', 'http/1.1'],
  };
}

function pem(value: string | Uint8Array): string | Buffer {
  return typeof value === 'string' ? value : Buffer.from(value);
}
