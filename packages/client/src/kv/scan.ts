// Reading a range too large for one response, key by key. etcd 3.7 streams it (RangeStream); older
// servers answer Unimplemented, and the scan falls back to pages of Range, all pinned to the
// revision of the first page so the result is one consistent snapshot, exactly like the stream.
import { concatBytes } from '../bytes.js';
import type { CallOptions, Rpc } from '../connection/types.js';
import { AbortedError, EtcdError, InvalidArgumentError } from '../errors.js';
import { etcdserverpb_KV } from '../generated/methods.js';
import type { etcdserverpb } from '../generated/protocol.js';
import { type KeyValue, toKeyValue } from '../key-value.js';
import { type Interval, type KeyRange, toInterval } from '../keys/key-range.js';
import type { KeyPrefix } from '../keys/namespace.js';
import { countArg, flagArg, objectArg, revisionArg } from '../validate.js';

/** Options of a scan. Sorting, limits, counting and revision filters are not available. */
export interface ScanOptions extends CallOptions {
  /**
   * Read the store as it was at this revision; absent or 0n pins the scan to the current revision
   * when it starts. A compaction past the pinned revision during the scan ends it with
   * CompactedError.
   */
  readonly revision?: bigint;
  /** Return keys and their revisions but no values. Default false. */
  readonly keysOnly?: boolean;
  /** Read from the member's local state; may be stale. Default false (linearizable). */
  readonly serializable?: boolean;
  /**
   * Keys per Range request when the server has no RangeStream (before etcd 3.7). Default 500.
   * Lower it when values are large: a page must fit in one gRPC message.
   */
  readonly pageSize?: number;
}

/** A scan: which keys ({@link KeyRange}) and how ({@link ScanOptions}). */
export type ScanRequest = KeyRange & ScanOptions;

/** The default number of keys per page of the paged fallback. */
export const DEFAULT_SCAN_PAGE_SIZE = 500;

/**
 * Whether the servers of one client answer RangeStream, owned by the client (etcd.ts) and shared by
 * its namespaces: one cluster runs one version in practice, so after the first Unimplemented its
 * scans page without asking again.
 */
export class RangeStreamSupport {
  /** Unknown until a RangeStream answered or was refused. */
  supported: boolean | undefined;
}

interface ScanSpec {
  readonly interval: Interval;
  readonly revision: bigint;
  readonly keysOnly: boolean;
  readonly serializable: boolean;
  readonly pageSize: bigint;
  readonly call: CallOptions;
}

const unsupported = [
  'sort',
  'limit',
  'countOnly',
  'minModRevision',
  'maxModRevision',
  'minCreateRevision',
  'maxCreateRevision',
] as const;

function scanSpec(request: ScanRequest): ScanSpec {
  const o: Partial<ScanOptions> = objectArg<ScanOptions>(request, 'request');
  for (const field of unsupported) {
    if (Reflect.get(o, field) !== undefined) {
      throw new InvalidArgumentError(
        `scan does not support ${field}: it streams every key in key order; use range() instead`,
      );
    }
  }
  const pageSize =
    o.pageSize === undefined ? BigInt(DEFAULT_SCAN_PAGE_SIZE) : countArg(o.pageSize, 'pageSize');
  if (pageSize === 0n) throw new InvalidArgumentError('pageSize must be at least 1');
  return {
    interval: toInterval(request, 'request'),
    revision: revisionArg(o.revision, 'revision'),
    keysOnly: flagArg(o.keysOnly, 'keysOnly'),
    serializable: flagArg(o.serializable, 'serializable'),
    pageSize,
    call: { signal: o.signal, timeoutMs: o.timeoutMs },
  };
}

/**
 * The keys of a range, one by one, in key order, all as of one revision. Iterate it with
 * `for await`; leaving the loop early (break, return, throw) cancels the underlying stream. Each
 * iteration runs the scan anew.
 */
export class Scan implements AsyncIterable<KeyValue> {
  #revision: bigint | undefined;
  readonly #spec: ScanSpec;
  readonly #rpc: Rpc;
  readonly #ns: KeyPrefix;
  readonly #support: RangeStreamSupport;

  /** @internal */
  constructor(rpc: Rpc, ns: KeyPrefix, support: RangeStreamSupport, request: ScanRequest) {
    this.#rpc = rpc;
    this.#ns = ns;
    this.#support = support;
    this.#spec = scanSpec(request);
    if (this.#spec.revision !== 0n) this.#revision = this.#spec.revision;
  }

  /**
   * The revision the scan reads at: the requested one, or, once known, the revision the scan was
   * pinned to when it started. It is known at the latest when the iteration completes, so a cache
   * can list with a scan and then watch from `revision + 1n`.
   */
  get revision(): bigint | undefined {
    return this.#revision;
  }

  [Symbol.asyncIterator](): AsyncIterator<KeyValue> {
    return this.#run();
  }

  async *#run(): AsyncGenerator<KeyValue, void, undefined> {
    if (this.#support.supported !== false) {
      const streamed = yield* this.#stream();
      if (streamed) return;
    }
    yield* this.#pages();
  }

  // Returns false when the server does not implement RangeStream (nothing was yielded then).
  async *#stream(): AsyncGenerator<KeyValue, boolean, undefined> {
    const spec = this.#spec;
    const stream = this.#rpc.serverStream(
      etcdserverpb_KV.RangeStream,
      this.#request(undefined, spec.revision, 0n),
      'read',
      spec.call,
    );
    let answered = false;
    let finished = false;
    try {
      for await (const chunk of stream) {
        if (!answered) {
          answered = true;
          this.#support.supported = true;
        }
        const part = chunk.rangeResponse;
        if (!part) continue;
        // Only the last chunk carries the header: the revision the stream was pinned to.
        if (part.header?.revision) this.#revision = part.header.revision;
        for (const kv of part.kvs ?? []) {
          this.#checkSignal();
          yield this.#keyValue(kv);
        }
      }
      finished = true;
      return true;
    } catch (error) {
      if (!answered && error instanceof EtcdError && error.code === 'UNIMPLEMENTED') {
        this.#support.supported = false;
        finished = true;
        return false;
      }
      throw error;
    } finally {
      if (!finished) stream.cancel();
    }
  }

  async *#pages(): AsyncGenerator<KeyValue, void, undefined> {
    const spec = this.#spec;
    let key: Uint8Array | undefined;
    let revision = spec.revision;
    for (;;) {
      this.#checkSignal();
      const page = await this.#rpc.unary(
        etcdserverpb_KV.Range,
        this.#request(key, revision, spec.pageSize),
        'read',
        spec.call,
      );
      // Pin every later page to the first page's revision: keys written meanwhile stay invisible
      // and deleted ones stay visible, so the pages together are one snapshot.
      if (revision === 0n) {
        revision = page.header?.revision ?? 0n;
        this.#revision = revision;
      }
      const kvs = page.kvs ?? [];
      for (const kv of kvs) {
        this.#checkSignal();
        yield this.#keyValue(kv);
      }
      const last = kvs[kvs.length - 1];
      if (!page.more || !last?.key) return;
      // The smallest key after the last one seen.
      key = concatBytes(last.key, new Uint8Array([0]));
    }
  }

  // `from` (a stored key) replaces the start of the range when continuing after a page.
  #request(
    from: Uint8Array | undefined,
    revision: bigint,
    limit: bigint,
  ): etcdserverpb.RangeRequest.$Properties {
    const spec = this.#spec;
    const wire = this.#ns.interval(spec.interval);
    return {
      key: from ?? wire.key,
      rangeEnd: wire.rangeEnd,
      limit,
      revision,
      keysOnly: spec.keysOnly,
      serializable: spec.serializable,
    };
  }

  // Between calls the signal is not watched by the connection: check it before each key, so an
  // abort ends the scan at once rather than after the rest of the page.
  #checkSignal(): void {
    const signal = this.#spec.call.signal;
    if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
  }

  #keyValue(kv: Parameters<typeof toKeyValue>[0]): KeyValue {
    return toKeyValue(kv, (key) => this.#ns.strip(key));
  }
}
