// The local queue of STM runs that conflicted: per-key FIFO locks, so a hot key costs about one
// commit per success; the commit's compares still decide (docs/stm.md, "Retries and contention").
import { AbortedError, type KV } from '@etcdkit/client';
import { Slot } from '@etcdkit/client/internal';
import { keyId, type Prefetched, type ReadEntry } from './attempt.js';

interface KeyLock {
  /**
   * Runs waiting for the key, first first; each is handed the key when it is released, with what
   * the releasing run's commit left, if it committed.
   */
  readonly waiters: Array<(after: Prefetched | undefined) => void>;
}

/** @internal The keys a run holds in the queue. */
export interface HeldKeys {
  /** The key ids held, sorted. */
  readonly ids: readonly string[];
  /** Whether some key was held by another run when these keys were asked for. */
  readonly waited: boolean;
  /** Whether these keys include every one of `keys`. */
  covers(keys: readonly Uint8Array[]): boolean;
  /**
   * `keys` as the commit of the run that handed this one the keys left them (the store at that
   * commit's revision), when that commit covered them all: an attempt can start from it without
   * reading.
   */
  handed(keys: readonly Uint8Array[]): Prefetched | undefined;
  /**
   * Hands each key to its next waiter, or frees it; `after`, the store at the revision of this
   * run's commit, goes with them. Idempotent.
   */
  release(after?: Prefetched): void;
}

/** @internal The per-key locks of one KV. */
export class StmQueue {
  readonly #locks = new Map<string, KeyLock>();

  /** Whether a run holds one of `keys`. */
  holdsAny(keys: readonly Uint8Array[]): boolean {
    return keys.some((key) => this.#locks.has(keyId(key)));
  }

  /**
   * Waits until this run holds every one of `keys` (and of `also`). Keys are taken one by one in
   * sorted order, so two runs never wait for each other. An abort gives back what was taken.
   */
  async take(
    keys: readonly Uint8Array[],
    also: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<HeldKeys> {
    const ids = [...new Set([...keys.map(keyId), ...also])].sort();
    const taken: string[] = [];
    let waited = false;
    let latest: Prefetched | undefined;
    try {
      for (const id of ids) {
        const lock = this.#locks.get(id);
        if (lock === undefined) this.#locks.set(id, { waiters: [] });
        else {
          waited = true;
          const after = await this.#wait(lock, signal);
          if (after && (latest === undefined || after.revision > latest.revision)) latest = after;
        }
        taken.push(id);
      }
    } catch (error) {
      this.#release(taken);
      throw error;
    }
    let released = false;
    return {
      ids,
      waited,
      covers: (more) => more.every((key) => ids.includes(keyId(key))),
      handed: (wanted) => handedOf(latest, wanted),
      release: (after) => {
        if (released) return;
        released = true;
        this.#release(ids, after);
      },
    };
  }

  #wait(lock: KeyLock, signal: AbortSignal | undefined): Promise<Prefetched | undefined> {
    if (signal?.aborted) return Promise.reject(new AbortedError({ cause: signal.reason }));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const at = lock.waiters.indexOf(handed);
        if (at >= 0) lock.waiters.splice(at, 1);
        reject(new AbortedError({ cause: signal?.reason }));
      };
      const handed = (after: Prefetched | undefined) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(after);
      };
      lock.waiters.push(handed);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #release(ids: readonly string[], after?: Prefetched): void {
    for (const id of ids) {
      const next = this.#locks.get(id)?.waiters.shift();
      if (next) next(after);
      else this.#locks.delete(id);
    }
  }
}

/**
 * `keys` from `after`, when it has them all. A run hands over the keys it committed; keys this run
 * took later without waiting may have changed since, which its commit's compares then catch.
 */
function handedOf(
  after: Prefetched | undefined,
  keys: readonly Uint8Array[],
): Prefetched | undefined {
  if (after === undefined) return undefined;
  const entries = new Map<string, ReadEntry>();
  for (const key of keys) {
    const entry = after.entries.get(keyId(key));
    if (entry === undefined) return undefined;
    entries.set(keyId(key), entry);
  }
  return { revision: after.revision, entries };
}

const QUEUE = new Slot(() => new StmQueue());

/** @internal The queue of the runStm calls on `kv` in this process. */
export function stmQueueOf(kv: KV): StmQueue {
  return kv.slots.get(QUEUE);
}
