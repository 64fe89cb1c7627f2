// A watch the server places on its own watchable store, for the lock and election services: the
// role the watches of etcd's in-process client play for its v3lock and v3election servers.
//
// It starts at the next revision. The services read the store and create the watch in the same
// synchronous step, so no change can land between the read and the watch: nothing is missed, and
// no history has to be replayed. Responses queue up until `next()` takes them. A consumer that
// falls behind makes the sink refuse responses; the watchable store then parks the watcher and
// replays the missed revisions from history once `next()` has drained the queue.
import { keyString } from '../bytes.js';
import type { MvccEvent } from '../mvcc/types.js';
import type { WatchableStore } from '../watch/watchable-store.js';
import type { WatchedKeys, Watcher, WatcherResponse, WatchSink } from '../watch/watcher.js';

/** What a {@link StoreWatch} watches: one key, or every key starting with `prefix`. */
export type WatchTarget =
  | { readonly key: Uint8Array; readonly prefix?: undefined }
  | { readonly prefix: Uint8Array; readonly key?: undefined };

/** Options of a {@link StoreWatch}. */
export interface StoreWatchOptions {
  /** Leave put events out (a wait for deletes ignores puts). Default false. */
  readonly noPut?: boolean;
  /** Responses queued before the sink refuses more. Default 64. */
  readonly maxQueued?: number;
}

/** A batch of events from a {@link StoreWatch}. */
export interface StoreWatchResponse {
  /** The events, in revision and op order; each event's `kv.modRevision` is its revision. */
  readonly events: readonly MvccEvent[];
  /** The revision a watch response's header carries (the events' revision when delivered live). */
  readonly revision: number;
}

/** The watch lost history it needed to a compaction: it cannot go on. */
export class StoreWatchCompactedError extends Error {
  constructor(readonly compactRevision: number) {
    super(`watch history compacted at revision ${compactRevision}`);
    this.name = 'StoreWatchCompactedError';
  }
}

/** The watch was closed while `next()` waited. */
export class StoreWatchClosedError extends Error {
  constructor() {
    super('watch closed');
    this.name = 'StoreWatchClosedError';
  }
}

// Watch ids label responses on a watch stream; these watchers have no stream, so any id will do.
const INTERNAL_WATCH_ID = -2n;

/** A watch on the server's watchable store, from the next revision on. */
export class StoreWatch {
  readonly #watchable: WatchableStore;
  readonly #watcher: Watcher;
  readonly #queue: StoreWatchResponse[] = [];
  readonly #maxQueued: number;
  #waiting: ((settled: StoreWatchResponse | Error) => void) | undefined;
  #ended: Error | undefined;
  #refused = false;

  constructor(watchable: WatchableStore, target: WatchTarget, options: StoreWatchOptions = {}) {
    this.#watchable = watchable;
    this.#maxQueued = options.maxQueued ?? 64;
    const queue = this.#queue;
    const maxQueued = this.#maxQueued;
    const sink: WatchSink = {
      send: (_watcher, response) => this.#receive(response),
      get accepting() {
        return queue.length < maxQueued;
      },
    };
    this.#watcher = watchable.watch(
      INTERNAL_WATCH_ID,
      {
        keys: watchedKeys(target),
        startRevision: 0,
        noPut: options.noPut ?? false,
        noDelete: false,
        prevKv: false,
        fragment: false,
        progressNotify: false,
      },
      sink,
    );
  }

  /**
   * The next batch of events. Rejects with `signal.reason` when `signal` aborts, with
   * {@link StoreWatchCompactedError} when the watch lost history to a compaction, and with
   * {@link StoreWatchClosedError} once the watch is closed.
   */
  next(signal?: AbortSignal): Promise<StoreWatchResponse> {
    const queued = this.#queue.shift();
    if (queued !== undefined) {
      this.#resumeIfDrained();
      return Promise.resolve(queued);
    }
    if (this.#ended) return Promise.reject(this.#ended);
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.#waiting = undefined;
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting = (settled) => {
        this.#waiting = undefined;
        signal?.removeEventListener('abort', onAbort);
        if (settled instanceof Error) reject(settled);
        else resolve(settled);
      };
    });
  }

  /** Removes the watcher from the store; a pending `next()` rejects with StoreWatchClosedError. */
  close(): void {
    if (this.#ended) return;
    this.#watchable.cancel(this.#watcher);
    this.#end(new StoreWatchClosedError());
  }

  /** Called by the store from inside a commit: only queue, never touch the store here. */
  #receive(response: WatcherResponse): boolean {
    if (this.#ended) return true;
    if (response.compactRevision !== 0) {
      this.#end(new StoreWatchCompactedError(response.compactRevision));
      return true;
    }
    if (response.events.length === 0) return true;
    if (this.#queue.length >= this.#maxQueued && this.#waiting === undefined) {
      this.#refused = true;
      return false;
    }
    const batch = { events: response.events, revision: response.revision };
    if (this.#waiting) this.#waiting(batch);
    else this.#queue.push(batch);
    return true;
  }

  #end(error: Error): void {
    if (this.#ended) return;
    this.#ended = error;
    this.#waiting?.(error);
  }

  #resumeIfDrained(): void {
    if (!this.#refused || this.#queue.length > 0) return;
    this.#refused = false;
    this.#watchable.resume();
  }
}

/** The watcher's keys in the store's latin1 form; a prefix of 0xff bytes runs to the end. */
function watchedKeys(target: WatchTarget): WatchedKeys {
  if (target.key !== undefined) {
    return { key: keyString(target.key), single: true, end: undefined };
  }
  const end = prefixEnd(target.prefix);
  return {
    key: keyString(target.prefix),
    single: false,
    end: end === undefined ? undefined : keyString(end),
  };
}

/** The first key after every key starting with `prefix`; undefined when none (all 0xff). */
export function prefixEnd(prefix: Uint8Array): Uint8Array | undefined {
  for (let i = prefix.length - 1; i >= 0; i--) {
    const byte = prefix[i] ?? 0xff;
    if (byte < 0xff) {
      const end = prefix.slice(0, i + 1);
      end[i] = byte + 1;
      return end;
    }
  }
  return undefined;
}
