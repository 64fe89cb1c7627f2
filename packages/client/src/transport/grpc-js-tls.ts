// TLS credentials for @grpc/grpc-js that connect as the http2 transport does (tls-identity.ts):
// grpc-js's own SSL credentials send the endpoint's host as SNI even when it is an IP address, so
// every TLS connection to an IP endpoint printed Node's DEP0123 warning.
import { createSecureContext, type SecureContext, connect as tlsConnect } from 'node:tls';
import type * as grpc from '@grpc/grpc-js';
import { grpcJs } from './grpc-js-module.js';
import { serverIdentity } from './tls-identity.js';
import type { TlsOptions } from './types.js';

type SecureConnector = grpc.experimental.SecureConnector;

/** The PEM material of {@link tlsCredentials}: CA, client key and certificate. */
type Pem = { ca?: Buffer; key?: Buffer; cert?: Buffer };

let credentialsClass: ReturnType<typeof defineCredentials> | undefined;

/** Channel credentials for one endpoint (`host` as grpc-js's target names it). */
export function tlsCredentials(host: string, tls: TlsOptions, pem: Pem): grpc.ChannelCredentials {
  credentialsClass ??= defineCredentials(grpcJs());
  return new credentialsClass(host, tls, pem);
}

/** The credentials class, once grpc-js is loaded (it extends grpc-js's own). */
function defineCredentials(g: typeof grpc) {
  return class GrpcJsTlsCredentials extends g.ChannelCredentials {
    readonly #context: SecureContext;
    readonly #host: string;
    readonly #tls: TlsOptions;

    constructor(host: string, tls: TlsOptions, pem: Pem) {
      super();
      this.#host = host;
      this.#tls = tls;
      this.#context = createSecureContext(pem);
    }

    _isSecure(): boolean {
      return true;
    }

    _equals(other: grpc.ChannelCredentials): boolean {
      return other === this;
    }

    _createSecureConnector(
      _target: unknown,
      _options: unknown,
      callCredentials?: grpc.CallCredentials,
    ): SecureConnector {
      const connectOptions = {
        secureContext: this.#context,
        ALPNProtocols: ['h2'],
        ...serverIdentity(this.#host, this.#tls),
      };
      return {
        connect: (socket) =>
          new Promise((resolve, reject) => {
            // rejectUnauthorized (the default) fails the handshake with the verification error.
            const secured = tlsConnect({ ...connectOptions, socket }, () => {
              if (secured.authorized) resolve({ socket: secured, secure: true });
              else reject(secured.authorizationError);
            });
            secured.once('error', reject);
          }),
        waitForReady: () => Promise.resolve(),
        getCallCredentials: () => callCredentials ?? g.credentials.createEmpty(),
        destroy: () => {},
      };
    }
  };
}
