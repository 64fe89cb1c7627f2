// Fencing: making a lock protect something, since a holder that pauses past its TTL still believes
// it holds the lock (docs/locks-and-fencing.md): GuardedTxn and FencedResource.
import {
  type Bytes,
  type CommitOptions,
  type Compare,
  cmp,
  InvalidArgumentError,
  type KeyValue,
  type KV,
  type Op,
  op,
  type ResponseHeader,
  type TxnOp,
  type TxnOpResponse,
  type TxnResult,
} from '@etcdkit/client';
import { FencedUpdateConflictError, LockLostError, StaleFencingTokenError } from '../errors.js';

/**
 * Something held through a key in etcd: a mutex or rwmutex lock, a semaphore permit, a
 * leadership. It is what `guardedTxn` needs.
 */
export interface Ownership {
  /** The key that holds it. */
  readonly key: string;
  /**
   * The create revision of {@link key}. Holders of one lock get strictly increasing tokens, so a
   * resource that remembers the highest token it accepted can refuse a stale holder.
   */
  readonly fencingToken: bigint;
  /** Aborts when the hold may have been lost (see the implementing class). */
  readonly signal: AbortSignal;
  /**
   * The txn compare that holds exactly while this hold does: `createRevision(key) ==
   * fencingToken`. (Guarding with `version > 0` would wrongly pass after the same session
   * re-creates the key.)
   */
  isOwner(): Compare;
  /**
   * @internal The error a guarded txn that found the hold gone rejects with (a leadership has its
   * own); LockLostError without it.
   */
  lostError?(key: string, token: bigint, message: string): Error;
}

/**
 * A txn that applies only while a lock (or permit, or leadership) is held. Build it like the
 * client's Txn (`if`, `then`, `else`, `commit`); the ownership compare wraps your txn:
 *
 * `if (createRevision(lockKey) == fencingToken) then (your txn) else (nothing)`
 *
 * so your own compares still choose between your `then` and `else` branches, and a commit that
 * finds the lock lost rejects with {@link LockLostError} with nothing applied. Without compares
 * of your own the txn is flat; with them it is a nested txn (etcd 3.3 and later).
 *
 * @example
 * ```ts
 * // read-modify-write of etcd state under a lock: ownership AND the value read must hold
 * const kv = await etcd.get('counter');
 * await lock.txn()
 *   .if(cmp.modRevision('counter', '==', kv?.modRevision ?? 0n))
 *   .then(op.put('counter', String(Number(kv?.text() ?? '0') + 1)))
 *   .commit();
 * ```
 */
export class GuardedTxn<T extends readonly Op[] = [], E extends readonly Op[] = []> {
  readonly #kv: KV;
  /** Your txn as the client's nested txn op: `op.txn` checks its compares and ops. */
  readonly #txn: TxnOp<T, E>;

  /** Built by {@link guardedTxn} or `lock.txn()`. */
  constructor(
    kv: KV,
    /** The hold every commit is guarded by. */
    readonly owner: Ownership,
    txn: TxnOp<T, E> = op.txn([]) as TxnOp<T, E>,
  ) {
    this.#kv = kv;
    this.#txn = txn;
  }

  /** Adds compares of your own; all must hold for the `then` ops to run. */
  if(...compares: Compare[]): GuardedTxn<T, E> {
    const { success, failure } = this.#txn;
    return this.#with(op.txn([...this.#txn.compares, ...compares], success, failure));
  }

  /**
   * Adds ops to run when your compares hold (and the lock is held). Like the client's Txn, this
   * is not a promise: awaiting it without {@link commit} rejects with InvalidArgumentError.
   */
  // biome-ignore lint/suspicious/noThenProperty: `then` is etcd's name for the success branch; awaiting a GuardedTxn is caught below.
  then<const O extends readonly Op[]>(...ops: O): GuardedTxn<[...T, ...O], E> {
    const reject = (ops as readonly unknown[])[1];
    if (typeof ops[0] === 'function' && typeof reject === 'function') {
      reject(new InvalidArgumentError('a GuardedTxn is not a promise: call commit() to run it'));
      return this as unknown as GuardedTxn<[...T, ...O], E>;
    }
    const { compares, success, failure } = this.#txn;
    return this.#with(op.txn(compares, [...success, ...ops] as [...T, ...O], failure));
  }

  /** Adds ops to run when one of your compares fails (and the lock is held). */
  else<const O extends readonly Op[]>(...ops: O): GuardedTxn<T, [...E, ...O]> {
    const { compares, success, failure } = this.#txn;
    return this.#with(op.txn(compares, success, [...failure, ...ops] as [...E, ...O]));
  }

  #with<T2 extends readonly Op[], E2 extends readonly Op[]>(
    txn: TxnOp<T2, E2>,
  ): GuardedTxn<T2, E2> {
    return new GuardedTxn(this.#kv, this.owner, txn);
  }

  /**
   * Sends the txn. Resolves with the outcome of YOUR txn (`succeeded` says whether your compares
   * held) when the lock was held at the txn's revision; rejects with LockLostError (a leadership's
   * LeadershipLostError) when it was not (nothing applied). Options are the client's (`retry:
   * 'guarded'` only if your compares make a second application impossible).
   */
  async commit(options?: CommitOptions): Promise<TxnResult<T, E>> {
    const guard = this.owner.isOwner();
    const { compares, success, failure } = this.#txn;
    if (compares.length === 0 && failure.length === 0) {
      const flat = await this.#kv
        .txn()
        .if(guard)
        .then(...success)
        .commit(options);
      if (!flat.succeeded) throw this.#lost();
      return { header: flat.header, succeeded: true, responses: flat.responses } as TxnResult<T, E>;
    }
    const nested = await this.#kv.txn().if(guard).then(this.#txn).commit(options);
    if (!nested.succeeded) throw this.#lost();
    const inner = nested.responses[0] as TxnOpResponse;
    return {
      header: nested.header,
      succeeded: inner.succeeded,
      responses: inner.responses,
    } as TxnResult<T, E>;
  }

  #lost(): Error {
    const { key, fencingToken } = this.owner;
    const message = `${key} (fencing token ${fencingToken}) is no longer held: the guarded txn did not apply`;
    return (
      this.owner.lostError?.(key, fencingToken, message) ??
      new LockLostError(key, fencingToken, message)
    );
  }
}

/**
 * A {@link GuardedTxn} guarded by `owner`, sent through `kv`. Use the client the lock was taken with
 * (or any client of the same cluster): the lock's key is a full key, so a namespaced view would
 * compare the wrong key.
 */
export function guardedTxn(kv: KV, owner: Ownership): GuardedTxn {
  return new GuardedTxn(kv, owner);
}

/** Options of {@link FencedResource}. */
export interface FencedResourceOptions {
  /** Where the highest accepted token is stored. Default `<key>.fencing-token`. */
  readonly tokenKey?: string;
}

/** What {@link FencedResource.read} returns: the value and the token, at one revision. */
export interface FencedRead {
  /** The resource's key-value; `undefined` when it does not exist. */
  readonly kv: KeyValue | undefined;
  /** The highest token accepted so far; `undefined` before the first fenced write. */
  readonly highestToken: bigint | undefined;
  readonly header: ResponseHeader;
}

/** Options of {@link FencedResource.update}. */
export interface FencedUpdateOptions {
  /** How many times to re-read and retry when a concurrent write wins. Default 100. */
  readonly maxAttempts?: number;
  /** Aborting it stops between attempts. */
  readonly signal?: AbortSignal;
}

// Tokens are create revisions (positive int64). Stored as fixed-width decimal, byte order equals
// numeric order, so the server's value compare can order them.
const TOKEN_DIGITS = 19;
const MAX_TOKEN = 10n ** BigInt(TOKEN_DIGITS) - 1n;

function encodeToken(token: bigint): string {
  if (typeof token !== 'bigint' || token < 0n || token > MAX_TOKEN) {
    throw new InvalidArgumentError(
      `a fencing token must be a bigint in [0, ${MAX_TOKEN}], got ${String(token)}`,
    );
  }
  return token.toString().padStart(TOKEN_DIGITS, '0');
}

function decodeToken(kv: KeyValue | undefined): bigint | undefined {
  return kv === undefined ? undefined : BigInt(kv.text());
}

/**
 * A value kept in etcd that only accepts writes carrying a fencing token at least as high as
 * the highest it has accepted: the store-side check that makes a lock safe when the writer may
 * be a stale holder (paused past its lease, partitioned). It needs no lock itself; the token
 * (a lock's {@link Ownership.fencingToken}) is the whole protocol.
 *
 * The token lives next to the value, at {@link tokenKey}, as 19-digit zero-padded decimal.
 * Every write updates both keys in one txn:
 * - {@link put}: `if value(tokenKey) > token then (refuse) else (put tokenKey = token, put key)`.
 *   A missing token key compares false, so the first write is accepted.
 * - {@link update} (read-modify-write): reads both keys, refuses a lower token, then writes
 *   `if modRevision(key) and modRevision(tokenKey) are unchanged`, retrying on a concurrent
 *   write: no update is lost even when two holders overlap, and once a newer holder has written,
 *   an older one can no longer write at all.
 *
 * @example
 * ```ts
 * const account = new FencedResource(etcd, 'accounts/42');
 * await account.update(lock.fencingToken, (kv) => String(Number(kv?.text() ?? '0') + 10));
 * ```
 */
export class FencedResource {
  /** Where the highest accepted token is stored. */
  readonly tokenKey: string;

  readonly #kv: KV;

  constructor(
    kv: KV,
    /** The resource's key. */
    readonly key: string,
    options: FencedResourceOptions = {},
  ) {
    this.#kv = kv;
    this.tokenKey = options.tokenKey ?? `${key}.fencing-token`;
  }

  /** Reads the value and the highest accepted token at one revision. */
  async read(options?: { readonly signal?: AbortSignal }): Promise<FencedRead> {
    const result = await this.#kv
      .txn()
      .then(op.get(this.key), op.get(this.tokenKey))
      .commit({ signal: options?.signal });
    const [value, token] = result.responses as [
      { readonly kvs: KeyValue[] },
      { readonly kvs: KeyValue[] },
    ];
    return { kv: value.kvs[0], highestToken: decodeToken(token.kvs[0]), header: result.header };
  }

  /**
   * Writes `value` if `token` is at least the highest token accepted so far, and records `token`
   * as the highest, in one txn. Rejects with {@link StaleFencingTokenError} (nothing written)
   * otherwise. Resolves with the header of the write.
   */
  async put(token: bigint, value: Bytes): Promise<ResponseHeader> {
    const encoded = encodeToken(token);
    const result = await this.#kv
      .txn()
      .if(cmp.value(this.tokenKey, '>', encoded))
      .then(op.get(this.tokenKey))
      .else(op.put(this.tokenKey, encoded), op.put(this.key, value))
      .commit();
    if (result.succeeded) {
      const highest = decodeToken(result.responses[0].kvs[0]) ?? token;
      throw new StaleFencingTokenError(this.key, token, highest);
    }
    return result.header;
  }

  /**
   * Read-modify-write with fencing: reads the value, refuses a token lower than the highest
   * accepted ({@link StaleFencingTokenError}), computes the new value with `fn` (which must be
   * free of side effects: it may run several times), and writes it with the token only if neither
   * key changed since the read. Resolves with the header of the write and the value written.
   */
  async update(
    token: bigint,
    fn: (current: KeyValue | undefined) => Bytes,
    options: FencedUpdateOptions = {},
  ): Promise<{ readonly header: ResponseHeader; readonly value: Bytes }> {
    const encoded = encodeToken(token);
    const attempts = options.maxAttempts ?? 100;
    for (let attempt = 1; ; attempt++) {
      options.signal?.throwIfAborted();
      const seen = await this.#kv
        .txn()
        .then(op.get(this.key), op.get(this.tokenKey))
        .commit({ signal: options.signal });
      const [valueRead, tokenRead] = seen.responses as [
        { readonly kvs: KeyValue[] },
        { readonly kvs: KeyValue[] },
      ];
      const current = valueRead.kvs[0];
      const stored = tokenRead.kvs[0];
      const highest = decodeToken(stored);
      if (highest !== undefined && highest > token) {
        throw new StaleFencingTokenError(this.key, token, highest);
      }
      const value = fn(current);
      const write = await this.#kv
        .txn()
        .if(
          cmp.modRevision(this.key, '==', current?.modRevision ?? 0n),
          cmp.modRevision(this.tokenKey, '==', stored?.modRevision ?? 0n),
        )
        .then(op.put(this.tokenKey, encoded), op.put(this.key, value))
        .commit();
      if (write.succeeded) return { header: write.header, value };
      if (attempt >= attempts) {
        throw new FencedUpdateConflictError(this.key, attempts);
      }
    }
  }
}

/**
 * Writes `value` to `key` only if `token` is at least the highest fencing token the key has
 * accepted, in one txn (see {@link FencedResource.put}). Rejects with StaleFencingTokenError.
 */
export function fencedPut(
  kv: KV,
  key: string,
  token: bigint,
  value: Bytes,
): Promise<ResponseHeader> {
  return new FencedResource(kv, key).put(token, value);
}
