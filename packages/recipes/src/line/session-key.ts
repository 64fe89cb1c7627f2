// The key of a session in Go's concurrency layout (Mutex, Election): `prefix + <lease id in hex>`,
// one per session, taken in one txn that also reads the holder; and the calls of this process that
// share it.
import { cmp, type KeyValue, op } from '@etcdkit/client';
import type { Session } from '../session/session.js';
import { aheadOf, type LineEntry, leased, newestTwo } from './entry.js';

/** A session key after the acquire txn. */
export interface SessionEntry extends LineEntry {
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

// Calls of this process using a session key now: two campaigns of one session in one election share
// its key (Go's layout: one candidate per session), and a failed wait of one must not delete the
// key the other waits with or leads with. (A Mutex's calls take the key in call order:
// lock/mutex.ts.)
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
