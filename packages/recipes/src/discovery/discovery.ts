// The live instances of a service: an informer on `<service>/` (so no change is missed, across
// reconnects and compactions), its keys decoded as endpoints.
import {
  type EtcdError,
  Informer,
  InvalidArgumentError,
  type KeyValue,
  type KV,
} from '@etcdkit/client';
import { EventEmitter } from 'eventemitter3';
import { decodeInstance, type ServiceInstance, servicePrefix } from './endpoint.js';

/** Options of {@link ServiceDiscovery}. */
export interface DiscoverOptions {
  /** Aborting it closes the discovery. */
  readonly signal?: AbortSignal;
}

/** The events of a {@link ServiceDiscovery}. */
export interface ServiceDiscoveryEvents {
  /** An instance appeared. */
  add: (instance: ServiceInstance) => void;
  /** An instance changed (its endpoint, metadata or lease). */
  update: (instance: ServiceInstance, previous: ServiceInstance) => void;
  /** An instance went away; `previous` is its last known state. */
  delete: (previous: ServiceInstance) => void;
  /**
   * The live set changed: once after the first listing, then once per watch response that
   * changed it (one revision's changes while the watch is current, several revisions' when it
   * catches up after a reconnect) and per re-listing. `instances` is the whole set, in key order.
   */
  change: (instances: readonly ServiceInstance[], revision: bigint) => void;
  /** A key under the prefix holds no endpoint (not JSON, no Addr); it is left out of the set. */
  invalid: (kv: KeyValue) => void;
  /** The discovery failed for good (client closed, permission denied...); 'end' follows. */
  error: (error: EtcdError) => void;
  /** The discovery stopped. */
  end: () => void;
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * The live instances of one service: a current snapshot ({@link instances}), change events, and
 * an async iterator of whole snapshots. Made by `ServiceRegistry.discover`.
 *
 * Iterating yields the set after the first listing, then after every change. A slow consumer
 * skips intermediate sets, never the latest: each value is the complete set as of some revision.
 * Leaving the loop (break, return, throw) closes the discovery; a failure ends it with the error.
 *
 * @example
 * ```ts
 * for await (const instances of registry.discover('services/api')) {
 *   console.log(instances.map((instance) => instance.addr));
 * }
 * ```
 */
export class ServiceDiscovery
  extends EventEmitter<ServiceDiscoveryEvents>
  implements AsyncIterable<readonly ServiceInstance[]>, AsyncDisposable
{
  /** The service name; its instances are the keys under `<service>/`. */
  readonly service: string;
  /** Resolves with the first complete set once it is watched; rejects if the discovery ends before. */
  readonly synced: Promise<readonly ServiceInstance[]>;
  readonly #prefix: string;
  readonly #informer: Informer;
  readonly #instances = new Map<string, ServiceInstance>();
  #snapshot: readonly ServiceInstance[] = [];
  #version = 0;
  #changePending = false;
  #started = false;
  #iterating = false;
  #failure: EtcdError | undefined;
  #ended = false;
  #wake: (() => void) | undefined;

  /** Starts discovering at once. Prefer `ServiceRegistry.discover`. */
  constructor(kv: KV, service: string, options: DiscoverOptions = {}) {
    super();
    this.#prefix = servicePrefix(service);
    this.service = service;
    this.#informer = new Informer(kv, { prefix: this.#prefix, signal: options.signal });
    this.#informer.on('add', (kv) => this.#put(kv));
    this.#informer.on('update', (kv) => this.#put(kv));
    this.#informer.on('delete', (previous) => this.#remove(previous.keyText()));
    this.#informer.on('synced', () => {
      if (!this.#started) {
        this.#started = true;
        this.#changed();
      }
    });
    this.#informer.on('error', (error) => {
      this.#failure = error;
      this.emit('error', error);
    });
    this.#informer.on('end', () => {
      this.#ended = true;
      this.#wake?.();
      this.emit('end');
    });
    this.synced = this.#informer.synced.then(() => this.#currentSet());
    this.synced.catch(() => {});
  }

  /** The live instances now, in key order (empty before the first listing). */
  get instances(): readonly ServiceInstance[] {
    return this.#currentSet();
  }

  /** The revision the set is current as of. */
  get revision(): bigint {
    return this.#informer.revision;
  }

  /** True once the discovery stopped. */
  get closed(): boolean {
    return this.#ended;
  }

  /** The instance with this id (the part of the key after `<service>/`), if it is live. */
  get(id: string): ServiceInstance | undefined {
    return this.#instances.get(`${this.#prefix}${id}`);
  }

  /** Stops discovering; 'end' is emitted. Idempotent. */
  close(): Promise<void> {
    return this.#informer.close();
  }

  /** Closes, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Whole snapshots: the first set, then the set after each change (see the class doc). */
  [Symbol.asyncIterator](): AsyncIterator<readonly ServiceInstance[]> {
    if (this.#iterating) {
      throw new InvalidArgumentError('a discovery can be iterated only once; discover again');
    }
    this.#iterating = true;
    let seen = 0;
    return {
      next: async () => {
        while (this.#version === seen && !this.#ended) {
          await new Promise<void>((resolve) => {
            this.#wake = resolve;
          });
        }
        this.#wake = undefined;
        if (this.#version !== seen) {
          seen = this.#version;
          return { done: false, value: this.#snapshot };
        }
        if (this.#failure) throw this.#failure;
        return DONE;
      },
      return: async () => {
        await this.close();
        return DONE;
      },
    };
  }

  #put(kv: KeyValue): void {
    const key = kv.keyText();
    const previous = this.#instances.get(key);
    const instance = decodeInstance(kv, this.#prefix);
    if (!instance) {
      this.emit('invalid', kv);
      if (previous) this.#remove(key);
      return;
    }
    this.#instances.set(key, instance);
    if (previous) this.emit('update', instance, previous);
    else this.emit('add', instance);
    this.#changed();
  }

  #remove(key: string): void {
    const previous = this.#instances.get(key);
    if (!previous) return;
    this.#instances.delete(key);
    this.emit('delete', previous);
    this.#changed();
  }

  /** Announces the set once the informer has applied every change of the current revision. */
  #changed(): void {
    if (this.#changePending || !this.#started) return;
    this.#changePending = true;
    // The informer applies one revision's events (or a whole re-listing) synchronously.
    queueMicrotask(() => {
      this.#changePending = false;
      if (this.#ended) return;
      this.#snapshot = this.#currentSet();
      this.#version++;
      this.#wake?.();
      this.emit('change', this.#snapshot, this.#informer.revision);
    });
  }

  #currentSet(): readonly ServiceInstance[] {
    return [...this.#instances.values()].sort((a, b) =>
      a.key < b.key ? -1 : a.key > b.key ? 1 : 0,
    );
  }
}
