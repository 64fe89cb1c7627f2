// Taking the first item out of a queue exactly once: each consumer deletes it guarded by the mod
// revision it read, so one delete applies and its prevKv gives the winner the value.
import {
  type Bytes,
  CompactedError,
  cmp,
  type KeyValue,
  type KV,
  op,
  type RangeSort,
  type ResponseHeader,
} from '@etcdkit/client';
import { linkSignals } from '@etcdkit/client/internal';
import { throwIfAborted } from '../errors.js';
import { waitForChange } from '../wait.js';

/** What {@link Queue.enqueue} and {@link PriorityQueue.enqueue} resolve with. */
export interface Enqueued {
  /** The item's key (relative to the KV the queue was built on). */
  readonly key: string;
  /** Header of the write; `header.revision` is the item's revision. */
  readonly header: ResponseHeader;
}

/** An item taken out of a queue: it is deleted from etcd and belongs to this consumer alone. */
export interface Dequeued {
  /** The item as it was stored: `kv.text()` or `kv.value` is the payload, `kv.keyText()` its key. */
  readonly kv: KeyValue;
  /** Header of the delete that claimed it; `header.revision` orders the claims of all consumers. */
  readonly header: ResponseHeader;
}

/** Options of a dequeue. */
export interface DequeueOptions {
  /**
   * Aborting it ends the wait with AbortedError and takes nothing. A claim already sent is not
   * interrupted: if it wins, the item is returned (it has left the queue; dropping it would lose
   * it).
   */
  readonly signal?: AbortSignal;
}

/** Options of an enqueue. */
export interface EnqueueOptions {
  /**
   * Checked before each write. A write once sent is waited for, not interrupted: an abort then
   * could not say whether the item was enqueued.
   */
  readonly signal?: AbortSignal;
}

/**
 * @internal Puts `value` under a new key named by `name()`, created only if absent: when another
 * producer took the name, the next one is tried. `signal` is checked before each write; a write
 * once sent is waited for.
 */
export async function putUnderNewKey(
  kv: KV,
  name: () => string,
  value: Bytes,
  signal: AbortSignal | undefined,
): Promise<Enqueued> {
  for (;;) {
    throwIfAborted(signal);
    const key = name();
    const result = await kv.txn().if(cmp.missing(key)).then(op.put(key, value)).commit();
    if (result.succeeded) return { key, header: result.header };
  }
}

// Candidates read per round trip. A claim lost to another consumer moves on to the next one read
// instead of reading again; keys only, since the claim itself returns the value.
const CANDIDATES = 8;

/**
 * @internal Claims the first item under `prefix` in `sort` order, waiting for one to be put when
 * the queue is empty.
 */
export async function claimFirst(
  kv: KV,
  prefix: string,
  sort: RangeSort,
  signal: AbortSignal | undefined,
  dueIn?: DueIn,
): Promise<Dequeued> {
  for (;;) {
    throwIfAborted(signal);
    const read = await kv.range({ prefix, sort, limit: CANDIDATES, keysOnly: true, signal });
    let wait: number | undefined;
    for (const candidate of read.kvs) {
      throwIfAborted(signal);
      // Items come in visibility order: the first one not due yet ends the round.
      const ms = dueIn?.(candidate) ?? 0;
      if (ms > 0) {
        wait = ms;
        break;
      }
      const claimed = await claim(kv, candidate);
      if (claimed) return claimed;
    }
    if (read.kvs.length > 0 && wait === undefined) continue;
    const head = read.kvs[0]?.keyText();
    // Waits for the next due time too, as a deadline of the same wait.
    const timer = wait === undefined ? undefined : AbortSignal.timeout(wait);
    const linked = timer === undefined ? undefined : linkSignals(signal, timer);
    try {
      // Nothing to take at the read's revision: any item put after it wakes us. Read again rather
      // than claim the event's key, so the item served is the first in queue order, not the first
      // to arrive. A recheck that finds another first item than the read did wakes us too.
      await waitForChange(
        kv,
        { keys: { prefix }, type: 'put', from: read.header.revision + 1n },
        (batch) => batch.events.length > 0 || undefined,
        {
          signal: linked?.signal ?? signal,
          recheck: async (stop) => {
            const items = await kv.range({ prefix, sort, limit: 1, keysOnly: true, signal: stop });
            const first = items.kvs[0]?.keyText();
            return {
              found: (first !== undefined && first !== head) || undefined,
              revision: items.header.revision,
            };
          },
        },
      );
    } catch (error) {
      // The due time came: read again.
      if (timer?.aborted && !signal?.aborted) continue;
      // History since the read was compacted away: read the queue again from now.
      if (!(error instanceof CompactedError)) throw error;
    } finally {
      linked?.release();
    }
  }
}

/** @internal How many milliseconds until a candidate may be taken (0 or less: now). */
export type DueIn = (candidate: KeyValue) => number;

/** Deletes `candidate` if it is still the version that was read; undefined when another won. */
async function claim(kv: KV, candidate: KeyValue): Promise<Dequeued | undefined> {
  // No signal and no retry: an aborted or retried claim could win unseen and lose the item, so an
  // unknown outcome is reported as the client's OutcomeUnknownError instead.
  const result = await kv
    .txn()
    .if(cmp.modRevision(candidate.key, '==', candidate.modRevision))
    .then(op.delete(candidate.key, { prevKv: true }))
    .commit();
  if (!result.succeeded) return undefined;
  const item = result.responses[0].prevKvs[0];
  return item === undefined ? undefined : { kv: item, header: result.header };
}
