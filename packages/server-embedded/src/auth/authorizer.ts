// The link between requests and the auth store: it reads a call's credentials and turns them into
// a Caller, whose checks the appliers and services run at the point etcd runs them.
import type { AuthStore } from './auth-store.js';
import { Caller, type LeaseKeys } from './caller.js';
import { type CredentialSource, credentialsOf } from './credentials.js';
import type { CallCredentials } from './types.js';

/** Options of {@link Authorizer}. */
export interface AuthorizerOptions {
  /** The users, roles, permissions and tokens. */
  readonly store: AuthStore;
  /** The leases, whose keys lease requests are checked against. */
  readonly leases: LeaseKeys;
  /**
   * The server's `--client-cert-auth`: a call without a token is the user its verified client
   * certificate names. Default false.
   */
  readonly clientCertAuth?: boolean;
}

/** Identifies callers against one auth store and lease table. */
export class Authorizer {
  /** The users, roles, permissions and tokens. */
  readonly store: AuthStore;
  readonly #leases: LeaseKeys;
  readonly #clientCertAuth: boolean;

  constructor(options: AuthorizerOptions) {
    this.store = options.store;
    this.#leases = options.leases;
    this.#clientCertAuth = options.clientCertAuth ?? false;
  }

  /** What `call` presents: its token, or its certificate's user under client certificate auth. */
  credentialsOf(call: CredentialSource): CallCredentials {
    return credentialsOf(call, this.#clientCertAuth);
  }

  /**
   * The caller presenting `credentials` (etcd's AuthInfoFromCtx): throws INVALID_AUTH_TOKEN for a
   * token the store does not know (never while auth is off, when tokens are not looked at).
   */
  identify(credentials: CallCredentials): Caller {
    return new Caller(this.store, this.#leases, this.store.identify(credentials));
  }
}
