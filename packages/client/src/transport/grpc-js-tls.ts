// TLS credentials for @grpc/grpc-js that connect as the http2 transport does (tls-identity.ts):
// grpc-js's own SSL credentials send the endpoint's host as SNI even when it is an IP address, so
// every TLS connection to an IP endpoint printed Node's DEP0123 warning.
import { createSecureContext, type SecureContext, connect as tlsConnect } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { serverIdentity } from './tls-identity.js';
import type { TlsOptions } from './types.js';

type SecureConnector = grpc.experimental.SecureConnector;

/** Channel credentials for one endpoint (`host` as grpc-js's target names it). */
export class GrpcJsTlsCredentials extends grpc.ChannelCredentials {
  readonly #context: SecureContext;
  readonly #host: string;
  readonly #tls: TlsOptions;

  constructor(host: string, tls: TlsOptions, pem: { ca?: Buffer; key?: Buffer; cert?: Buffer }) {
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
      getCallCredentials: () => callCredentials ?? grpc.credentials.createEmpty(),
      destroy: () => {},
    };
  }
}
