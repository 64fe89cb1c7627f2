// Whom a TLS connection verifies and what it names in SNI. RFC 6066 allows only host names in SNI
// (Node warns, DEP0123, when given an IP), but the certificate must still be checked against the
// IP address of an IP endpoint (its IP SAN). Both transports connect this way.
import { isIP } from 'node:net';
import { type ConnectionOptions, checkServerIdentity } from 'node:tls';
import type { TlsOptions } from './types.js';

/**
 * The `tls.connect` options that say which name the server's certificate must hold (the TLS
 * `serverName`, else `host`) and which SNI name to send: that name, unless it is an IP address.
 */
export function serverIdentity(
  host: string,
  tls: TlsOptions,
): Pick<ConnectionOptions, 'host' | 'servername' | 'checkServerIdentity'> {
  const name = tls.serverName ?? host;
  if (!isIP(name)) return { host, servername: name };
  // Without `servername` Node checks the certificate against `host`; name the IP when it differs.
  if (name === host) return { host };
  return { host, checkServerIdentity: (_host, cert) => checkServerIdentity(name, cert) };
}
