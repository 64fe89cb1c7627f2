// A new key per acquisition in the layout of Go's experimental recipes (RWMutex, DoubleBarrier,
// Semaphore): `prefix + <decimal nanoseconds>`, unique within this process.
import { cmp, op } from '@etcdkit/client';
import type { Session } from '../session/session.js';
import { aheadOf, type LineEntry, leased, newestTwo } from './entry.js';

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
): Promise<LineEntry> {
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
