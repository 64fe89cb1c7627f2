// The waits every recipe shares. Each watch starts just after a revision the caller READ, so a
// change between the read and the watch is replayed and no wakeup is lost.
import {
  AbortedError,
  type Bytes,
  CompactedError,
  InvalidArgumentError,
  type KeyValue,
  type KV,
  linkSignals,
  op,
  type ResponseHeader,
  type WatchBatch,
  type WatchEvent,
  type Watcher,
  type WatchKeys,
} from '@etcdkit/client';
import { SessionExpiredError } from './errors.js';
import { type AheadRead, type QueueLine, waitForTurn } from './queue-line.js';

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
 * Resolves once `key` is deleted after `fromRevision`: with the revision of the delete, or of a
 * later read that found the key gone.
 *
 * `fromRevision` must be a revision at which the caller saw the key exist, normally the header
 * revision of the read that found it: a delete between that read and the creation of the watch is
 * then still delivered (this is what makes the wait lost-wakeup free). The watch starts at
 * `fromRevision + 1`, so when nothing changed since the read etcd delivers the delete as it
 * commits. When the store did move on (etcd would replay that watch only from its 100 ms catch-up
 * loop), a watch from now is added and the key read once more: missing (or, with
 * `createRevision`, re-created) resolves at the read's revision. So does a read after the start
 * revision was compacted; otherwise the watch restarts after it.
 *
 * Rejects with AbortedError when `signal` aborts, and with the watch's error (PermissionDenied,
 * ClientClosed...) if it fails for good.
 */
export function waitForDelete(
  kv: KV,
  key: Bytes,
  fromRevision: bigint,
  options: WaitForDeleteOptions = {},
): Promise<bigint> {
  return waitForDeleteOf(kv, key, fromRevision, options, true);
}

/**
 * @internal {@link waitForDelete}; with `live` false a watch the store moved past is only waited
 * out (no watch from now, no read): for a wait whose event is rare and not urgent, such as a held
 * key's loss, where the extra watch and read would cost every acquisition under contention.
 */
export async function waitForDeleteOf(
  kv: KV,
  key: Bytes,
  fromRevision: bigint,
  options: WaitForDeleteOptions,
  live: boolean,
): Promise<bigint> {
  let seenAt = fromRevision;
  for (;;) {
    try {
      return await waitForChange(
        kv,
        { keys: { key }, type: 'delete', from: seenAt + 1n },
        (batch) => firstOf('delete')(batch)?.kv.modRevision,
        {
          signal: options.signal,
          recheck: live
            ? async (signal) => {
                const read = await readKey(kv, key, options.createRevision, signal);
                return { found: read.gone ? read.revision : undefined, revision: read.revision };
              }
            : undefined,
        },
      );
    } catch (error) {
      if (!(error instanceof CompactedError)) throw error;
      const read = await readKey(kv, key, options.createRevision, options.signal);
      if (read.gone) return read.revision;
      seenAt = read.revision;
    }
  }
}

/**
 * Reads `key` and whether the incarnation waited on is gone: missing or, with `createRevision`,
 * re-created.
 */
async function readKey(
  kv: KV,
  key: Bytes,
  createRevision: bigint | undefined,
  signal: AbortSignal | undefined,
): Promise<{ readonly gone: boolean; readonly revision: bigint }> {
  const read = await kv.range({ key, keysOnly: true, signal });
  const current = read.kvs[0];
  const gone =
    current === undefined ||
    (createRevision !== undefined && current.createRevision !== createRevision);
  return { gone, revision: read.header.revision };
}

/**
 * Resolves with the first event of `type` (`'put'` or `'delete'`) on `keys` at a revision >=
 * `fromRevision` (0n: from the moment the watch is created). With `fromRevision` = the header
 * revision of a read + 1, nothing after that read is missed.
 *
 * Rejects with AbortedError when `signal` aborts, with WatchCompactedError (a CompactedError) when
 * `fromRevision` was compacted, and with the watch's error if it fails for good.
 */
export function waitForEvent(
  kv: KV,
  keys: WatchKeys,
  type: WatchEvent['type'],
  fromRevision: bigint,
  options: WaitOptions = {},
): Promise<WatchEvent> {
  return waitForChange(kv, { keys, type, from: fromRevision }, firstOf(type), options);
}

/** What {@link waitForChange} watches: events of `type` on `keys` from revision `from`. */
export interface ChangeWatch {
  readonly keys: WatchKeys;
  readonly type: WatchEvent['type'];
  readonly from: bigint;
}

/** Options of {@link waitForChange}. */
export interface ChangeOptions<T> extends WaitOptions {
  /**
   * Reads whether the awaited change already happened: its result (undefined when it did not) and
   * the read's revision. Without it a watch that starts in the past is only waited out.
   */
  readonly recheck?: (signal: AbortSignal) => Promise<Recheck<T>>;
}

/** What a {@link ChangeOptions.recheck} read found, at which revision. */
export interface Recheck<T> {
  readonly found: T | undefined;
  readonly revision: bigint;
}

/**
 * @internal Watches `watch.keys` from `watch.from` until `found` returns something for a batch.
 *
 * A watch from a past revision (the store moved on since the read that gave `from`) is served by
 * etcd from its catch-up loop, every 100 ms. When the watch's creation shows that, and `recheck`
 * is given, a second watch is opened from now (etcd delivers its events as they commit) and, at
 * the same time, `recheck` reads whether the change already came; a read older than the second
 * watch is made once more. The first of the two watches or the reads to tell wins; the first
 * watch alone would still see everything, only later. Every watch is closed when it settles.
 */
export async function waitForChange<T>(
  kv: KV,
  watch: ChangeWatch,
  found: (batch: WatchBatch) => T | undefined,
  options: ChangeOptions<T> = {},
): Promise<T> {
  throwIfAborted(options.signal);
  const stop = new AbortController();
  const linked = options.signal ? linkSignals(options.signal, stop.signal) : undefined;
  const signal = linked?.signal ?? stop.signal;
  // The server filters the other kind of event out, so a busy key costs nothing while we wait.
  const open = (startRevision: bigint) =>
    kv.watch({
      ...watch.keys,
      startRevision,
      filters: [watch.type === 'put' ? 'noDelete' : 'noPut'],
      signal,
    });
  const first = open(watch.from);
  const replayed = untilFound(first, found, signal);
  const { recheck } = options;
  const attempts = [replayed];
  if (recheck !== undefined && watch.from > 0n) {
    attempts.push(
      first.ready().then(async (createdAt) => {
        // Created below the start revision: etcd counts it synced, nothing to catch up.
        if (createdAt < watch.from) return replayed;
        const second = open(0n);
        const live = untilFound(second, found, signal);
        // Handled here as well: after a stop it may reject unawaited.
        live.catch(() => undefined);
        attempts.push(live);
        const [liveFrom, read] = await Promise.all([second.ready(), recheck(signal)]);
        if (read.found !== undefined) return read.found;
        // The read was answered before the live watch existed: a change in between is only in
        // the first watch's catch-up, so read once more.
        const covered = liveFrom <= read.revision ? read : await recheck(signal);
        return covered.found ?? (await live);
      }),
    );
  }
  try {
    return await Promise.race(attempts);
  } finally {
    // Stopping ends every watch at once (a watcher closes on its signal). The losers then reject
    // with AbortedError; they are not waited for: a read still in flight would hold up the winner.
    stop.abort(STOPPED);
    linked?.release();
    for (const attempt of attempts) attempt.catch(() => undefined);
  }
}

/**
 * @internal The reason the recipes' own stops abort with (a wait settled, a hold ended): never seen
 * outside, and a string, so that no DOMException is built for every acquisition.
 */
export const STOPPED = 'stopped by the recipe';

/** Picks the first event of `type` in a batch. */
function firstOf(type: WatchEvent['type']): (batch: WatchBatch) => WatchEvent | undefined {
  return (batch) => batch.events.find((event) => event.type === type);
}

async function untilFound<T>(
  watcher: Watcher,
  found: (batch: WatchBatch) => T | undefined,
  signal: AbortSignal,
): Promise<T> {
  try {
    for await (const batch of watcher) {
      const result = found(batch);
      if (result !== undefined) return result;
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

/** A read of the queue ahead of a waiter, at one revision. */
export interface QueueRead {
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
  readonly ahead?: QueueRead;
}

/**
 * Waits for one's turn in a queue of keys ordered by create revision (mutex, election, rwmutex,
 * semaphore). Resolves with the header of the read that found fewer than `slots` predecessors
 * (and, with `ownKey`, the own key still the incarnation that queued).
 *
 * With one slot it waits for the delete of the newest predecessor (the key with the largest create
 * revision below the waiter's), from just after the revision it was seen at, then reads the queue
 * and its own key again in one txn, and repeats: each waiter watches exactly one key, so a release
 * wakes one waiter, not the whole queue. With more slots it watches the prefix for the deletes of
 * the predecessors read (any of them may free a slot).
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
  return waitForTurn(queueLine(kv, wait, slots), {
    ahead: aheadOf(wait.ahead),
    own: own && { place: own, seenAt: own.seenAt },
    signal: wait.signal ?? new AbortController().signal,
  });
}

/**
 * @internal The turn part of {@link waitForPredecessors}, without the own key's watch: for a
 * caller that watches the key itself and aborts `signal` when it goes.
 */
export function waitInQueue(
  kv: KV,
  wait: PredecessorWait,
  slots: number,
  signal: AbortSignal,
): Promise<ResponseHeader> {
  return waitForTurn(queueLine(kv, wait, slots), { ahead: aheadOf(wait.ahead), signal });
}

function aheadOf(read: QueueRead | undefined): AheadRead<KeyValue, ResponseHeader> | undefined {
  return read && withRevision(read);
}

function withRevision(read: QueueRead): AheadRead<KeyValue, ResponseHeader> {
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
    readAhead: async (signal) => withRevision(await readQueue(kv, wait, slots, signal)),
    waitForDelete: (place, seenAt, signal) =>
      waitForDelete(kv, place.key, seenAt, { signal, createRevision: place.createRevision }),
    waitForPredecessor: async (newest, read, signal) => {
      // Our own key, when it queues among the keys ahead and the read listed all of them.
      const own = read.complete ? wait.ownKey : undefined;
      if (own?.key.startsWith(wait.prefix)) {
        // The only key ahead: its delete is the turn, unless our own key went first.
        return waitForLastPredecessor(kv, { ...wait, ownKey: own }, newest, read, signal);
      }
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
            const read = await readQueue(kv, wait, slots, stop);
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

/** @internal The failure of a wait whose own key was deleted at `revision`. */
export function ownKeyDeleted(key: string | undefined, revision: bigint): SessionExpiredError {
  return new SessionExpiredError(
    `${String(key)} was deleted at revision ${revision} while waiting (its lease expired or was revoked, or it was deleted)`,
    { key },
  );
}

/**
 * Waits for the delete of the last key ahead of `own` with ONE watch over the key range from the
 * lower of the two keys to the higher: a watcher's events come in revision order, so a delete of
 * the predecessor seen before any delete of our own key proves we hold at that revision, with no
 * read after the event. Keys in between are only later waiters of the same queue (ignored).
 * Resolves with a header at the turn's revision; undefined when the start revision was compacted
 * (the caller reads the queue again); rejects with SessionExpiredError when our key went first.
 */
async function waitForLastPredecessor(
  kv: KV,
  wait: PredecessorWait & { readonly ownKey: OwnKey },
  predecessor: KeyValue,
  read: QueueRead,
  signal: AbortSignal,
): Promise<ResponseHeader | undefined> {
  const own = Buffer.from(wait.ownKey.key);
  const ahead = Buffer.from(predecessor.key);
  const [low, high] = Buffer.compare(own, ahead) < 0 ? [own, ahead] : [ahead, own];
  let turn: Turn;
  try {
    turn = await waitForChange<Turn>(
      kv,
      {
        keys: { range: { start: low, end: Buffer.concat([high, ZERO]) } },
        type: 'delete',
        from: read.header.revision + 1n,
      },
      (batch) => {
        for (const event of batch.events) {
          if (own.equals(event.kv.key)) return { lostAt: event.kv.modRevision };
          if (ahead.equals(event.kv.key)) {
            // Both deleted by one txn: our key is gone at that revision too.
            const alsoOwn = batch.events.some((other) => own.equals(other.kv.key));
            if (alsoOwn) return { lostAt: event.kv.modRevision };
            return { held: { ...batch.header, revision: event.kv.modRevision } };
          }
        }
        return undefined;
      },
      {
        signal,
        // The watch started behind the store: a queue read (which checks our key) tells instead.
        recheck: async (stop) => {
          const again = await readQueue(kv, wait, 1, stop);
          const held = again.predecessors.length === 0 ? { held: again.header } : undefined;
          return { found: held, revision: again.header.revision };
        },
      },
    );
  } catch (error) {
    if (error instanceof CompactedError) return undefined;
    throw error;
  }
  if ('held' in turn) return turn.held;
  throw ownKeyDeleted(wait.ownKey.key, turn.lostAt);
}

type Turn = { readonly held: ResponseHeader } | { readonly lostAt: bigint };

const ZERO = Buffer.from([0]);

/**
 * @internal Reads the predecessors (with one slot only the newest) and, with `ownKey`, checks in
 * the same txn that the own key is still the incarnation that queued: one round trip.
 */
export async function readQueue(
  kv: KV,
  wait: PredecessorWait,
  slots: number,
  signal: AbortSignal,
): Promise<QueueRead> {
  const request = {
    prefix: wait.prefix,
    maxCreateRevision: wait.createRevision - 1n,
    keysOnly: true,
    sort: { target: 'create', order: 'descend' },
    ...(slots === 1 ? { limit: 1 } : {}),
  } as const;
  const own = wait.ownKey;
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

/** Throws the client's AbortedError when `signal` has aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
}
