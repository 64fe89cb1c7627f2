// The one-shot waits every recipe shares. Each watch starts just after a revision the caller READ,
// so a change between the read and the watch is replayed and no wakeup is lost.
import {
  AbortedError,
  type Bytes,
  CompactedError,
  type KV,
  type WatchBatch,
  type WatchEvent,
  type Watcher,
  type WatchKeys,
} from '@etcdkit/client';
import { linkSignals } from '@etcdkit/client/internal';
import { STOPPED, throwIfAborted } from './errors.js';

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
export async function waitForDelete(
  kv: KV,
  key: Bytes,
  fromRevision: bigint,
  options: WaitForDeleteOptions = {},
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
          recheck: async (signal) => {
            const read = await readKey(kv, key, options.createRevision, signal);
            return { found: read.gone ? read.revision : undefined, revision: read.revision };
          },
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
