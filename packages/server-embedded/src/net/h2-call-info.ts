// What a service handler learns of a net/h2 call beyond its request (services/registry.ts CallInfo).
import type { CallInfo } from '../services/registry.js';
import type { ServerCall } from './h2/routes.js';

/** What a handler learns of its call, read from the HTTP/2 call. */
export class H2CallInfo implements CallInfo {
  readonly #call: ServerCall;

  constructor(call: ServerCall) {
    this.#call = call;
  }

  get cancelled(): boolean {
    return this.#call.signal.aborted;
  }

  get metadata(): CallInfo['metadata'] {
    return this.#call.metadata;
  }

  getAuthContext(): ReturnType<CallInfo['getAuthContext']> {
    const certificate = this.#call.peerCertificate;
    return certificate === undefined ? {} : { sslPeerCertificate: certificate };
  }

  getPeer(): string {
    return this.#call.peer;
  }
}
