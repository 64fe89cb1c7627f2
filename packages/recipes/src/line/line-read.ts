// The read every turn wait starts from and checks with: the keys ahead of a waiter in a line ordered
// by create revision, and in the same txn its own key, still the incarnation that queued.
import { type KeyValue, type KV, op, type ResponseHeader } from '@etcdkit/client';
import { SessionExpiredError } from '../errors.js';

/** The recipe's own queue key, watched while waiting so its loss ends the wait at once. */
export interface OwnKey {
  /** The full key. */
  readonly key: string;
  /** Its create revision (the recipe's position in the queue). */
  readonly createRevision: bigint;
  /** A revision at which the key was seen to exist, e.g. the header revision of the acquire txn. */
  readonly seenAt: bigint;
}

/** A read of the queue ahead of a waiter, at one revision. */
export interface LineRead {
  /**
   * The keys ahead of the waiter (created before it), newest first: all of them, or with one
   * slot at least the newest (the only one waited on).
   */
  readonly predecessors: readonly KeyValue[];
  /** True when `predecessors` is every key ahead (the read was not cut short by its limit). */
  readonly complete?: boolean;
  /** Header of the read; the waiter's own key existed at `header.revision`. */
  readonly header: ResponseHeader;
}

/**
 * @internal A waiter: the keys under `prefix` created before `createRevision` are ahead of it, and
 * it holds once fewer than `slots` of them are left.
 */
export interface Waiter {
  readonly prefix: string;
  readonly createRevision: bigint;
  /** Holders admitted at once (1: a mutex). */
  readonly slots: number;
  /** Its own key, checked by every read of the line and watched by the wait when given. */
  readonly ownKey?: OwnKey;
}

/**
 * @internal Reads the keys ahead of `waiter` (with one slot only the newest) and, with its
 * `ownKey`, checks in the same txn that the own key is still the incarnation that queued: one
 * round trip. Rejects with SessionExpiredError when the own key is gone.
 */
export async function readAhead(kv: KV, waiter: Waiter, signal: AbortSignal): Promise<LineRead> {
  const request = {
    prefix: waiter.prefix,
    maxCreateRevision: waiter.createRevision - 1n,
    keysOnly: true,
    sort: { target: 'create', order: 'descend' },
    ...(waiter.slots === 1 ? { limit: 1 } : {}),
  } as const;
  const own = waiter.ownKey;
  if (own === undefined) {
    const read = await kv.range({ ...request, signal });
    return { predecessors: read.kvs, complete: !read.more, header: read.header };
  }
  const result = await kv
    .txn()
    .then(op.range(request), op.get(own.key, { keysOnly: true }))
    .commit({ signal });
  const [ahead, mine] = result.responses;
  if (mine?.kvs[0]?.createRevision !== own.createRevision) {
    throw new SessionExpiredError(
      `${own.key} is gone: the session's lease expired or the key was deleted`,
      { key: own.key },
    );
  }
  return {
    predecessors: ahead?.kvs ?? [],
    complete: ahead !== undefined && !ahead.more,
    header: result.header,
  };
}

/** @internal The failure of a wait whose own key was deleted at `revision`. */
export function ownKeyDeleted(key: string | undefined, revision: bigint): SessionExpiredError {
  return new SessionExpiredError(
    `${String(key)} was deleted at revision ${revision} while waiting (its lease expired or was revoked, or it was deleted)`,
    { key },
  );
}
