// The auth token: obtained lazily with Authenticate, shared by every call (single flight), and
// refreshed once when the server says it is invalid.
import type { EtcdError } from '../errors.js';
import { toEtcdError } from '../errors.js';
import { callHook } from './hooks.js';
import type { AuthRefreshEvent } from './options.js';

/** Obtains a fresh token from the server. */
export type Authenticator = () => Promise<string>;

/**
 * Holds the current token. `token()` authenticates on first use; concurrent callers share one
 * Authenticate call. `refresh(stale)` replaces the token unless another caller already did.
 * A server with auth disabled yields the empty token (calls then go without one).
 */
export class TokenManager {
  readonly #authenticate: Authenticator;
  readonly #onRefresh: ((event: AuthRefreshEvent) => void) | undefined;
  #token: string | undefined;
  #pending: Promise<string> | undefined;

  /** Creates a manager; nothing is sent until a token is needed. */
  constructor(authenticate: Authenticator, onRefresh?: (event: AuthRefreshEvent) => void) {
    this.#authenticate = authenticate;
    this.#onRefresh = onRefresh;
  }

  /** The token known now, without authenticating; undefined before the first authentication. */
  get cached(): string | undefined {
    return this.#token;
  }

  /** The current token, authenticating if there is none yet. */
  token(): Promise<string> {
    if (this.#token !== undefined) return Promise.resolve(this.#token);
    return this.#start('initial');
  }

  /**
   * Obtains a new token because `stale` was rejected. When the current token already differs from
   * `stale` (someone else refreshed it), that one is returned without a new Authenticate call.
   */
  refresh(stale: string | undefined, reason: AuthRefreshEvent['reason']): Promise<string> {
    if (this.#pending) return this.#pending;
    if (reason !== 'explicit' && this.#token !== undefined && this.#token !== stale) {
      return Promise.resolve(this.#token);
    }
    this.#token = undefined;
    return this.#start(reason);
  }

  #start(reason: AuthRefreshEvent['reason']): Promise<string> {
    if (this.#pending) return this.#pending;
    const pending = this.#authenticate().then(
      (token) => {
        this.#token = token;
        this.#report({ reason });
        return token;
      },
      (error: unknown) => {
        const typed: EtcdError = toEtcdError(error);
        if (typed.code === 'AUTH_NOT_ENABLED') {
          // Credentials were given but the server does not use auth: send no token.
          this.#token = '';
          this.#report({ reason });
          return '';
        }
        this.#report({ reason, error: typed });
        throw typed;
      },
    );
    this.#pending = pending;
    const clear = () => {
      if (this.#pending === pending) this.#pending = undefined;
    };
    pending.then(clear, clear);
    return pending;
  }

  #report(event: AuthRefreshEvent): void {
    callHook(this.#onRefresh, event);
  }
}
