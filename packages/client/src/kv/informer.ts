// A consistent local copy of a range: list it at one revision R, then watch from R + 1; after a
// compaction the range is listed again and the differences are reported as changes.
import { EventEmitter } from 'eventemitter3';
import { type Bytes, toBytes } from '../bytes.js';
import { streamFailure } from '../connection/retry.js';
import { sleep } from '../connection/sleep.js';
import { AbortedError, type EtcdError, InvalidArgumentError, toEtcdError } from '../errors.js';
import type { KeyValue } from '../key-value.js';
import type { KeyRange } from '../keys/key-range.js';
import { backoffDelay } from '../transport/backoff.js';
import { WatchCompactedError } from '../watch/errors.js';
import type { WatchBatch } from '../watch/types.js';
import type { Watcher } from '../watch/watcher.js';
import type { KV } from './kv.js';

/** How an informer runs. */
export interface InformerOptions {
  /** Aborting it closes the informer. */
  readonly signal?: AbortSignal;
  /** Called for a key that appears (after the copy is updated). */
  readonly onAdd?: (kv: KeyValue) => void;
  /** Called for a key whose value (or lease) changed. */
  readonly onUpdate?: (kv: KeyValue, previous: KeyValue) => void;
  /** Called for a key that disappeared, with its last known state. */
  readonly onDelete?: (previous: KeyValue) => void;
  /** Keys per page of the listing on servers without RangeStream. Default 500. */
  readonly pageSize?: number;
  /** Ask etcd for progress notifications, to keep the resume point of a quiet range fresh. */
  readonly progressNotify?: boolean;
}

/** The keys an informer copies ({@link KeyRange}) and how ({@link InformerOptions}). */
export type InformerRequest = KeyRange & InformerOptions;

/** The events an {@link Informer} emits. */
export interface InformerEvents {
  /** A key appeared. */
  add: (kv: KeyValue) => void;
  /** A key changed. */
  update: (kv: KeyValue, previous: KeyValue) => void;
  /** A key disappeared; `previous` is its last known state. */
  delete: (previous: KeyValue) => void;
  /** The copy is complete as of `revision` (after the first listing, and after every re-listing). */
  synced: (revision: bigint) => void;
  /** The watch's resume point was compacted; the range is listed again. */
  relist: (error: WatchCompactedError) => void;
  /** The informer failed for good; 'end' follows. */
  error: (error: EtcdError) => void;
  /** The informer stopped. Listeners are removed after it. */
  end: () => void;
}

/** Waits between failed listings. */
const RELIST_BACKOFF = { baseMs: 200, maxMs: 5_000 };

const KEY_FIELDS = ['key', 'end', 'prefix', 'fromKey', 'all'] as const;
const OPTION_FIELDS = new Set<string>([
  ...KEY_FIELDS,
  'signal',
  'onAdd',
  'onUpdate',
  'onDelete',
  'pageSize',
  'progressNotify',
]);

/** The key selection of a request; unknown fields are refused. */
function keysOf(request: InformerRequest): KeyRange {
  if (typeof request !== 'object' || request === null) {
    throw new InvalidArgumentError('the informer request must be an object');
  }
  const keys: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(request)) {
    if (!OPTION_FIELDS.has(field)) {
      throw new InvalidArgumentError(`unknown informer option ${JSON.stringify(field)}`);
    }
    if ((KEY_FIELDS as readonly string[]).includes(field) && value !== undefined)
      keys[field] = value;
  }
  return keys as KeyRange;
}

/** Order-preserving map key of a byte string (each byte one char, so string order = byte order). */
function idOf(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
}

/**
 * A live, consistent copy of a range of keys, from {@link informer}.
 *
 * @example
 * ```ts
 * const services = informer(etcd, { prefix: 'services/', onAdd: (kv) => console.log(kv.keyText()) });
 * await services.synced;
 * services.get('services/api')?.json();
 * await services.close();
 * ```
 */
export class Informer extends EventEmitter<InformerEvents> implements AsyncDisposable {
  /**
   * Resolves with the revision of the first complete copy once its watch is established; rejects
   * with the informer's error (or AbortedError) if it ends before.
   */
  readonly synced: Promise<bigint>;
  readonly #kv: KV;
  readonly #keys: KeyRange;
  readonly #options: InformerOptions;
  readonly #stop = new AbortController();
  #cache = new Map<string, KeyValue>();
  #revision = 0n;
  #watcher: Watcher | undefined;
  #resolveSynced: ((revision: bigint) => void) | undefined;
  #rejectSynced: ((error: EtcdError) => void) | undefined;
  #ended = false;
  #onAbort: (() => void) | undefined;

  /** Starts listing at once. Prefer {@link informer}. */
  constructor(kv: KV, request: InformerRequest) {
    super();
    this.#kv = kv;
    this.#keys = keysOf(request);
    const { signal, onAdd, onUpdate, onDelete, pageSize, progressNotify } = request;
    this.#options = { signal, pageSize, progressNotify };
    // Checked now, so a bad request throws here rather than failing the informer later.
    kv.scan({ ...this.#keys, pageSize });
    kv.watch({ ...this.#keys, signal: AbortSignal.abort(), progressNotify });
    if (onAdd) this.on('add', onAdd);
    if (onUpdate) this.on('update', onUpdate);
    if (onDelete) this.on('delete', onDelete);
    this.synced = new Promise<bigint>((resolve, reject) => {
      this.#resolveSynced = resolve;
      this.#rejectSynced = reject;
    });
    this.synced.catch(() => {});
    if (signal?.aborted) {
      this.#end(undefined);
      return;
    }
    if (signal) {
      this.#onAbort = () => this.#end(undefined);
      signal.addEventListener('abort', this.#onAbort, { once: true });
    }
    this.#run().catch((error: unknown) => this.#end(toEtcdError(error)));
  }

  /** The revision the copy is current as of (0n before the first listing completes). */
  get revision(): bigint {
    return this.#revision;
  }

  /** Number of keys in the copy. */
  get size(): number {
    return this.#cache.size;
  }

  /** True once the informer stopped. */
  get closed(): boolean {
    return this.#ended;
  }

  /** The key's current state in the copy, or undefined when it is absent. */
  get(key: Bytes): KeyValue | undefined {
    return this.#cache.get(idOf(toBytes(key)));
  }

  /** Every key-value of the copy, in key order. */
  values(): KeyValue[] {
    return [...this.#cache.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, kv]) => kv);
  }

  /** Stops watching and listing; 'end' is emitted and listeners removed. Idempotent. */
  close(): Promise<void> {
    this.#end(undefined);
    return Promise.resolve();
  }

  /** Closes the informer, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (!this.#ended) {
      let revision: bigint;
      try {
        revision = await this.#list();
      } catch (error) {
        if (this.#ended) return;
        const failure = toEtcdError(error);
        // A listing is a unary call, whose token the connection has already refreshed: a token
        // refusal left is as final as a permanent failure.
        if (streamFailure(failure) !== 'resume') {
          this.#end(failure);
          return;
        }
        failures++;
        await sleep(backoffDelay(failures, RELIST_BACKOFF), this.#stop.signal);
        continue;
      }
      failures = 0;
      if (this.#ended) return;
      const outcome = await this.#watchFrom(revision);
      if (this.#ended) return;
      if (outcome instanceof WatchCompactedError) {
        this.#emitSafely('relist', outcome);
        continue;
      }
      this.#end(outcome ?? new AbortedError({ message: 'the informer watch ended' }));
      return;
    }
  }

  /** Lists the range at one revision and makes it the copy; returns the revision. */
  async #list(): Promise<bigint> {
    const scan = this.#kv.scan({
      ...this.#keys,
      signal: this.#stop.signal,
      pageSize: this.#options.pageSize,
    });
    const fresh = new Map<string, KeyValue>();
    for await (const kv of scan) fresh.set(idOf(kv.key), kv);
    if (this.#ended) return 0n;
    const revision = scan.revision ?? 0n;
    const previous = this.#cache;
    this.#cache = fresh;
    this.#revision = revision;
    // Report the listing as changes against the previous copy (all adds the first time).
    for (const [id, kv] of fresh) {
      const before = previous.get(id);
      if (!before) this.#emitSafely('add', kv);
      else if (before.modRevision !== kv.modRevision) this.#emitSafely('update', kv, before);
    }
    for (const [id, before] of previous) {
      if (!fresh.has(id)) this.#emitSafely('delete', before);
    }
    this.#emitSafely('synced', revision);
    return revision;
  }

  /** Watches from `revision + 1` until the watcher ends; resolves with its error, if any. */
  #watchFrom(revision: bigint): Promise<EtcdError | undefined> {
    const watcher = this.#kv.watch({
      ...this.#keys,
      startRevision: revision + 1n,
      progressNotify: this.#options.progressNotify,
    });
    // A watcher can end before listeners are attached (the client is closed): its ready() says why.
    if (watcher.closed)
      return watcher.ready().then(
        () => undefined,
        (error: EtcdError) => error,
      );
    this.#watcher = watcher;
    return new Promise((resolve) => {
      let failure: EtcdError | undefined;
      watcher.on('batch', (batch) => this.#apply(batch));
      watcher.on('progress', (progress) => {
        if (progress.revision > this.#revision) this.#revision = progress.revision;
      });
      watcher.on('error', (error) => {
        failure = error;
      });
      watcher.on('end', () => {
        if (this.#watcher === watcher) this.#watcher = undefined;
        resolve(failure);
      });
      watcher.ready().then(
        () => {
          if (this.#resolveSynced) {
            this.#resolveSynced(revision);
            this.#resolveSynced = undefined;
            this.#rejectSynced = undefined;
          }
        },
        () => {},
      );
    });
  }

  #apply(batch: WatchBatch): void {
    this.#revision = batch.revision;
    for (const event of batch.events) {
      const id = idOf(event.kv.key);
      const before = this.#cache.get(id);
      if (event.type === 'put') {
        this.#cache.set(id, event.kv);
        if (before) this.#emitSafely('update', event.kv, before);
        else this.#emitSafely('add', event.kv);
      } else if (before) {
        this.#cache.delete(id);
        this.#emitSafely('delete', before);
      }
    }
  }

  #end(error: EtcdError | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#stop.abort();
    if (this.#onAbort) this.#options.signal?.removeEventListener('abort', this.#onAbort);
    this.#onAbort = undefined;
    void this.#watcher?.close();
    this.#watcher = undefined;
    if (this.#rejectSynced) {
      this.#rejectSynced(error ?? new AbortedError({ message: 'the informer was closed' }));
      this.#resolveSynced = undefined;
      this.#rejectSynced = undefined;
    }
    if (error) this.#emitSafely('error', error);
    this.#emitSafely('end');
    this.removeAllListeners();
  }

  #emitSafely<E extends keyof InformerEvents>(
    event: E,
    ...args: Parameters<InformerEvents[E]>
  ): void {
    try {
      (this.emit as (event: E, ...args: Parameters<InformerEvents[E]>) => boolean)(event, ...args);
    } catch (error) {
      // A throwing callback is reported as an uncaught exception, without stopping the informer.
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}

/**
 * Starts an {@link Informer}: a consistent local copy of `request`'s keys, kept current by a watch.
 * Works on any KV view (a namespace gives keys relative to it).
 */
export function informer(kv: KV, request: InformerRequest): Informer {
  return new Informer(kv, request);
}
