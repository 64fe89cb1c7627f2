// The one waiting primitive every recipe shares (the role Go's concurrency/key.go plays): wait for
// a key's delete, for a put, or for one's turn in a queue of keys ordered by create revision.
//
// Every wait starts its watch at a revision the caller has READ (a range's header revision), never
// at "now": a change that lands between the read and the watch is then replayed by the watch, so
// no wakeup is lost. A wait watches only the key it depends on (no thundering herd), ends promptly
// on abort, and closes its watcher whatever happens.
import {
  AbortedError,
  type Bytes,
  CompactedError,
  InvalidArgumentError,
  type KV,
  linkSignals,
  type ResponseHeader,
  type WatchEvent,
  type WatchKeys,
} from '@etcdkit/client';
import { SessionExpiredError } from './errors.js';

/** Options shared by every wait. */
export interface WaitOptions {
  /** Aborting it ends the wait with the client's AbortedError (`cause` = `signal.reason`). */
  readonly signal?: AbortSignal;
}

/** Options of {@link waitForDelete}. */
export interface WaitForDeleteOptions extends WaitOptions {
  /**
   * The create revision of the incarnation of the key being waited on, when known. It lets the
   * wait survive a compaction of `fromRevision`: the key is then re-read, and a key that is gone
   * or was re-created (another create revision) counts as deleted.
   */
  readonly createRevision?: bigint;
}

/**
 * Resolves once `key` is deleted at a revision >= `fromRevision`, with the revision of the delete.
 *
 * `fromRevision` must be a revision at which the caller saw the key exist, normally the header
 * revision of the read that found it: a delete between that read and the creation of the watch is
 * then still delivered (this is what makes the wait lost-wakeup free). If that revision has been
 * compacted, the key is read again: missing (or, with `createRevision`, re-created) resolves at the
 * read's revision; otherwise the watch restarts from it.
 *
 * Rejects with AbortedError when `signal` aborts, and with the watch's error (PermissionDenied,
 * ClientClosed...) if it fails for good.
 */
export async function waitForDelete(
  kv: KV,
  key: Bytes,
  fromRevision: bigint,
  options: WaitForDeleteOptions = {},
): Promise<bigint> {
  let from = fromRevision;
  for (;;) {
    try {
      const event = await waitForEvent(kv, { key }, 'delete', from, options);
      return event.kv.modRevision;
    } catch (error) {
      if (!(error instanceof CompactedError)) throw error;
      const read = await kv.range({ key, signal: options.signal });
      const current = read.kvs[0];
      if (
        current === undefined ||
        (options.createRevision !== undefined && current.createRevision !== options.createRevision)
      ) {
        return read.header.revision;
      }
      from = read.header.revision;
    }
  }
}

/**
 * Resolves with the first event of `type` (`'put'` or `'delete'`) on `keys` at a revision >=
 * `fromRevision` (0n: from the moment the watch is created). With `fromRevision` = the header
 * revision of a read + 1, nothing after that read is missed.
 *
 * Rejects with AbortedError when `signal` aborts, with WatchCompactedError (a CompactedError) when
 * `fromRevision` was compacted, and with the watch's error if it fails for good.
 */
export async function waitForEvent(
  kv: KV,
  keys: WatchKeys,
  type: WatchEvent['type'],
  fromRevision: bigint,
  options: WaitOptions = {},
): Promise<WatchEvent> {
  const { signal } = options;
  throwIfAborted(signal);
  // The server filters the other kind of event out, so a busy key costs nothing while we wait.
  const watcher = kv.watch({
    ...keys,
    startRevision: fromRevision,
    filters: [type === 'put' ? 'noDelete' : 'noPut'],
    signal,
  });
  try {
    for await (const batch of watcher) {
      const event = batch.events.find((e) => e.type === type);
      if (event) return event;
    }
  } finally {
    await watcher.close();
  }
  // The loop ends without an error only when the watcher was closed: by our signal.
  throwIfAborted(signal);
  throw new AbortedError({ message: 'the watch ended before the awaited event' });
}

/** The recipe's own queue key, watched while waiting so its loss ends the wait at once. */
export interface OwnKey {
  /** The full key. */
  readonly key: string;
  /** Its create revision (the recipe's position in the queue). */
  readonly createRevision: bigint;
  /** A revision at which the key was seen to exist, e.g. the header revision of the acquire txn. */
  readonly seenAt: bigint;
}

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
   * or someone deleted it: etcd issue 19597) rejects the wait with {@link SessionExpiredError} at
   * once instead of waiting on for a turn that can no longer be taken.
   */
  readonly ownKey?: OwnKey;
}

/**
 * Waits for one's turn in a queue of keys ordered by create revision (mutex, election, rwmutex,
 * semaphore). Resolves with the header of the read that found fewer than `slots` predecessors.
 *
 * With one slot it reads the newest predecessor (the key with the largest create revision below
 * the waiter's), waits for ITS delete from the read's header revision, and repeats: each waiter
 * watches exactly one key, so a release wakes one waiter, not the whole queue. With more slots it
 * reads every predecessor and watches the prefix for their deletes (any of them may free a slot).
 *
 * The caller must still check its own key afterwards: resolving says only that no predecessor was
 * left at some revision. Rejects with AbortedError on abort, SessionExpiredError when `ownKey` is
 * deleted, or the failure of a read or watch. Every watch it opened is closed when it settles.
 */
export async function waitForPredecessors(kv: KV, wait: PredecessorWait): Promise<ResponseHeader> {
  const slots = wait.slots ?? 1;
  if (!Number.isSafeInteger(slots) || slots < 1) {
    throw new InvalidArgumentError(`slots must be a positive integer, got ${String(slots)}`);
  }
  throwIfAborted(wait.signal);
  const inner = new AbortController();
  // Linked by hand, and let go of at the end: the caller's signal may outlive many waits.
  const linked = wait.signal ? linkSignals(wait.signal, inner.signal) : undefined;
  const signal = linked?.signal ?? inner.signal;
  const turn =
    slots === 1 ? waitForNoPredecessor(kv, wait, signal) : waitForFreeSlot(kv, wait, signal);
  const lost = wait.ownKey ? ownKeyLost(kv, wait.ownKey, signal) : undefined;
  try {
    return lost ? await Promise.race([turn, lost]) : await turn;
  } finally {
    inner.abort();
    linked?.release();
    // Settle both sides before returning so no watch outlives the call; their rejections after
    // the inner abort are expected and swallowed here.
    await Promise.allSettled(lost ? [turn, lost] : [turn]);
  }
}

async function waitForNoPredecessor(
  kv: KV,
  wait: PredecessorWait,
  signal: AbortSignal,
): Promise<ResponseHeader> {
  for (;;) {
    const read = await kv.range({
      prefix: wait.prefix,
      sort: { target: 'create', order: 'descend' },
      limit: 1,
      maxCreateRevision: wait.createRevision - 1n,
      keysOnly: true,
      signal,
    });
    const predecessor = read.kvs[0];
    if (predecessor === undefined) return read.header;
    await waitForDelete(kv, predecessor.key, read.header.revision, {
      signal,
      createRevision: predecessor.createRevision,
    });
  }
}

async function waitForFreeSlot(
  kv: KV,
  wait: PredecessorWait,
  signal: AbortSignal,
): Promise<ResponseHeader> {
  const slots = BigInt(wait.slots ?? 1);
  for (;;) {
    const read = await kv.range({
      prefix: wait.prefix,
      maxCreateRevision: wait.createRevision - 1n,
      keysOnly: true,
      signal,
    });
    // `count` ignores the create-revision filter, so count the returned keys instead.
    const ahead = new Set(read.kvs.map((entry) => entry.keyText()));
    if (BigInt(ahead.size) < slots) return read.header;
    try {
      await waitForDeletes(kv, wait.prefix, ahead, ahead.size - Number(slots) + 1, {
        from: read.header.revision,
        signal,
      });
      return read.header;
    } catch (error) {
      // The watch start was compacted: read the queue again from now.
      if (!(error instanceof CompactedError)) throw error;
    }
  }
}

/** Resolves once `needed` keys of `keys` (all under `prefix`) were deleted from revision `from`. */
async function waitForDeletes(
  kv: KV,
  prefix: string,
  keys: Set<string>,
  needed: number,
  options: { readonly from: bigint; readonly signal: AbortSignal },
): Promise<void> {
  const watcher = kv.watch({
    prefix,
    startRevision: options.from,
    filters: ['noPut'],
    signal: options.signal,
  });
  let deleted = 0;
  try {
    for await (const batch of watcher) {
      for (const event of batch.events) {
        // A predecessor deleted then re-created is behind us now, so each name counts once.
        if (keys.delete(event.kv.keyText())) deleted++;
      }
      if (deleted >= needed) return;
    }
  } finally {
    await watcher.close();
  }
  throwIfAborted(options.signal);
  throw new AbortedError({ message: 'the watch ended before the awaited deletes' });
}

/** Rejects with SessionExpiredError when the own key is deleted; never resolves otherwise. */
async function ownKeyLost(kv: KV, own: OwnKey, signal: AbortSignal): Promise<never> {
  const at = await waitForDelete(kv, own.key, own.seenAt, {
    signal,
    createRevision: own.createRevision,
  });
  throw new SessionExpiredError(
    `${own.key} was deleted at revision ${at} while waiting (its lease expired or was revoked, or it was deleted)`,
    { key: own.key },
  );
}

/** Throws the client's AbortedError when `signal` has aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
}
