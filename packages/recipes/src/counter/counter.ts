// A shared counter: a decimal integer in one key, changed only by txns that compare the revision
// they read, so concurrent adds never lose an update (Curator's DistributedAtomicLong, optimistic).
import {
  type Compare,
  cmp,
  InvalidArgumentError,
  type KeyValue,
  type KV,
  op,
  type ResponseHeader,
} from '@etcdkit/client';
import { RecipeError, throwIfAborted } from '../errors.js';
import { recipeName } from '../recipe-name.js';
import type { WaitOptions } from '../wait.js';

/** The counter as one read or write left it. */
export interface CounterValue {
  /** The counter's value (0n while its key does not exist). */
  readonly value: bigint;
  /** The key's mod revision: the revision that wrote {@link value} (0n while it does not exist). */
  readonly revision: bigint;
  /** Header of the response that read or wrote it. */
  readonly header: ResponseHeader;
}

/** What {@link SharedCounter.add} did: the value before and after, at the revision of the write. */
export interface CounterChange extends CounterValue {
  /** The value the add started from. */
  readonly previous: bigint;
}

/** What {@link SharedCounter.compareAndSet} found: whether it wrote, and the counter after it. */
export interface CounterSwap extends CounterValue {
  /** True when the counter held the expected value and now holds the new one. */
  readonly succeeded: boolean;
}

/** The counter's key holds something that is not a decimal integer: nothing was written. */
export class CounterValueError extends RecipeError<'COUNTER_VALUE'> {
  /** The counter's key. */
  readonly key: string;

  /** `text` is what `key` holds. */
  constructor(key: string, text: string) {
    super('COUNTER_VALUE', `${key} holds ${JSON.stringify(text)}, not a decimal integer`);
    this.key = key;
  }
}

const DECIMAL = /^-?(0|[1-9][0-9]*)$/;

/**
 * An integer counter shared by every process, kept as decimal text in one key (no lease), with
 * the semantics of Curator's `DistributedAtomicLong` in optimistic mode: {@link add} reads the
 * value and writes the sum in a txn guarded by the mod revision it read; on a conflict the txn's
 * else branch returns the fresh value and the add tries again with it. No update is lost, and
 * every successful write reports the exact value it produced and its revision. Unlike Curator's
 * (which gives up after its retry policy and reports `succeeded() == false`), an add retries until
 * it commits or its signal aborts. Go's etcd client has no counter.
 *
 * Values are bigints (any size). A write whose outcome is unknown (OutcomeUnknownError) is not
 * retried by the counter, since a retry could add twice: read the counter and decide.
 *
 * @example
 * ```ts
 * const orders = new SharedCounter(etcd, 'counters/orders');
 * const { value, revision } = await orders.add(1n);
 * ```
 */
export class SharedCounter {
  readonly key: string;

  constructor(
    /** The client (or namespaced KV) the counter is read and written through. */
    readonly kv: KV,
    /** The counter's key. */
    key: string,
  ) {
    this.key = recipeName('SharedCounter', 'key', key);
  }

  /** Reads the counter: 0n (at revision 0n) while its key does not exist. */
  async get(options: WaitOptions = {}): Promise<CounterValue> {
    const read = await this.kv.range({ key: this.key, signal: options.signal });
    return this.#valueOf(read.kvs[0], read.header);
  }

  /**
   * Adds `delta` (negative subtracts) and resolves with the value it wrote, the value it added to,
   * and the revision of the write. Two round trips uncontended (a read, the txn); one more per
   * lost race. Rejects with AbortedError when `signal` aborts before a txn is sent.
   */
  async add(delta: bigint, options: WaitOptions = {}): Promise<CounterChange> {
    integerArg(delta, 'delta');
    let seen = await this.get(options);
    for (;;) {
      throwIfAborted(options.signal);
      const next = seen.value + delta;
      const result = await this.kv
        .txn()
        .if(cmp.modRevision(this.key, '==', seen.revision))
        .then(op.put(this.key, next.toString()))
        .else(op.get(this.key))
        .commit({ signal: options.signal });
      if (result.succeeded) {
        const { header } = result;
        return { value: next, previous: seen.value, revision: header.revision, header };
      }
      seen = this.#valueOf(result.responses[0].kvs[0], result.header);
    }
  }

  /**
   * Sets the counter to `next` only if it holds `expected` (a missing key holds 0n), in one txn
   * (two when `expected` is 0n and the key is missing). Resolves with whether it wrote and the
   * counter's value and revision after the call: the new ones, or the ones that made it fail.
   */
  async compareAndSet(
    expected: bigint,
    next: bigint,
    options: WaitOptions = {},
  ): Promise<CounterSwap> {
    integerArg(expected, 'expected');
    integerArg(next, 'next');
    const swap = await this.#swapIf(cmp.value(this.key, '==', expected.toString()), next, options);
    if (swap.succeeded || expected !== 0n || swap.revision !== 0n) return swap;
    // 0n is also what a missing key holds: create it, unless someone did meanwhile.
    return this.#swapIf(cmp.missing(this.key), next, options);
  }

  async #swapIf(condition: Compare, next: bigint, options: WaitOptions): Promise<CounterSwap> {
    const result = await this.kv
      .txn()
      .if(condition)
      .then(op.put(this.key, next.toString()))
      .else(op.get(this.key))
      .commit({ signal: options.signal });
    if (result.succeeded) {
      const { header } = result;
      return { succeeded: true, value: next, revision: header.revision, header };
    }
    const current = this.#valueOf(result.responses[0].kvs[0], result.header);
    return { succeeded: false, ...current };
  }

  #valueOf(kv: KeyValue | undefined, header: ResponseHeader): CounterValue {
    if (kv === undefined) return { value: 0n, revision: 0n, header };
    const text = kv.text();
    if (!DECIMAL.test(text)) throw new CounterValueError(this.key, text);
    return { value: BigInt(text), revision: kv.modRevision, header };
  }
}

function integerArg(value: unknown, name: string): void {
  if (typeof value !== 'bigint') {
    throw new InvalidArgumentError(`SharedCounter: ${name} must be a bigint`);
  }
}
