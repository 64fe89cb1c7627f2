// One attempt of an STM transaction: the keys it read (validated at commit), the writes it buffers
// (applied at commit, last write wins), and the commit plan that turns both into one etcd txn.
import {
  AbortedError,
  type Bytes,
  CompactedError,
  type Compare,
  cmp,
  type DeleteOp,
  InvalidArgumentError,
  type KeyValue,
  type KV,
  op,
  type PutOp,
  toBytes,
  toText,
} from '@etcdkit/client';
import type { IsolationRules } from './isolation.js';
import type { Stm, StmPutOptions } from './view.js';

/** @internal What an attempt uses of a key-value. */
export type StoredValue = Pick<KeyValue, 'value' | 'modRevision'>;

/** @internal A key as read: its value at the read revision, or undefined when missing. */
export interface ReadEntry {
  readonly key: Uint8Array;
  readonly kv: StoredValue | undefined;
}

/** @internal Values read ahead of an attempt, all at one revision. */
export interface Prefetched {
  readonly revision: bigint;
  readonly entries: ReadonlyMap<string, ReadEntry>;
}

/**
 * @internal Where a probe attempt reads keys it has no value for: the key as an open watch of this
 * process shows it, or undefined to read it from etcd. A probe only finds which keys `apply`
 * touches and is never committed (watched keys may be known at different revisions).
 */
export type ProbeSource = (key: Uint8Array) => ReadEntry | undefined;

/** @internal What the commit txn of an attempt holds. */
export interface CommitPlan {
  readonly compares: Compare[];
  readonly writes: (PutOp | DeleteOp)[];
  /** Keys written or deleted. */
  readonly writeKeys: Uint8Array[];
  /** The keys validated by the compares, as read: read again (else branch) after a conflict. */
  readonly reads: ReadEntry[];
  /** The value of each key written; undefined for a delete. */
  readonly written: ReadonlyArray<{
    readonly key: Uint8Array;
    readonly value: Uint8Array | undefined;
  }>;
}

interface Write {
  readonly key: Uint8Array;
  /** The value written; undefined for a delete. */
  readonly value: Uint8Array | undefined;
  readonly op: PutOp | DeleteOp;
}

/** @internal A map key for a byte key (byte-exact, so `'a'` and `[0x61]` are the same key). */
export function keyId(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
}

/** @internal */
export class StmAttempt implements Stm {
  readonly #reads = new Map<string, ReadEntry>();
  readonly #pending = new Map<string, Promise<ReadEntry>>();
  readonly #writes = new Map<string, Write>();
  // The snapshot revision R (snapshot levels): a promise while the first read is in flight, so
  // reads started meanwhile wait for it instead of each picking their own revision.
  #snapshot: Promise<bigint> | undefined;
  #snapshotRevision: bigint | undefined;
  #failure: { readonly error: unknown } | undefined;
  #closed = false;
  readonly #kv: KV;
  readonly #rules: IsolationRules;
  readonly #signal: AbortSignal | undefined;
  readonly #prefetched: Prefetched | undefined;
  readonly #probe: ProbeSource | undefined;
  #probed = false;

  constructor(
    kv: KV,
    rules: IsolationRules,
    signal: AbortSignal | undefined,
    prefetched: Prefetched | undefined,
    probe?: ProbeSource,
  ) {
    this.#kv = kv;
    this.#rules = rules;
    this.#signal = signal;
    this.#prefetched = prefetched;
    this.#probe = probe;
  }

  /** Whether a read was served by the probe source: this attempt must not be committed. */
  get probed(): boolean {
    return this.#probed;
  }

  async get(key: Bytes): Promise<string | undefined> {
    const value = await this.getBytes(key);
    return value === undefined ? undefined : toText(value);
  }

  async getBytes(key: Bytes): Promise<Uint8Array | undefined> {
    const bytes = this.#keyArg(key);
    const id = keyId(bytes);
    const written = this.#writes.get(id);
    if (written) return written.value;
    return (await this.#read(id, bytes)).kv?.value;
  }

  async rev(key: Bytes): Promise<bigint> {
    const bytes = this.#keyArg(key);
    return (await this.#read(keyId(bytes), bytes)).kv?.modRevision ?? 0n;
  }

  put(key: Bytes, value: Bytes, options?: StmPutOptions): void {
    const bytes = this.#keyArg(key);
    const put = op.put(bytes, value, options?.lease === undefined ? {} : { lease: options.lease });
    this.#writes.set(keyId(bytes), { key: bytes, value: toBytes(value), op: put });
  }

  del(key: Bytes): void {
    const bytes = this.#keyArg(key);
    this.#writes.set(keyId(bytes), { key: bytes, value: undefined, op: op.delete(bytes) });
  }

  /** Ends the attempt: later calls of the Stm methods throw, late read results are dropped. */
  close(): void {
    this.#closed = true;
  }

  /**
   * True when a read at the snapshot revision failed because that revision was compacted: the
   * attempt cannot go on, but a new attempt at a newer revision can.
   */
  get snapshotLost(): boolean {
    return (
      this.#rules.snapshotReads &&
      this.#failure !== undefined &&
      this.#failure.error instanceof CompactedError
    );
  }

  /**
   * The commit of this attempt. Throws the first read failure, if any: `apply` may have caught it
   * and carried on without the value, and a key whose read failed is not in the read set, so
   * committing could write on a guess that nothing validates.
   */
  plan(): CommitPlan {
    if (this.#failure) throw this.#failure.error;
    const compares: Compare[] = [];
    const reads: ReadEntry[] = [];
    if (this.#rules.validateReads) {
      for (const entry of this.#reads.values()) {
        reads.push(entry);
        // A missing key was read as mod revision 0: a concurrent create makes this compare fail.
        compares.push(cmp.modRevision(entry.key, '==', entry.kv?.modRevision ?? 0n));
      }
    }
    const snapshot = this.#snapshotRevision;
    if (this.#rules.validateWrites && snapshot !== undefined) {
      for (const [id, write] of this.#writes) {
        // A key both read and written is covered by its read compare (its mod revision was at
        // most R then and must still be the same), so it needs no second compare.
        if (this.#reads.has(id)) continue;
        compares.push(cmp.modRevision(write.key, '<', snapshot + 1n));
      }
    }
    const writes = [...this.#writes.values()];
    return {
      compares,
      writes: writes.map((w) => w.op),
      writeKeys: writes.map((w) => w.key),
      reads,
      written: writes,
    };
  }

  #keyArg(key: unknown): Uint8Array {
    if (this.#closed) {
      throw new InvalidArgumentError(
        'this STM attempt has ended: use the Stm object only while apply runs',
      );
    }
    if (typeof key === 'string' || key instanceof Uint8Array) return toBytes(key);
    throw new InvalidArgumentError('an STM key must be a string or a Uint8Array');
  }

  #read(id: string, key: Uint8Array): Promise<ReadEntry> {
    const known = this.#reads.get(id) ?? this.#fromPrefetch(id) ?? this.#fromProbe(id, key);
    if (known) return Promise.resolve(known);
    const pending = this.#pending.get(id);
    if (pending) return pending;
    const read = this.#fetch(key).then(
      (kv) => {
        const entry = { key, kv };
        this.#pending.delete(id);
        if (!this.#closed) this.#reads.set(id, entry);
        return entry;
      },
      (error: unknown) => {
        this.#pending.delete(id);
        if (!this.#closed) this.#failure ??= { error };
        throw error;
      },
    );
    this.#pending.set(id, read);
    return read;
  }

  #fromPrefetch(id: string): ReadEntry | undefined {
    const prefetched = this.#prefetched;
    const entry = prefetched?.entries.get(id);
    if (!prefetched || !entry) return undefined;
    // At snapshot levels prefetched values serve only an attempt whose snapshot is their revision,
    // which the first read always adopts when there are any (see #fetch).
    if (this.#rules.snapshotReads) this.#fixSnapshot(prefetched.revision);
    this.#reads.set(id, entry);
    return entry;
  }

  #fromProbe(id: string, key: Uint8Array): ReadEntry | undefined {
    const entry = this.#probe?.(key);
    if (!entry) return undefined;
    this.#probed = true;
    this.#reads.set(id, entry);
    return entry;
  }

  #fixSnapshot(revision: bigint): void {
    if (this.#snapshot !== undefined) return;
    this.#snapshot = Promise.resolve(revision);
    this.#snapshotRevision = revision;
  }

  async #fetch(key: Uint8Array): Promise<StoredValue | undefined> {
    if (this.#signal?.aborted) throw new AbortedError({ cause: this.#signal.reason });
    const signal = this.#signal;
    if (!this.#rules.snapshotReads) {
      // Go's STM reads these levels with the serializable flag: the commit validates them anyway.
      return this.#kv.get(key, { serializable: true, signal });
    }
    if (this.#prefetched) this.#fixSnapshot(this.#prefetched.revision);
    if (this.#snapshot === undefined) {
      // The first read of the attempt: a linearizable read at the latest revision, whose header
      // revision becomes the snapshot every later read uses.
      const first = this.#kv.range({ key, signal });
      this.#snapshot = first.then((r) => {
        this.#snapshotRevision = r.header.revision;
        return r.header.revision;
      });
      // Waiting reads observe a failure through their own await; this one reports it.
      this.#snapshot.catch(() => {});
      return (await first).kvs[0];
    }
    const revision = await this.#snapshot;
    // The store at a past revision never changes, so any member may answer.
    return this.#kv.get(key, { revision, serializable: true, signal });
  }
}
