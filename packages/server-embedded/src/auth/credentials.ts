// What a gRPC call presents to identify its user: the token of its metadata (`token`, or
// `authorization` as gRPC-gateway clients send it; etcd looks at the first value of the first key
// present), and, on a server started with client certificate auth, the common name of the client
// certificate the TLS handshake verified.
import type { CallCredentials } from './types.js';

/** The parts of a server call that carry credentials. */
export interface CredentialSource {
  /** The request's metadata: the values of a key (Buffers for a `-bin` key), [] when absent. */
  readonly metadata: { get(key: string): (string | Buffer)[] };
  getAuthContext(): { readonly sslPeerCertificate?: { readonly subject?: object } | undefined };
}

/** Metadata keys etcd reads a token from, in order (rpctypes' TokenFieldNameGRPC, ...Swagger). */
const TOKEN_KEYS = ['token', 'authorization'] as const;

/**
 * The credentials of `call`. `clientCertAuth` is the server's `--client-cert-auth`: only then is
 * a certificate's common name a user.
 */
export function credentialsOf(call: CredentialSource, clientCertAuth: boolean): CallCredentials {
  for (const key of TOKEN_KEYS) {
    const [first] = call.metadata.get(key);
    if (first !== undefined) return { token: String(first) };
  }
  if (!clientCertAuth) return {};
  // etcd ignores the certificate of its own gRPC gateway, which proxies other users' requests.
  if (call.metadata.get('grpcgateway-accept').length > 0) return {};
  const commonName = commonNameOf(call.getAuthContext().sslPeerCertificate?.subject);
  return commonName === undefined ? {} : { commonName };
}

/** The subject's CN; Node gives an array when there are several, Go keeps the last. */
function commonNameOf(subject: object | undefined): string | undefined {
  const value: unknown = subject === undefined ? undefined : Reflect.get(subject, 'CN');
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const last: unknown = value.at(-1);
    return typeof last === 'string' ? last : undefined;
  }
  return undefined;
}
