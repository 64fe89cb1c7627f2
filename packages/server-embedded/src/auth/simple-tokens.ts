// etcd's simple tokens (`--auth-token=simple`): 16 random letters, a dot and the raft index of the
// Authenticate request that issued it. A token is forgotten once unused for its TTL
// (`--auth-token-ttl`, 300 s): every request that presents it starts the TTL again. etcd sweeps
// expired tokens every second; here a token is judged when it is presented, against the server's
// clock, so virtual time expires tokens exactly at the TTL.
import { randomInt } from 'node:crypto';
import type { Clock } from '../clock.js';

const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
const PREFIX_LENGTH = 16;

/** etcd's default `--auth-token-ttl`, in seconds. */
export const DEFAULT_AUTH_TOKEN_TTL_SECONDS = 300;

interface IssuedToken {
  readonly username: string;
  /** Clock time after which the token is forgotten, unless presented before. */
  expiresAt: number;
}

/** The tokens issued since auth was last enabled. */
export class SimpleTokens {
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #tokens = new Map<string, IssuedToken>();

  /** `ttlSeconds` below 1 means etcd's default, as etcd treats a TTL that is not positive. */
  constructor(clock: Clock, ttlSeconds: number = DEFAULT_AUTH_TOKEN_TTL_SECONDS) {
    this.#clock = clock;
    this.#ttlMs = (ttlSeconds > 0 ? ttlSeconds : DEFAULT_AUTH_TOKEN_TTL_SECONDS) * 1000;
  }

  /** Issues a token for `username`; `index` is the raft index of its Authenticate request. */
  assign(username: string, index: number): string {
    this.#forgetExpired();
    let token: string;
    // Indexes are unique, so a clash would need the same index twice; guard anyway.
    do token = `${randomPrefix()}.${index}`;
    while (this.#tokens.has(token));
    this.#tokens.set(token, { username, expiresAt: this.#clock.now() + this.#ttlMs });
    return token;
  }

  /** The user of a live token, restarting its TTL; undefined for an unknown or expired one. */
  use(token: string): string | undefined {
    const issued = this.#tokens.get(token);
    if (issued === undefined) return undefined;
    const now = this.#clock.now();
    if (now > issued.expiresAt) {
      this.#tokens.delete(token);
      return undefined;
    }
    issued.expiresAt = now + this.#ttlMs;
    return issued.username;
  }

  /** Forgets every token of `username` (deleted, or its password changed). */
  invalidateUser(username: string): void {
    for (const [token, issued] of this.#tokens) {
      if (issued.username === username) this.#tokens.delete(token);
    }
  }

  /** Forgets every token (auth disabled). */
  clear(): void {
    this.#tokens.clear();
  }

  /** Number of tokens held, expired ones not yet swept included (for tests). */
  get size(): number {
    return this.#tokens.size;
  }

  // Tokens nobody presents again would otherwise pile up; etcd's sweeper drops them too.
  #forgetExpired(): void {
    const now = this.#clock.now();
    for (const [token, issued] of this.#tokens) {
      if (now > issued.expiresAt) this.#tokens.delete(token);
    }
  }
}

function randomPrefix(): string {
  let prefix = '';
  for (let i = 0; i < PREFIX_LENGTH; i++) prefix += LETTERS[randomInt(LETTERS.length)];
  return prefix;
}
