// Consul's lock-delay on etcd: a holder that took over from holders whose lease ended (rather than
// from an unlock) waits before it is told it holds, so the old holder's stragglers die first.

import { setTimeout as sleep } from 'node:timers/promises';
import { AbortedError, CompactedError } from '@etcdkit/client';
import type { Session } from '../session/session.js';
import type { Hold } from './hold.js';

/**
 * @internal True when a key that stood ahead of `hold` in the line `prefix` (read as the line was
 * when the hold's key was created) belongs to a lease that is gone: that holder was lost, not
 * released. An uncontended hold had no one ahead. A read below the compaction revision counts as a
 * loss (the delay is the safe side).
 */
export async function tookOverFromLostHolder(
  session: Session,
  prefix: string,
  hold: Hold,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  if (hold.header.revision === hold.fencingToken) return false;
  let ahead: readonly bigint[];
  try {
    const read = await session.etcd.range({
      prefix,
      revision: hold.fencingToken,
      maxCreateRevision: hold.fencingToken - 1n,
      keysOnly: true,
      signal,
    });
    ahead = read.kvs.map((kv) => kv.lease).filter((lease) => lease !== 0n);
  } catch (error) {
    if (error instanceof CompactedError) return true;
    throw error;
  }
  for (const lease of new Set(ahead)) {
    const alive = await session.etcd.lease.timeToLive(lease, { signal });
    if (alive.ttl <= 0n) return true;
  }
  return false;
}

/** @internal Waits `ms`, or rejects with AbortedError when `signal` aborts first. */
export async function lockDelay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch (error) {
    if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
    throw error;
  }
}
