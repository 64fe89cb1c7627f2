// A priority queue with the key layout of Go's `recipe.PriorityQueue` (`prefix/<priority>/<seq>`,
// lexically first is most urgent), so Go and TypeScript processes can share one queue.
import { type Bytes, cmp, InvalidArgumentError, type KV, op } from '@etcdkit/client';
import { RecipeError, throwIfAborted } from '../errors.js';
import { recipeName } from '../recipe-name.js';
import {
  claimFirst,
  type Dequeued,
  type DequeueOptions,
  type Enqueued,
  type EnqueueOptions,
} from './claim.js';

/** The highest priority number (the least urgent): priorities are Go's uint16. */
export const MAX_QUEUE_PRIORITY = 65535;

/**
 * A multi-producer, multi-consumer priority queue under a key prefix. Lower priority numbers are
 * served first; items of one priority are served in the order they were enqueued.
 *
 * Each priority keeps a sequence: an enqueue reads the last item of its priority and writes the
 * next number, guarded by a bookkeeping key `"__" + prefix + "/" + <priority>` whose mod revision
 * proves no other enqueue of that priority came in between (so a number is never reused or
 * allocated out of order). Consumers claim the first key with a delete guarded by its mod
 * revision: every item is delivered exactly once. `dequeue()` on an empty queue waits for the
 * next item.
 *
 * @example
 * ```ts
 * const tasks = new PriorityQueue(etcd, 'tasks');
 * await tasks.enqueue('rebuild index', 10);
 * await tasks.enqueue('page the on-call', 0); // served first
 * const { kv } = await tasks.dequeue();
 * ```
 */
export class PriorityQueue {
  constructor(
    /** The client (or a namespace of it) the queue lives in. */
    readonly kv: KV,
    /** The queue's name: items are the keys `prefix + "/" + <priority> + "/" + <sequence>`. */
    readonly prefix: string,
  ) {
    recipeName('PriorityQueue', 'prefix', prefix);
  }

  /**
   * Adds `value` with `priority` (an integer from 0, served first, to {@link MAX_QUEUE_PRIORITY})
   * after every item of the same priority. Under contention from other producers of the same
   * priority the allocation is retried.
   */
  async enqueue(value: Bytes, priority: number, options: EnqueueOptions = {}): Promise<Enqueued> {
    if (!Number.isInteger(priority) || priority < 0 || priority > MAX_QUEUE_PRIORITY) {
      throw new InvalidArgumentError(
        `priority must be an integer from 0 to ${MAX_QUEUE_PRIORITY}, got ${String(priority)}`,
      );
    }
    const level = `${this.prefix}/${String(priority).padStart(5, '0')}`;
    const bookkeeping = `__${level}`;
    for (;;) {
      throwIfAborted(options.signal);
      const last = await this.kv.range({
        prefix: `${level}/`,
        sort: { target: 'key', order: 'descend' },
        limit: 1,
        keysOnly: true,
        signal: options.signal,
      });
      const lastKey = last.kvs[0]?.keyText();
      const sequence = lastKey === undefined ? 0n : sequenceOf(lastKey) + 1n;
      const key = `${level}/${sequence.toString().padStart(16, '0')}`;
      throwIfAborted(options.signal);
      // Every allocation rewrites the bookkeeping key: an unchanged mod revision means nobody
      // allocated (and dequeued) a later number meanwhile, which would put ours behind it.
      const result = await this.kv
        .txn()
        .if(cmp.modRevision(bookkeeping, '<', last.header.revision + 1n), cmp.missing(key))
        .then(op.put(bookkeeping, ''), op.put(key, value))
        .commit();
      if (result.succeeded) return { key, header: result.header };
    }
  }

  /**
   * Takes the first item out of the queue (the lowest priority number, then the oldest), waiting
   * for one if it is empty.
   */
  dequeue(options: DequeueOptions = {}): Promise<Dequeued> {
    return claimFirst(this.kv, `${this.prefix}/`, { target: 'key' }, options.signal);
  }
}

function sequenceOf(key: string): bigint {
  const digits = key.slice(key.lastIndexOf('/') + 1);
  if (!/^\d+$/.test(digits)) {
    throw new RecipeError(
      'UNEXPECTED_QUEUE_KEY',
      `${key} is not a priority queue item (expected <prefix>/<priority>/<sequence digits>)`,
    );
  }
  return BigInt(digits);
}
