// A double barrier (enter() and leave() wait for all `count` processes) with the key layout of Go's
// `recipe.DoubleBarrier`, and cancellable waits that leave no key behind.
import {
  AbortedError,
  CompactedError,
  cmp,
  InvalidArgumentError,
  type KeyValue,
  op,
} from '@etcdkit/client';
import { linkSignals } from '@etcdkit/client/internal';
import { RecipeError, throwIfAborted } from '../errors.js';
import { createUniqueKey, deleteIfCreatedAt, type LineEntry, sessionEnded } from '../line/place.js';
import { recipeName } from '../recipe-name.js';
import type { Session } from '../session/session.js';
import { type WaitOptions, waitForChange, waitForDelete } from '../wait.js';

/**
 * More processes tried to enter a {@link DoubleBarrier} than its count. This one did not enter and
 * left no key. Go's `ErrTooManyClients`.
 */
export class TooManyClientsError extends RecipeError<'TOO_MANY_CLIENTS'> {
  /** The barrier's count. */
  readonly count: number;

  /** `barrier` is the barrier's key; `count` how many processes it admits. */
  constructor(barrier: string, count: number) {
    super('TOO_MANY_CLIENTS', `double barrier ${barrier} already has its ${count} processes`);
    this.count = count;
  }
}

/**
 * A barrier for a fixed number of processes, entered and left together.
 *
 * {@link enter} creates a waiter key `key/waiters/<unique>` attached to the session's lease; the
 * process whose key is the `count`-th by create revision puts `key/ready`, which releases every
 * waiter. One more process is refused with {@link TooManyClientsError}. {@link leave} deletes the
 * waiter keys in an order that makes everyone wait for the last: the process with the oldest key
 * waits for the newest to go, the others delete theirs and wait for the oldest; the last one out
 * deletes `key/ready`. A process that dies lets its lease expire, which removes its key, so the
 * others are not blocked forever.
 *
 * @example
 * ```ts
 * const phase = new DoubleBarrier(session, 'barriers/phase-1', 3);
 * await phase.enter({ signal });  // all 3 are here
 * await work();
 * await phase.leave({ signal });  // all 3 are done
 * ```
 */
export class DoubleBarrier {
  #mine: LineEntry | undefined;

  constructor(
    /** The session whose lease the waiter keys are attached to. */
    readonly session: Session,
    /** The barrier's key: the waiters live under `key/waiters/`, the ready flag at `key/ready`. */
    readonly key: string,
    /** How many processes the barrier is for. */
    readonly count: number,
  ) {
    recipeName('DoubleBarrier', 'key', key);
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new InvalidArgumentError(`count must be a positive integer, got ${String(count)}`);
    }
  }

  /** This process's waiter key while it is inside the barrier (entered and not yet left). */
  get waiterKey(): string | undefined {
    return this.#mine?.key;
  }

  /**
   * Enters the barrier and resolves once `count` processes have entered. Rejects with
   * {@link TooManyClientsError} when the barrier is full, AbortedError when `signal` aborts,
   * SessionExpiredError when the session ends while waiting; in every such case this process's
   * waiter key is deleted.
   */
  async enter(options: WaitOptions = {}): Promise<void> {
    if (this.#mine) throw new InvalidArgumentError(`${this.key}: already entered; leave() first`);
    const { signal } = options;
    this.#throwIfStopped(signal);
    const kv = this.session.etcd;
    const waiters = `${this.key}/waiters/`;
    // Checked before creating a key too, so a full barrier is not disturbed by a key that would
    // only be deleted again.
    const before = await kv.range({ prefix: waiters, countOnly: true, signal });
    if (before.count >= BigInt(this.count)) throw new TooManyClientsError(this.key, this.count);
    // Not cancellable once sent: an aborted create could still apply and leave a key behind.
    const mine = await createUniqueKey(this.session, waiters);
    try {
      this.#throwIfStopped(signal);
      const entered = await kv.range({
        prefix: waiters,
        sort: { target: 'create', order: 'ascend' },
        keysOnly: true,
        signal,
      });
      const last = entered.kvs[this.count - 1];
      if (last !== undefined && mine.createRevision > last.createRevision) {
        throw new TooManyClientsError(this.key, this.count);
      }
      if (last !== undefined && mine.createRevision === last.createRevision) {
        await kv.put(`${this.key}/ready`, '');
      } else {
        await this.#waitForReady(mine.createRevision, signal);
      }
      this.#mine = mine;
    } catch (error) {
      await this.#deleteWaiterKey(mine);
      throw this.#stopReason(error, signal);
    }
  }

  /**
   * Leaves the barrier and resolves once every process that entered has left. Rejects with
   * AbortedError when `signal` aborts and SessionExpiredError when the session ends; this
   * process's waiter key is deleted then too, so the others are not held up by it.
   */
  async leave(options: WaitOptions = {}): Promise<void> {
    const mine = this.#mine;
    if (!mine) throw new InvalidArgumentError(`${this.key}: leave() needs a completed enter()`);
    const { signal } = options;
    const kv = this.session.etcd;
    const waiters = `${this.key}/waiters/`;
    let deleted = false;
    try {
      for (;;) {
        this.#throwIfStopped(signal);
        const read = await kv.range({ prefix: waiters, keysOnly: true, signal });
        if (read.kvs.length === 0) return;
        const [lowest, highest] = extremes(read.kvs);
        const isLowest = lowest.keyText() === mine.key;
        if (isLowest && read.kvs.length === 1) {
          // The last one out. Only if the waiters are still just us (a next round may have begun
          // since the read) does the ready flag go, with our key, in one revision.
          const out = await kv
            .txn()
            .if(cmp.createRevision({ prefix: waiters }, '==', mine.createRevision))
            .then(op.delete(`${this.key}/ready`), op.delete(mine.key))
            .commit();
          if (out.succeeded) return;
          continue;
        }
        if (isLowest) {
          await this.#untilStopped(signal, (stop) =>
            waitForDelete(kv, highest.key, read.header.revision, {
              signal: stop,
              createRevision: highest.createRevision,
            }),
          );
          continue;
        }
        if (!deleted) {
          await this.#deleteWaiterKey(mine);
          deleted = true;
        }
        await this.#untilStopped(signal, (stop) =>
          waitForDelete(kv, lowest.key, read.header.revision, {
            signal: stop,
            createRevision: lowest.createRevision,
          }),
        );
      }
    } catch (error) {
      if (!deleted) await this.#leaveEarly(mine);
      throw this.#stopReason(error, signal);
    } finally {
      this.#mine = undefined;
    }
  }

  /** Deletes our waiter key if it is still the one we created. Never throws. */
  async #deleteWaiterKey(mine: LineEntry): Promise<void> {
    await deleteIfCreatedAt(this.session, mine.key, mine.createRevision).catch(() => {
      // The key is attached to the session's lease: it goes when the lease does.
      return false;
    });
  }

  /**
   * Leaves without waiting (after an abort): deletes our key, and, if no waiter is left after
   * that, the ready flag, as the last one out would have.
   */
  async #leaveEarly(mine: LineEntry): Promise<void> {
    await this.#deleteWaiterKey(mine);
    await this.session.etcd
      .txn()
      .if(cmp.missing({ prefix: `${this.key}/waiters/` }))
      .then(op.delete(`${this.key}/ready`))
      .commit()
      .catch(() => {
        // A stale ready flag only matters to a next round, which a later leave cleans up.
      });
  }

  /** Resolves once `key/ready` is put after `from` (the revision our waiter key was created at). */
  async #waitForReady(from: bigint, signal: AbortSignal | undefined): Promise<void> {
    const kv = this.session.etcd;
    const ready = `${this.key}/ready`;
    // Not at `from` itself: etcd serves a watch that starts at or below its current revision
    // from its 100 ms catch-up loop, and only our own key was written at `from`.
    let start = from + 1n;
    for (;;) {
      try {
        await this.#untilStopped(signal, (stop) =>
          waitForChange(
            kv,
            { keys: { key: ready }, type: 'put', from: start },
            (batch) => batch.events.length > 0 || undefined,
            {
              signal: stop,
              // Put since our key was created: a flag left from an earlier round does not count.
              recheck: async (again) => {
                const read = await kv.range({ key: ready, keysOnly: true, signal: again });
                const flag = read.kvs[0];
                const found = flag !== undefined && flag.modRevision >= start ? true : undefined;
                return { found, revision: read.header.revision };
              },
            },
          ),
        );
        return;
      } catch (error) {
        if (!(error instanceof CompactedError)) throw error;
        // The history since our entry is gone: the flag itself tells whether it was put.
        const read = await kv.range({ key: ready, keysOnly: true, signal });
        if (read.kvs.length > 0) return;
        start = read.header.revision + 1n;
      }
    }
  }

  /**
   * Runs `wait` with a signal that aborts when the caller's or the session's does, and lets go of
   * both when it settles: the session outlives many waits, so nothing may stay on its signal.
   */
  async #untilStopped<T>(
    signal: AbortSignal | undefined,
    wait: (stop: AbortSignal) => Promise<T>,
  ): Promise<T> {
    if (!signal) return wait(this.session.signal);
    const linked = linkSignals(signal, this.session.signal);
    try {
      return await wait(linked.signal);
    } finally {
      linked.release();
    }
  }

  #throwIfStopped(signal: AbortSignal | undefined): void {
    throwIfAborted(signal);
    if (this.session.isDone) throw sessionEnded(this.session);
  }

  /** The error to report: the session's end is a SessionExpiredError, not the caller's abort. */
  #stopReason(error: unknown, signal: AbortSignal | undefined): unknown {
    if (error instanceof AbortedError && !signal?.aborted && this.session.isDone) {
      return sessionEnded(this.session, error);
    }
    return error;
  }
}

/** The waiter keys with the lowest and the highest create revision. */
function extremes(kvs: readonly KeyValue[]): [KeyValue, KeyValue] {
  let lowest = kvs[0]!;
  let highest = kvs[0]!;
  for (const kv of kvs) {
    if (kv.createRevision < lowest.createRevision) lowest = kv;
    if (kv.createRevision > highest.createRevision) highest = kv;
  }
  return [lowest, highest];
}
