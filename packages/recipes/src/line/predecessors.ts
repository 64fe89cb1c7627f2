// waitForPredecessors, the public wait for a turn in a line of keys: the recipes' own turn wait
// (turn.ts), its watch closed once the turn comes.
import { InvalidArgumentError, type KV, type ResponseHeader } from '@etcdkit/client';
import { throwIfAborted } from '../errors.js';
import type { WaitOptions } from '../wait.js';
import type { LineRead, OwnKey } from './turn.js';
import { watchForTurn } from './turn.js';

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
 * One watch, for deletes, over the range from the lowest to the highest of the own key and the
 * keys ahead it waits on, from just after the revision they were read at: with one slot the newest
 * predecessor (the key with the largest create revision below the waiter's), so a release wakes
 * one waiter, not the whole queue; with more every predecessor, of which enough must go (any of
 * them may free a slot). When the read had every key ahead, the delete that leaves fewer than
 * `slots` is the turn; otherwise a read of the queue and the own key, in one txn, decides, and
 * the wait goes on over the keys it found.
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
  const signal = wait.signal ?? new AbortController().signal;
  const { prefix, createRevision, ownKey } = wait;
  const waiter = { prefix, createRevision, slots, ownKey };
  const turn = await watchForTurn(kv, waiter, wait.ahead, signal);
  turn.watch?.close();
  return turn.header;
}
