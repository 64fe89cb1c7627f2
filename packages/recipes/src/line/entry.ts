// A key in a line ordered by create revision, as taking one returns it; what both ways of taking
// one share (the read of the line in the creating txn, the put on the session's lease), and the
// guarded delete that withdraws or releases it.
import { cmp, type KeyValue, LeaseNotFoundError, op, type ResponseHeader } from '@etcdkit/client';
import { SessionExpiredError } from '../errors.js';
import type { Session } from '../session/session.js';
import type { LineRead } from './line-read.js';

/** A key a recipe put (or found) in its queue. */
export interface LineEntry {
  /** The full key. */
  readonly key: string;
  /** Its create revision: the position in the queue, and the fencing token once it holds. */
  readonly createRevision: bigint;
  /** Header of the txn that created or found it; the key existed at `header.revision`. */
  readonly header: ResponseHeader;
  /**
   * The queue ahead of the key, read in the txn that created it (a key found existing has none):
   * lets the wait start without another read.
   */
  readonly ahead?: LineRead;
}

/**
 * The two newest keys under `blockers` by create revision, read in the txn that creates a key:
 * the new key is the newest of all then, so the other one (if it is under `blockers` too) is the
 * newest key created before it.
 */
export function newestTwo(blockers: string) {
  return op.range({
    prefix: blockers,
    sort: { target: 'create', order: 'descend' },
    limit: 2,
    keysOnly: true,
  });
}

/** The queue ahead of the just created `key`, from {@link newestTwo}'s read. */
export function aheadOf(
  key: string,
  newest: { readonly kvs: readonly KeyValue[]; readonly more: boolean },
  header: ResponseHeader,
): LineRead {
  const others = newest.kvs.filter((kv) => kv.keyText() !== key);
  const predecessor = others[0];
  const complete = !newest.more && others.length <= 1;
  return { predecessors: predecessor ? [predecessor] : [], complete, header };
}

/**
 * A put on the session's lease that the server refuses with "lease not found" means the session
 * is over, even if its keepalive has not heard yet (revoked elsewhere, or expired): say so.
 */
export async function leased<T>(session: Session, write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (error instanceof LeaseNotFoundError) throw sessionEnded(session, error);
    throw error;
  }
}

/**
 * Deletes `key` only while it is the incarnation created at `createRevision`. Go deletes
 * unconditionally, so a retried or late unlock can delete a newer holder's key (etcd issue
 * 22082); with the compare it deletes nothing then. Safe to retry. Resolves true when it deleted.
 */
export async function deleteIfCreatedAt(
  session: Session,
  key: string,
  createRevision: bigint,
): Promise<boolean> {
  const result = await session.etcd
    .txn()
    .if(cmp.createRevision(key, '==', createRevision))
    .then(op.delete(key))
    .commit({ retry: 'guarded' });
  return result.succeeded;
}

/** The SessionExpiredError of an operation refused or cut short because the session ended. */
export function sessionEnded(session: Session, cause?: unknown): SessionExpiredError {
  return new SessionExpiredError(`the session (lease ${session.leaseId.toString(16)}) has ended`, {
    cause: cause ?? session.signal.reason,
  });
}
