// The key-value API: reads, writes, deletes, txns, scans and compaction, over the whole store or a
// namespace of it.
import type { Bytes } from '../bytes.js';
import type { CallOptions, Rpc } from '../connection/types.js';
import { InvalidArgumentError } from '../errors.js';
import { etcdserverpb_KV } from '../generated/methods.js';
import { type ResponseHeader, toResponseHeader } from '../header.js';
import { jsonReady } from '../json.js';
import { type KeyValue, toKeyValue } from '../key-value.js';
import { type KeySelector, toInterval } from '../keys/key-range.js';
import { KeyPrefix } from '../keys/namespace.js';
import { bytesArg, flagArg, objectArg, revisionArg } from '../validate.js';
import { WatchHub } from '../watch/hub.js';
import type { WatchRequest } from '../watch/types.js';
import type { Watcher } from '../watch/watcher.js';
import {
  type DeleteOptions,
  type DeleteResult,
  decodeDelete,
  deleteSpec,
  encodeDelete,
} from './delete.js';
import { decodePut, encodePut, type PutOptions, type PutResult, putSpec } from './put.js';
import {
  decodeRange,
  encodeRange,
  type GetOptions,
  getSpec,
  type RangeRequest,
  type RangeResult,
  rangeSpec,
} from './range.js';
import { RangeStreamSupport, Scan, type ScanRequest } from './scan.js';
import { Slots } from './slots.js';
import { Txn } from './txn.js';

/** Options of {@link KV.count}. */
export interface CountOptions extends CallOptions {
  /** Count as of this revision; absent or 0n counts at the current revision. */
  readonly revision?: bigint;
  /** Answer from the member's local state; may be stale. Default false (linearizable). */
  readonly serializable?: boolean;
}

/** Options of {@link KV.compact}. */
export interface CompactOptions extends CallOptions {
  /**
   * Wait until the compaction has been physically applied to the backend before answering. The
   * compaction takes effect logically either way. Default false.
   */
  readonly physical?: boolean;
}

/** The result of {@link KV.compact}. */
export interface CompactResult {
  readonly header: ResponseHeader;
}

/**
 * @internal What the KV views of one client share (its namespaces included): the one watch stream
 * and what its servers support. The client that owns them closes them (etcd.ts).
 */
export interface SharedKvServices {
  readonly watchHub: WatchHub;
  readonly rangeStream: RangeStreamSupport;
}

/**
 * The key-value API of etcd, over the whole store or (from {@link KV.namespace}) a namespace.
 *
 * Keys and values are `string` (UTF-8) or `Uint8Array`. Reads are retried across endpoints on
 * transient failures; puts, deletes and write txns are never retried once they may have reached a
 * server: the caller then gets OutcomeUnknownError and decides. Server-side rules (empty keys,
 * request size, txn limits, leases) are checked by the server and reported as typed errors; the
 * client rejects only input it can judge alone, with InvalidArgumentError, before sending.
 */
export class KV {
  // The namespace this view works in; the root for the whole store.
  #ns: KeyPrefix = KeyPrefix.root;
  readonly #shared: SharedKvServices;
  /** @internal What sibling packages keep per client object (the recipes' STM queue...). */
  readonly slots = new Slots();

  /**
   * The KV API over a connection (or any {@link Rpc}). Most programs use {@link Etcd}, which is a
   * KV over its own connection.
   */
  constructor(rpc: Rpc);
  /** @internal With the services of the client that owns it (etcd.ts). */
  constructor(rpc: Rpc, shared: SharedKvServices);
  constructor(
    /** The connection calls go through. */
    protected readonly rpc: Rpc,
    shared?: SharedKvServices,
  ) {
    this.#shared = shared ?? {
      watchHub: new WatchHub(rpc, {}),
      rangeStream: new RangeStreamSupport(),
    };
  }

  /**
   * The same API on the keys starting with `prefix`: keys are prefixed on the way in and stripped
   * on the way out, and every range (`all`, `fromKey`, a prefix of only 0xff bytes) is clamped to
   * the namespace, so nothing done through it touches a key outside it. The key equal to the prefix
   * itself is not part of the namespace: an empty single key is rejected with EmptyKeyError, as at
   * the root, and whole-namespace ranges start just after it. Namespaces nest: the prefixes
   * concatenate. Revisions, leases and {@link compact} are store-wide, as at the root.
   */
  namespace(prefix: Bytes): KV {
    const view = new KV(this.rpc, this.#shared);
    view.#ns = this.#ns.child(bytesArg(prefix, 'prefix'));
    return view;
  }

  /** The namespace prefix of this view, as bytes; empty for the whole store. */
  get prefix(): Uint8Array {
    return this.#ns.prefix;
  }

  /** Reads one key; `undefined` when it does not exist (at the read revision). */
  async get(key: Bytes, options?: GetOptions & CallOptions): Promise<KeyValue | undefined> {
    const request = encodeRange(getSpec(key, options), this.#ns);
    const response = await this.rpc.unary(etcdserverpb_KV.Range, request, 'read', call(options));
    // Only the first key is returned: the header and the rest of the result are not built.
    const first = response.kvs?.[0];
    return first ? toKeyValue(first, (key) => this.#ns.strip(key)) : undefined;
  }

  /**
   * Reads a key or a range of keys, with every option of etcd's Range.
   *
   * @example
   * ```ts
   * const { kvs, more, count } = await etcd.range({ prefix: 'config/', limit: 100 });
   * ```
   */
  async range(request: RangeRequest & CallOptions): Promise<RangeResult> {
    const wire = encodeRange(rangeSpec(request), this.#ns);
    const response = await this.rpc.unary(etcdserverpb_KV.Range, wire, 'read', call(request));
    return decodeRange(response, this.#ns);
  }

  /** How many keys the selection holds (no keys are transferred). */
  async count(keys: KeySelector, options?: CountOptions): Promise<bigint> {
    const o = objectArg(options, 'options');
    const request = encodeRange(
      {
        interval: toInterval(keys),
        fields: {
          countOnly: true,
          revision: revisionArg(o.revision, 'revision'),
          serializable: flagArg(o.serializable, 'serializable'),
        },
      },
      this.#ns,
    );
    const response = await this.rpc.unary(etcdserverpb_KV.Range, request, 'read', call(o));
    return response.count ?? 0n;
  }

  /**
   * Iterates the keys of a range in key order, all as of one revision, without loading them at
   * once: a RangeStream on etcd 3.7+, pages of Range pinned to one revision before. Breaking out
   * of the loop cancels it. Sorting, limits and revision filters are not supported (use
   * {@link range}); they are rejected with InvalidArgumentError.
   *
   * @example
   * ```ts
   * for await (const kv of etcd.scan({ prefix: 'jobs/' })) console.log(kv.keyText());
   * ```
   */
  scan(request: ScanRequest): Scan {
    return new Scan(this.rpc, this.#ns, this.#shared.rangeStream, request);
  }

  /**
   * Watches a key or a range: every change, one batch per revision, in order, exactly once, across
   * reconnects, server restarts and token expiry. All watchers of a client (namespaces included)
   * share one stream. Consume the {@link Watcher} with `for await` or its events; close it (or
   * leave the loop) when done. Invalid requests throw InvalidArgumentError at once.
   *
   * @example
   * ```ts
   * for await (const batch of etcd.watch({ prefix: 'config/', startRevision: rev + 1n })) {
   *   for (const event of batch.events) console.log(event.type, event.kv.keyText());
   * }
   * ```
   */
  watch(request: WatchRequest): Watcher {
    return this.#shared.watchHub.watch(request, this.#ns);
  }

  /** Writes one key. Every put creates a new revision, even when the value is unchanged. */
  async put(key: Bytes, value: Bytes, options?: PutOptions & CallOptions): Promise<PutResult> {
    const request = encodePut(putSpec(key, value, options), this.#ns);
    const response = await this.rpc.unary(etcdserverpb_KV.Put, request, 'write', call(options));
    return decodePut(response, this.#ns);
  }

  /** Deletes a key or a range of keys. Deleting nothing creates no revision. */
  async delete(keys: KeySelector, options?: DeleteOptions & CallOptions): Promise<DeleteResult> {
    const request = encodeDelete(deleteSpec(keys, options), this.#ns);
    const response = await this.rpc.unary(
      etcdserverpb_KV.DeleteRange,
      request,
      'write',
      call(options),
    );
    return decodeDelete(response, this.#ns);
  }

  /**
   * Starts a transaction; see {@link Txn}.
   *
   * @example
   * ```ts
   * const r = await etcd.txn()
   *   .if(cmp.modRevision('config/a', '==', kv.modRevision))
   *   .then(op.put('config/a', 'v2'))
   *   .else(op.get('config/a'))
   *   .commit();
   * ```
   */
  txn(): Txn {
    return new Txn(
      (request, retry, options) => this.rpc.unary(etcdserverpb_KV.Txn, request, retry, options),
      this.#ns,
    );
  }

  /**
   * Discards the history before `revision`: reads and watches at lower revisions then fail with
   * CompactedError. The latest version of every key at `revision` is kept. Compacting at or below
   * an earlier compaction fails with CompactedError, above the current revision with
   * FutureRevisionError. Compaction is store-wide: through a namespace it compacts every key.
   */
  async compact(revision: bigint, options?: CompactOptions): Promise<CompactResult> {
    const o = objectArg(options, 'options');
    if (typeof revision !== 'bigint') {
      throw new InvalidArgumentError('the revision to compact at must be a bigint');
    }
    const request = {
      revision: revisionArg(revision, 'revision'),
      physical: flagArg(o.physical, 'physical'),
    };
    const response = await this.rpc.unary(etcdserverpb_KV.Compact, request, 'write', call(o));
    return jsonReady({ header: toResponseHeader(response.header) });
  }
}

const NO_CALL_OPTIONS: CallOptions = Object.freeze({});

function call(options: CallOptions | undefined): CallOptions {
  if (options === undefined) return NO_CALL_OPTIONS;
  return { signal: options.signal, timeoutMs: options.timeoutMs };
}
