// waitForPredecessors, the public wait for a turn in a line of keys, and the waits of a line that
// one watch over the key ahead and the own key cannot serve: more than one slot (a Semaphore), or
// an own key outside the line waited on (a reader of an RWMutex).
import {
  type Bytes,
  CompactedError,
  InvalidArgumentError,
  type KeyValue,
  type KV,
  type ResponseHeader,
} from '@etcdkit/client';
import {
  type Recheck,
  throwIfAborted,
  type WaitOptions,
  waitForChange,
  waitForDelete,
} from '../wait.js';
import { type AheadRead, type QueueLine, waitForTurn } from './line.js';
import { type LineRead, type OwnKey, ownKeyDeleted, readAhead, watchForTurn } from './turn.js';

/** What {@link waitForPredecessors} waits for. */
export interface PredecessorWait extends WaitOptions {
  /** The queue: every key under this prefix (for a mutex, `name + "/"`). */
  readonly prefix: string;
  /** The waiter's create revision: keys created before it are its predecessors. */
  readonly createRevision: bigint;
  /**
   * How many holders the queue admits at once: the wait ends when fewer than `slots` predecessors
   * remain. Default 1 (a mutex: no predecessor may remain).
   */
  readonly slots?: number;
  /**
   * The waiter's own key. When given it is watched too, and its delete (lease expired or revoked,
   * or someone deleted it) rejects the wait with {@link SessionExpiredError} at
   * once instead of waiting on for a turn that can no longer be taken. Each read of the queue
   * checks it too, so the wait resolves only at a revision where it was still this incarnation.
   */
  readonly ownKey?: OwnKey;
  /**
   * The queue as the caller already read it (for example in the txn that created its key), to
   * start waiting without reading it again.
   */
  readonly ahead?: LineRead;
}

/**
 * Waits for one's turn in a queue of keys ordered by create revision (mutex, election, rwmutex,
 * semaphore). Resolves with the header of the read that found fewer than `slots` predecessors
 * (and, with `ownKey`, the own key still the incarnation that queued).
 *
 * With one slot it waits for the delete of the newest predecessor (the key with the largest create
 * revision below the waiter's), from just after the revision it was seen at, then reads the queue
 * and its own key again in one txn, and repeats: each waiter watches exactly one key (with an own
 * key in the line, one range over the two), so a release wakes one waiter, not the whole queue.
 * With more slots it watches the prefix for the deletes of the predecessors read (any of them may
 * free a slot).
 *
 * Keys are never created with a create revision below an existing one, so "no predecessor left" at
 * a revision stays true after it. Rejects with AbortedError on abort, SessionExpiredError when
 * `ownKey` is deleted or found gone, or the failure of a read or watch. Every watch it opened is
 * closed when it settles.
 */
export async function waitForPredecessors(kv: KV, wait: PredecessorWait): Promise<ResponseHeader> {
  const slots = wait.slots ?? 1;
  if (!Number.isSafeInteger(slots) || slots < 1) {
    throw new InvalidArgumentError(`slots must be a positive integer, got ${String(slots)}`);
  }
  throwIfAborted(wait.signal);
  const own = wait.ownKey;
  const signal = wait.signal ?? new AbortController().signal;
  if (slots === 1 && own?.key.startsWith(wait.prefix)) {
    // The own key is in the line: one watch over it and the key ahead (line/turn.ts).
    const turn = await watchForTurn(kv, { ...wait, ownKey: own }, wait.ahead, signal);
    turn.watch?.close();
    return turn.header;
  }
  return waitForTurn(queueLine(kv, wait, slots), {
    ahead: aheadOf(wait.ahead),
    own: own && { place: own, seenAt: own.seenAt },
    signal,
  });
}

/**
 * @internal The turn part of {@link waitForPredecessors} by the store-neutral algorithm
 * (line.ts), without the own key's watch: for a caller that watches the key itself and aborts
 * `signal` when it goes (a permit of a Semaphore, a reader of an RWMutex).
 */
export function waitInLine(
  kv: KV,
  wait: PredecessorWait,
  slots: number,
  signal: AbortSignal,
): Promise<ResponseHeader> {
  return waitForTurn(queueLine(kv, wait, slots), { ahead: aheadOf(wait.ahead), signal });
}

function aheadOf(read: LineRead | undefined): AheadRead<KeyValue, ResponseHeader> | undefined {
  return read && withRevision(read);
}

function withRevision(read: LineRead): AheadRead<KeyValue, ResponseHeader> {
  return { ...read, revision: read.header.revision };
}

/** The shared queue algorithm's store, over the client. */
function queueLine(
  kv: KV,
  wait: PredecessorWait,
  slots: number,
): QueueLine<Bytes, KeyValue, ResponseHeader> {
  return {
    slots,
    readAhead: async (signal) => withRevision(await readAhead(kv, wait, slots, signal)),
    waitForDelete: (place, seenAt, signal) =>
      waitForDelete(kv, place.key, seenAt, { signal, createRevision: place.createRevision }),
    waitForPredecessor: async (newest, read, signal) => {
      await waitForDelete(kv, newest.key, read.revision, {
        signal,
        createRevision: newest.createRevision,
      });
      return undefined;
    },
    waitForSlot: async ({ predecessors, header }, signal) => {
      const ahead = new Set(predecessors.map((entry) => entry.keyText()));
      try {
        await waitForDeletes(kv, wait.prefix, ahead, ahead.size - slots + 1, {
          from: header.revision + 1n,
          signal,
          recheck: async (stop) => {
            const read = await readAhead(kv, wait, slots, stop);
            const found = read.predecessors.length < slots ? true : undefined;
            return { found, revision: read.header.revision };
          },
        });
      } catch (error) {
        // The watch start was compacted: read the queue again from now.
        if (!(error instanceof CompactedError)) throw error;
      }
    },
    lost: (revision) => ownKeyDeleted(wait.ownKey?.key, revision),
  };
}

/**
 * Resolves once `needed` keys of `keys` (all under `prefix`) were deleted from revision `from`, or
 * once `recheck` reads that enough are gone.
 */
async function waitForDeletes(
  kv: KV,
  prefix: string,
  keys: Set<string>,
  needed: number,
  options: {
    readonly from: bigint;
    readonly signal: AbortSignal;
    readonly recheck: (signal: AbortSignal) => Promise<Recheck<true>>;
  },
): Promise<void> {
  let deleted = 0;
  await waitForChange(
    kv,
    { keys: { prefix }, type: 'delete', from: options.from },
    (batch) => {
      for (const event of batch.events) {
        // A predecessor deleted then re-created is behind us now, so each name counts once.
        if (keys.delete(event.kv.keyText())) deleted++;
      }
      return deleted >= needed ? true : undefined;
    },
    options,
  );
}
