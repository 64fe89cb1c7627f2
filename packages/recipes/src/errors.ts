// Typed failures of the recipes. Each is a class with a stable `code` so callers can tell "someone
// else holds the lock" from "we lost the lock" from "the session is gone" without parsing messages.
// Failures of the etcd calls underneath reach the caller unchanged, as the client's EtcdError.

/**
 * Base class of every error a recipe reports itself (the client's EtcdErrors pass through as they
 * are). `code` is stable across releases; recipes in their own modules subclass this with their
 * own code.
 */
export class RecipeError<C extends string = string> extends Error {
  /** Stable identifier of the kind of failure. */
  readonly code: C;

  /** `cause` is the failure behind this one, when there is one. */
  constructor(code: C, message: string, options?: { readonly cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
  }
}

/**
 * The session behind a recipe can no longer vouch for its keys: its lease expired or was revoked,
 * its keepalive stopped, or the recipe's own key was deleted while it waited. Whatever was being
 * acquired was not acquired (and the recipe deleted its key if it still could).
 */
export class SessionExpiredError extends RecipeError<'SESSION_EXPIRED'> {
  /** The recipe's own key, when the failure was noticed on it. */
  readonly key: string | undefined;

  /** `key` is the recipe's own key when its loss was noticed on it. */
  constructor(message: string, options?: { readonly key?: string; readonly cause?: unknown }) {
    super('SESSION_EXPIRED', message, options);
    this.key = options?.key;
  }
}
