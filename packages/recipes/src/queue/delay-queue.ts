// A queue whose items become visible at a given time: the key starts with the visibility time, so
// key order is visibility order, and a consumer takes the first item only once it is due.
import { type Bytes, InvalidArgumentError, type KeyValue, type KV } from '@etcdkit/client';
import { recipeName } from '../recipe-name.js';
import {
  claimFirst,
  type Dequeued,
  type DequeueOptions,
  type Enqueued,
  putUnderNewKey,
} from './claim.js';

/** Options of {@link DelayQueue.enqueue}. */
export interface DelayEnqueueOptions {
  /**
   * When the item becomes visible: a Date or Unix milliseconds. Default now. Give `delayMs`
   * instead for a time relative to now.
   */
  readonly visibleAt?: Date | number;
  /** Milliseconds from now until the item becomes visible (instead of `visibleAt`). */
  readonly delayMs?: number;
  /** Checked before each write; a write once sent is waited for. */
  readonly signal?: AbortSignal;
}

// Milliseconds since the epoch as 15 digits: key order is time order until the year 33658.
const TIME_DIGITS = 15;
let lastSequence = 0;

/**
 * A delay queue: items are taken exactly once, like the {@link Queue}'s, but each only from its
 * visibility time on, in the order of those times (FIFO for equal times). Curator's
 * `DistributedDelayQueue` on etcd; Go's etcd client has none. Items are the keys
 * `prefix/<visible-at in Unix ms, 15 digits>/<unique sequence>` (no lease).
 *
 * Visibility is judged by each consumer's clock against the producer's: skew between machines
 * moves an item's delivery by as much. An item is never taken before its time by the consumer's
 * clock. A waiting `dequeue()` wakes at the first item's time, or when an earlier one is put, in
 * one watch of the prefix.
 *
 * @example
 * ```ts
 * const reminders = new DelayQueue(etcd, 'reminders');
 * await reminders.enqueue('call back', { delayMs: 60_000 });
 * const { kv } = await reminders.dequeue({ signal });
 * ```
 */
export class DelayQueue {
  constructor(
    /** The client (or a namespace of it) the queue lives in. */
    readonly kv: KV,
    /** The queue's name: items are the keys under `prefix + "/"`. */
    readonly prefix: string,
  ) {
    recipeName('DelayQueue', 'prefix', prefix);
  }

  /** Adds `value`, visible from `visibleAt` (or `delayMs` from now; default now). */
  async enqueue(value: Bytes, options: DelayEnqueueOptions = {}): Promise<Enqueued> {
    const at = String(visibleAtOf(options)).padStart(TIME_DIGITS, '0');
    const name = () => `${this.prefix}/${at}/${Date.now()}-${++lastSequence}`;
    return putUnderNewKey(this.kv, name, value, options.signal);
  }

  /**
   * Takes the first due item out of the queue (earliest visibility time), waiting until one is
   * due. Resolves with the item as it was stored, deleted now, and the header of the delete.
   */
  dequeue(options: DequeueOptions = {}): Promise<Dequeued> {
    const prefix = `${this.prefix}/`;
    return claimFirst(
      this.kv,
      prefix,
      { target: 'key', order: 'ascend' },
      options.signal,
      (kv) => visibleAtKey(kv, prefix) - Date.now(),
    );
  }

  /** When the item `kv` (a dequeued one, say) was visible from, in Unix milliseconds. */
  visibleAt(kv: KeyValue): number {
    return visibleAtKey(kv, `${this.prefix}/`);
  }
}

function visibleAtOf(options: DelayEnqueueOptions): number {
  const { visibleAt, delayMs } = options;
  if (visibleAt !== undefined && delayMs !== undefined) {
    throw new InvalidArgumentError('DelayQueue: give visibleAt or delayMs, not both');
  }
  const at =
    delayMs !== undefined
      ? Date.now() + delayMs
      : visibleAt instanceof Date
        ? visibleAt.getTime()
        : (visibleAt ?? Date.now());
  if (!Number.isSafeInteger(Math.floor(at)) || at < 0) {
    throw new InvalidArgumentError('DelayQueue: the visibility time must be a time after 1970');
  }
  return Math.floor(at);
}

/** The visibility time in an item's key; a key of another layout counts as due now. */
function visibleAtKey(kv: KeyValue, prefix: string): number {
  const time = Number(kv.keyText().slice(prefix.length, prefix.length + TIME_DIGITS));
  return Number.isFinite(time) ? time : 0;
}
