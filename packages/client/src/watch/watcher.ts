// One user watch: an async iterable and event emitter that, after any failure, is created again
// from the revision after the last one it delivered, so every change is seen exactly once.
import { EventEmitter } from 'eventemitter3';
import { callHook } from '../connection/hooks.js';
import { AbortedError, type EtcdError, InvalidArgumentError } from '../errors.js';
import type { ResponseHeader } from '../header.js';
import { jsonReady } from '../json.js';
import { BatchQueue } from './batch-queue.js';
import type { WatchSubscriber } from './session.js';
import type { WatchSpec } from './spec.js';
import type { WatchBatch, WatcherEvents, WatchHooks } from './types.js';

/** What a watcher needs from the stream that carries it (the client's watch hub). */
export interface WatcherHost {
  readonly hooks: WatchHooks;
  /** The watcher wants a server-side watch (again), from its next revision. */
  request(watcher: Watcher): void;
  /** The watcher's buffer is full: stop receiving for it until it asks again. */
  pause(watcher: Watcher): void;
  /** The watcher ended. */
  detach(watcher: Watcher): void;
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };
const closedBeforeReady = () => new AbortedError({ message: 'the watcher was closed' });

interface Waiter {
  resolve(result: IteratorResult<WatchBatch>): void;
  reject(error: unknown): void;
}

/**
 * A watch on a key or a range, from `etcd.watch(...)`. Consume it either way:
 *
 * - iterate it (`for await (const batch of watcher)`): one {@link WatchBatch} per revision, in
 *   revision order. Leaving the loop (break, return, throw) closes the watcher. A failure ends the
 *   loop by throwing the typed error, after the batches received before it.
 * - listen to it: 'put', 'delete', 'batch', 'progress', 'disconnected', 'resumed', 'error', 'end'
 *   (see {@link WatcherEvents}).
 *
 * Batches are held for iteration from the start, unless the watcher has 'put', 'delete' or 'batch'
 * listeners and no iterator when a batch arrives: a watcher consumed only through events holds
 * nothing. At most `maxBufferedEvents` events are held (see {@link WatchOptions.maxBufferedEvents}).
 *
 * Connection loss, server restarts, a stalled stream and expired auth tokens do not end a watcher:
 * it resumes after the last revision it delivered ('disconnected', then 'resumed'). It ends only
 * when closed, when its signal aborts, or with an error: WatchCompactedError when the revision it
 * needs was compacted, PermissionDeniedError, ClientClosedError...
 */
export class Watcher
  extends EventEmitter<WatcherEvents>
  implements AsyncIterable<WatchBatch>, AsyncDisposable, WatchSubscriber
{
  /** @internal */
  readonly spec: WatchSpec;
  /** @internal Set when the hub refreshed the auth token since this watcher was last created. */
  authRetried = false;
  readonly #host: WatcherHost;
  // Allocated on first use: an idle watcher should cost little (see bench/watch-memory.ts).
  #queue: BatchQueue | undefined;
  #waiters: Waiter[] | undefined;
  #readyWaiter: { resolve(revision: bigint): void; reject(error: EtcdError): void } | undefined;
  #readyPromise: Promise<bigint> | undefined;
  #createdRevision: bigint | undefined;
  #readyFailure: EtcdError | undefined;
  #lastDelivered: bigint | undefined;
  #iterating = false;
  #paused = false;
  #disconnected = false;
  #ended = false;
  #error: EtcdError | undefined;
  #errorThrown = false;
  #onAbort: (() => void) | undefined;

  /** @internal Watchers are made by `etcd.watch()`. */
  constructor(spec: WatchSpec, host: WatcherHost) {
    super();
    this.spec = spec;
    this.#host = host;
    if (spec.startRevision > 0n) this.#lastDelivered = spec.startRevision - 1n;
    const signal = spec.signal;
    if (signal?.aborted) {
      this.#end(undefined, () => new AbortedError({ cause: signal.reason }));
    } else if (signal) {
      this.#onAbort = () => this.#end(undefined, () => new AbortedError({ cause: signal.reason }));
      signal.addEventListener('abort', this.#onAbort, { once: true });
    }
  }

  /**
   * The last revision the watcher delivered or was told about by a progress notification: it has
   * seen every change up to here. 0n before it is created (unless it was given a start revision).
   */
  get revision(): bigint {
    return this.#lastDelivered ?? 0n;
  }

  /** True once the watcher ended (closed, aborted or failed). */
  get closed(): boolean {
    return this.#ended;
  }

  /** Events held for the iterator right now. */
  get bufferedEvents(): number {
    return this.#queue?.events ?? 0;
  }

  /** @internal Whether the watcher needs a server-side watch now. */
  get wantsStream(): boolean {
    return !this.#ended && !this.#paused;
  }

  /**
   * Resolves with the store revision at which the server created the watch (its first creation;
   * without a start revision, changes after it are delivered). Rejects with the watcher's error,
   * or with AbortedError when it is closed or aborted before that.
   */
  ready(): Promise<bigint> {
    if (this.#createdRevision !== undefined) return Promise.resolve(this.#createdRevision);
    if (this.#readyFailure) return Promise.reject(this.#readyFailure);
    this.#readyPromise ??= new Promise<bigint>((resolve, reject) => {
      this.#readyWaiter = { resolve, reject };
    });
    return this.#readyPromise;
  }

  /**
   * Stops watching: the server-side watch is cancelled, an iteration in progress ends (done), held
   * batches are dropped, 'end' is emitted and every listener removed. Idempotent.
   */
  close(): Promise<void> {
    this.#end(undefined, closedBeforeReady);
    return Promise.resolve();
  }

  /** Closes the watcher, for `await using watcher = etcd.watch(...)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /**
   * The batches, one per revision, in order. A watcher has one iterator: asking for a second one
   * throws InvalidArgumentError.
   */
  [Symbol.asyncIterator](): AsyncIterator<WatchBatch> {
    if (this.#iterating) {
      throw new InvalidArgumentError('a watcher can be iterated only once; watch again instead');
    }
    this.#iterating = true;
    return {
      next: () => this.#next(),
      return: async () => {
        await this.close();
        return DONE;
      },
    };
  }

  /** @internal */
  startRevision(): bigint {
    return this.#lastDelivered === undefined ? 0n : this.#lastDelivered + 1n;
  }

  /** @internal */
  created(startRevision: bigint, createdRevision: bigint): void {
    if (this.#ended) return;
    this.authRetried = false;
    if (this.#lastDelivered === undefined) this.#lastDelivered = createdRevision;
    const first = this.#createdRevision === undefined;
    if (first) {
      this.#createdRevision = createdRevision;
      this.#readyWaiter?.resolve(createdRevision);
      this.#readyWaiter = undefined;
      this.#readyPromise = undefined;
    }
    const wasDisconnected = this.#disconnected;
    this.#disconnected = false;
    if (wasDisconnected && !first) {
      const resumed = jsonReady({ startRevision, createdRevision });
      callHook(this.#host.hooks.onResume, resumed);
      this.#emit('resumed', resumed);
    }
  }

  /** @internal */
  deliver(batch: WatchBatch): void {
    if (this.#ended) return;
    this.#lastDelivered = batch.revision;
    const hold = this.#iterating || !this.#hasEventListeners();
    this.#emit('batch', batch);
    for (const event of batch.events) {
      if (this.#ended) return;
      this.#emit(event.type, event, batch);
    }
    if (!hold || this.#ended) return;
    const waiter = this.#waiters?.shift();
    if (waiter) {
      waiter.resolve({ done: false, value: batch });
      return;
    }
    this.#queue ??= new BatchQueue();
    const queue = this.#queue;
    queue.push(batch);
    if (!this.#paused && queue.events > this.spec.maxBufferedEvents) {
      this.#paused = true;
      callHook(this.#host.hooks.onBackpressure, {
        paused: true,
        bufferedEvents: queue.events,
      });
      this.#host.pause(this);
    }
  }

  /** @internal */
  progress(revision: bigint, header: ResponseHeader): void {
    if (this.#ended) return;
    if (this.#lastDelivered === undefined || revision > this.#lastDelivered) {
      this.#lastDelivered = revision;
    }
    this.#emit('progress', jsonReady({ revision, header }));
  }

  /** @internal */
  disconnected(error: EtcdError): void {
    // Once per outage: reconnection attempts that fail in a row are not reported again.
    if (this.#ended || this.#disconnected) return;
    this.#disconnected = true;
    this.#emit('disconnected', error);
  }

  /** @internal */
  fail(error: EtcdError): void {
    this.#end(error, () => error);
  }

  #hasEventListeners(): boolean {
    return (
      this.listenerCount('batch') > 0 ||
      this.listenerCount('put') > 0 ||
      this.listenerCount('delete') > 0
    );
  }

  #next(): Promise<IteratorResult<WatchBatch>> {
    const queue = this.#queue;
    const batch = queue?.shift();
    if (queue && batch) {
      if (this.#paused && !this.#ended && queue.events <= this.spec.maxBufferedEvents / 2) {
        this.#paused = false;
        callHook(this.#host.hooks.onBackpressure, {
          paused: false,
          bufferedEvents: queue.events,
        });
        this.#host.request(this);
      }
      return Promise.resolve({ done: false, value: batch });
    }
    if (this.#ended) {
      if (this.#error && !this.#errorThrown) {
        this.#errorThrown = true;
        return Promise.reject(this.#error);
      }
      return Promise.resolve(DONE);
    }
    return new Promise((resolve, reject) => {
      this.#waiters ??= [];
      this.#waiters.push({ resolve, reject });
    });
  }

  /**
   * Ends the watcher. `error` is the failure to report (undefined for a close or an abort);
   * `readyError` makes what a pending or later ready() rejects with, only when the watch was never
   * created: a close after it is the hot path of every lock release, and builds no error.
   */
  #end(error: EtcdError | undefined, readyError: () => EtcdError): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#error = error;
    if (this.#onAbort) this.spec.signal?.removeEventListener('abort', this.#onAbort);
    this.#onAbort = undefined;
    this.#host.detach(this);
    if (this.#createdRevision === undefined) {
      const failure = readyError();
      this.#readyFailure = failure;
      this.#readyWaiter?.reject(failure);
      this.#readyWaiter = undefined;
      this.#readyPromise = undefined;
    }
    // A close drops what was held; a failure lets the iterator drain it, then throw.
    if (!error) this.#queue = undefined;
    const waiters = this.#waiters ?? [];
    this.#waiters = undefined;
    for (const waiter of waiters) {
      if (error && !this.#errorThrown) {
        this.#errorThrown = true;
        waiter.reject(error);
      } else {
        waiter.resolve(DONE);
      }
    }
    if (error) this.#emit('error', error);
    this.#emit('end');
    this.removeAllListeners();
  }

  #emit<E extends keyof WatcherEvents>(event: E, ...args: Parameters<WatcherEvents[E]>): void {
    try {
      (this.emit as (event: E, ...args: Parameters<WatcherEvents[E]>) => boolean)(event, ...args);
    } catch (error) {
      // A throwing listener is the listener's bug: report it like Node reports one on any stream
      // (an uncaught exception), without breaking the stream every watcher shares.
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}
