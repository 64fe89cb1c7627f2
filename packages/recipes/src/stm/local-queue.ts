// The local queue of STM runs that conflicted: per-key FIFO locks, so a hot key costs about one
// commit per success; the commit's compares still decide (docs/stm.md, "Retries and contention").
import { AbortedError, type KV } from '@etcdkit/client';
import { Slot } from '@etcdkit/client/internal';
import { keyId, type Prefetched, type ReadEntry } from './attempt.js';

interface KeyLock<B> {
  /**
   * Runs waiting for the key, first first; each is handed the key when it is released, with what
   * the releasing run's commit left, if it committed.
   */
  readonly waiters: Array<Waiter<B>>;
}

/** A run waiting for a key: every key it asks for, and how to hand it the key. */
interface Waiter<B> {
  readonly ids: readonly string[];
  /** Hands the key, or with `baton` every key the run asks for at once. */
  readonly hand: (handed: Handed<B>) => void;
}

interface Handed<B> {
  readonly after: Prefetched | undefined;
  readonly baton?: { readonly value: B };
}

/** @internal The keys a run holds in the queue; `B`, what may be passed on with all of them. */
export interface HeldKeys<B = never> {
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
  /** What the run that passed these keys on gave with them ({@link passOn}), if it did. */
  readonly baton: B | undefined;
  /** How many runs next in line for the first of these keys ask for exactly these keys. */
  alike(): number;
  /**
   * Hands every key at once, with `baton`, to the first run waiting for the first of them, when it
   * asks for exactly these keys; false (and nothing handed) otherwise. Ends this hold like release.
   */
  passOn(baton: B, after?: Prefetched): boolean;
  /**
   * Hands each key to its next waiter, or frees it; `after`, the store at the revision of this
   * run's commit, goes with them. Idempotent.
   */
  release(after?: Prefetched): void;
}

/** @internal The per-key locks of one KV. */
export class StmQueue<B = never> {
  readonly #locks = new Map<string, KeyLock<B>>();
  // Each key as the last commit handed on with it left it, most recently used last.
  readonly #left = new Map<string, ReadEntry>();

  /**
   * `key` as the last commit of a run of this queue left it, while a run holds it: a run's first
   * attempt finds its keys with it without reading them (a probe: never committed), and, finding
   * them held, queues at once; its turn then starts from what the run ahead left.
   */
  heldValue(key: Uint8Array): ReadEntry | undefined {
    const id = keyId(key);
    return this.#locks.has(id) ? this.#left.get(id) : undefined;
  }

  /** Whether a run holds one of `keys`. */
  holdsAny(keys: readonly Uint8Array[]): boolean {
    return keys.some((key) => this.#locks.has(keyId(key)));
  }

  /**
   * Holds every one of `keys` at once when no run holds any of them, else undefined (nothing
   * taken): a run holds its keys while its commit is in flight, so local runs on them wait for its
   * outcome instead of sending commits it would make fail.
   */
  tryTake(keys: readonly Uint8Array[]): HeldKeys<B> | undefined {
    const ids = [...new Set(keys.map(keyId))].sort();
    if (ids.some((id) => this.#locks.has(id))) return undefined;
    for (const id of ids) this.#locks.set(id, { waiters: [] });
    return this.#held(ids, false, undefined, undefined);
  }

  /**
   * Waits until this run holds every one of `keys` (and of `also`). Keys are taken one by one in
   * sorted order, so two runs never wait for each other. An abort gives back what was taken.
   */
  async take(
    keys: readonly Uint8Array[],
    also: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<HeldKeys<B>> {
    const ids = [...new Set([...keys.map(keyId), ...also])].sort();
    const taken: string[] = [];
    let waited = false;
    let latest: Prefetched | undefined;
    let baton: { readonly value: B } | undefined;
    try {
      for (const id of ids) {
        const lock = this.#locks.get(id);
        if (lock === undefined) this.#locks.set(id, { waiters: [] });
        else {
          waited = true;
          const handed = await this.#wait(lock, ids, signal);
          const { after } = handed;
          if (after && (latest === undefined || after.revision > latest.revision)) latest = after;
          // Passed on with every key: the run that held them all handed them over at once.
          if (handed.baton) {
            baton = handed.baton;
            break;
          }
        }
        taken.push(id);
      }
    } catch (error) {
      this.#release(taken);
      throw error;
    }
    return this.#held(ids, waited, latest, baton);
  }

  #held(
    ids: readonly string[],
    waited: boolean,
    latest: Prefetched | undefined,
    baton: { readonly value: B } | undefined,
  ): HeldKeys<B> {
    let released = false;
    const first = this.#locks.get(ids[0] as string);
    return {
      ids,
      waited,
      baton: baton?.value,
      covers: (more) => more.every((key) => ids.includes(keyId(key))),
      handed: (wanted) => handedOf(latest, wanted),
      alike: () => {
        const waiters = first?.waiters ?? [];
        const other = waiters.findIndex((waiter) => !sameIds(waiter.ids, ids));
        return other < 0 ? waiters.length : other;
      },
      passOn: (value, after) => {
        const next = first?.waiters[0];
        if (released || next === undefined || !sameIds(next.ids, ids)) return false;
        released = true;
        first?.waiters.shift();
        this.#remember(after);
        next.hand({ after, baton: { value } });
        return true;
      },
      release: (after) => {
        if (released) return;
        released = true;
        this.#release(ids, after);
      },
    };
  }

  #wait(
    lock: KeyLock<B>,
    ids: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<Handed<B>> {
    if (signal?.aborted) return Promise.reject(new AbortedError({ cause: signal.reason }));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const at = lock.waiters.indexOf(waiter);
        if (at >= 0) lock.waiters.splice(at, 1);
        reject(new AbortedError({ cause: signal?.reason }));
      };
      const waiter: Waiter<B> = {
        ids,
        hand: (handed) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(handed);
        },
      };
      lock.waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #remember(after: Prefetched | undefined): void {
    if (after === undefined) return;
    for (const [id, entry] of after.entries) {
      this.#left.delete(id);
      this.#left.set(id, entry);
    }
    while (this.#left.size > MAX_KEYS_LEFT) {
      this.#left.delete(this.#left.keys().next().value as string);
    }
  }

  #release(ids: readonly string[], after?: Prefetched): void {
    this.#remember(after);
    for (const id of ids) {
      const next = this.#locks.get(id)?.waiters.shift();
      if (next) next.hand({ after });
      else this.#locks.delete(id);
    }
  }
}

// Keys remembered per queue: enough for the hot keys of a process, bounded all the same.
const MAX_KEYS_LEFT = 256;

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
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
