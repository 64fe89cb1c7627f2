// How recipes join and leave a queue of keys ordered by create revision: Mutex and Election use one
// key per session (Go's layout), RWMutex and Semaphore a fresh key per acquisition.
import { cmp, type KeyValue, LeaseNotFoundError, op, type ResponseHeader } from '@etcdkit/client';
import { SessionExpiredError } from './errors.js';
import type { Session } from './session.js';
import type { QueueRead } from './wait.js';

/** A key a recipe put (or found) in its queue. */
export interface QueueEntry {
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
  readonly ahead?: QueueRead;
}

/** A session key after the acquire txn. */
export interface SessionEntry extends QueueEntry {
  /** True when this call created the key; false when the session already had it. */
  readonly created: boolean;
  /** The oldest key under the prefix at the txn's revision (the current holder). */
  readonly oldest: KeyValue | undefined;
  /** The key as it was, when the session already had it (`created` false). */
  readonly existing: KeyValue | undefined;
}

/** The key of `session` under `prefix`: the lease id in lowercase hex, as Go's `%x` prints it. */
export function sessionKey(prefix: string, session: Session): string {
  return `${prefix}${session.leaseId.toString(16)}`;
}

/**
 * Puts the session's key under `prefix` (attached to its lease) unless it exists, and reads the
 * oldest key under the prefix (the holder) and the newest one before the new key (the one to wait
 * for), in ONE txn. The compare makes it safe to retry after an unknown outcome: a retry finds the
 * key the first attempt created and reports its create revision.
 */
export async function acquireSessionKey(
  session: Session,
  prefix: string,
  value: string,
): Promise<SessionEntry> {
  const key = sessionKey(prefix, session);
  const oldest = op.range({ prefix, sort: { target: 'create', order: 'ascend' }, limit: 1 });
  const result = await leased(
    session,
    session.etcd
      .txn()
      .if(cmp.createRevision(key, '==', 0n))
      .then(op.put(key, value, { lease: session.leaseId }), oldest, newestTwo(prefix))
      .else(op.get(key), oldest)
      .commit({ retry: 'guarded' }),
  );
  if (result.succeeded) {
    const [, owner, newest] = result.responses;
    return {
      key,
      createRevision: result.header.revision,
      header: result.header,
      ahead: aheadOf(key, newest, result.header),
      created: true,
      oldest: owner.kvs[0],
      existing: undefined,
    };
  }
  const [mine, owner] = result.responses;
  const existing = mine.kvs[0];
  // The else branch runs only when the key exists, and both reads are of the same revision.
  if (existing === undefined) throw new Error(`${key} vanished inside one txn`);
  return {
    key,
    createRevision: existing.createRevision,
    header: result.header,
    created: false,
    oldest: owner.kvs[0],
    existing,
  };
}

/**
 * The two newest keys under `blockers` by create revision, read in the txn that creates a key:
 * the new key is the newest of all then, so the other one (if it is under `blockers` too) is the
 * newest key created before it.
 */
function newestTwo(blockers: string) {
  return op.range({
    prefix: blockers,
    sort: { target: 'create', order: 'descend' },
    limit: 2,
    keysOnly: true,
  });
}

/** The queue ahead of the just created `key`, from {@link newestTwo}'s read. */
function aheadOf(
  key: string,
  newest: { readonly kvs: readonly KeyValue[]; readonly more: boolean },
  header: ResponseHeader,
): QueueRead {
  const others = newest.kvs.filter((kv) => kv.keyText() !== key);
  const predecessor = others[0];
  const complete = !newest.more && others.length <= 1;
  return { predecessors: predecessor ? [predecessor] : [], complete, header };
}

/**
 * A put on the session's lease that the server refuses with "lease not found" means the session
 * is over, even if its keepalive has not heard yet (revoked elsewhere, or expired): say so.
 */
async function leased<T>(session: Session, write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (error instanceof LeaseNotFoundError) throw sessionEnded(session, error);
    throw error;
  }
}

let lastUnique = 0n;

/** A decimal timestamp in nanoseconds, strictly increasing within this process. */
function uniqueSuffix(): string {
  const now = BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n);
  lastUnique = now > lastUnique ? now : lastUnique + 1n;
  return lastUnique.toString();
}

/**
 * Creates a new key `prefix + <nanoseconds>` attached to the session's lease (the layout of Go's
 * experimental recipes), retrying with a new name if one is taken. A retry after an unknown
 * outcome that finds the name taken by our own lease knows it is the key it created (names are
 * never reused within a process), so no attempt leaves a stray key in the queue.
 *
 * With `blockers` (the prefix a one-slot waiter waits on), the same txn reads the newest key under
 * it, which the entry's `ahead` then holds.
 */
export async function createUniqueKey(
  session: Session,
  prefix: string,
  blockers?: string,
): Promise<QueueEntry> {
  for (;;) {
    const key = `${prefix}${uniqueSuffix()}`;
    const reads = blockers === undefined ? [] : [newestTwo(blockers)];
    const result = await leased(
      session,
      session.etcd
        .txn()
        .if(cmp.createRevision(key, '==', 0n))
        .then(op.put(key, '', { lease: session.leaseId }), ...reads)
        .else(op.get(key))
        .commit({ retry: 'guarded' }),
    );
    if (result.succeeded) {
      const newest = result.responses[1];
      const entry = { key, createRevision: result.header.revision, header: result.header };
      if (newest?.kind !== 'range') return entry;
      return { ...entry, ahead: aheadOf(key, newest, result.header) };
    }
    const existing = result.responses[0].kvs[0];
    if (existing && existing.lease === session.leaseId) {
      return { key, createRevision: existing.createRevision, header: result.header };
    }
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

// Calls of this process using a session key now: two campaigns of one session in one election share
// its key (Go's layout: one candidate per session), and a failed wait of one must not delete the key
// the other waits with or leads with. (A Mutex's calls take turns instead: local-turns.ts.)
const users = new WeakMap<Session, Map<string, number>>();

/** Records a local user of a session key; call the returned function when it stops using it. */
export function useSessionKey(session: Session, key: string): () => number {
  let byKey = users.get(session);
  if (!byKey) {
    byKey = new Map();
    users.set(session, byKey);
  }
  byKey.set(key, (byKey.get(key) ?? 0) + 1);
  let done = false;
  return () => {
    const map = users.get(session);
    if (done) return map?.get(key) ?? 0;
    done = true;
    const left = (map?.get(key) ?? 1) - 1;
    if (left <= 0) map?.delete(key);
    else map?.set(key, left);
    return left;
  };
}

/** The SessionExpiredError of an operation refused or cut short because the session ended. */
export function sessionEnded(session: Session, cause?: unknown): SessionExpiredError {
  return new SessionExpiredError(`the session (lease ${session.leaseId.toString(16)}) has ended`, {
    cause: cause ?? session.signal.reason,
  });
}
