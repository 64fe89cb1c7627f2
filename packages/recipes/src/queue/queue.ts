// A FIFO queue with the key layout of Go's `recipe.Queue` (`prefix/<unix nanoseconds>`, no lease),
// so Go and TypeScript processes can share one queue.
import type { Bytes, KV } from '@etcdkit/client';
import { recipeName } from '../recipe-name.js';
import {
  claimFirst,
  type Dequeued,
  type DequeueOptions,
  type Enqueued,
  type EnqueueOptions,
  putUnderNewKey,
} from './claim.js';

/**
 * A multi-producer, multi-consumer FIFO queue under a key prefix.
 *
 * Every item is delivered to exactly one consumer: consumers claim the oldest item (lowest mod
 * revision) with a delete guarded by the revision they read, so concurrent claims of one item let
 * exactly one win and the others move on. Items are served in revision order, which is enqueue
 * order for the enqueues of one producer. `dequeue()` on an empty queue waits for the next item.
 *
 * Items have no lease: they stay until dequeued. Under a lost connection an enqueue or a claim
 * can fail with the client's OutcomeUnknownError: the item may then have been enqueued (or taken)
 * without this process knowing.
 *
 * @example
 * ```ts
 * const jobs = new Queue(etcd, 'jobs');
 * await jobs.enqueue(JSON.stringify({ id: 42 }));
 * const { kv } = await jobs.dequeue({ signal });
 * handle(kv.json());
 * ```
 */
export class Queue {
  constructor(
    /** The client (or a namespace of it) the queue lives in. */
    readonly kv: KV,
    /** The queue's name: items are the keys `prefix + "/" + <unique number>`. */
    readonly prefix: string,
  ) {
    recipeName('Queue', 'prefix', prefix);
  }

  /**
   * Adds `value` at the end of the queue, under a new key `prefix/<unix nanoseconds>` (a unique,
   * increasing number; if another producer took the name, another is tried).
   */
  enqueue(value: Bytes, options: EnqueueOptions = {}): Promise<Enqueued> {
    const name = () => `${this.prefix}/${uniqueNanoseconds()}`;
    return putUnderNewKey(this.kv, name, value, options.signal);
  }

  /**
   * Takes the oldest item out of the queue, waiting for one if it is empty. Resolves with the item
   * as it was stored, deleted now, and the header of the delete.
   */
  dequeue(options: DequeueOptions = {}): Promise<Dequeued> {
    return claimFirst(
      this.kv,
      `${this.prefix}/`,
      { target: 'mod', order: 'ascend' },
      options.signal,
    );
  }
}

// Go's queue names items after the creation time in nanoseconds; so do we, so both read as one
// layout (the name only has to be unique: items are served in revision order).
let last = 0n;

/**
 * The current time in nanoseconds since the epoch, as decimal digits (Go's
 * `time.Now().UnixNano()`), made strictly increasing within this process so two calls never
 * return the same name. Other processes can still pick the same one: create such keys only if
 * absent.
 */
function uniqueNanoseconds(): string {
  const micros = BigInt(Math.floor(performance.timeOrigin * 1000));
  const now = micros * 1000n + BigInt(Math.floor(performance.now() * 1e6));
  last = now > last ? now : last + 1n;
  return last.toString();
}
