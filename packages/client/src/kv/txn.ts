// Transactions: `if` compares, `then` ops, `else` ops, applied atomically at one revision.

import type { CallOptions, RetryPolicy } from '../connection/types.js';
import { InvalidArgumentError, TooManyTxnOpsError, UnknownEtcdError } from '../errors.js';
import type { etcdserverpb } from '../generated/protocol.js';
import { type ResponseHeader, toResponseHeader } from '../header.js';
import { jsonReady } from '../json.js';
import type { KeyPrefix } from '../keys/namespace.js';
import { choiceArg, objectArg } from '../validate.js';
import { Compare, encodeCompare } from './compare.js';
import { decodeDeleteBody, encodeDelete } from './delete.js';
import { type AnyOpResponse, isReadOnly, type Op, opsArg, type TxnOutcome } from './op.js';
import { decodePutBody, encodePut } from './put.js';
import { decodeRangeBody, encodeRange } from './range.js';

/** The result of a committed txn. Narrow on `succeeded` to get the responses' exact types. */
export type TxnResult<
  T extends readonly Op[] = readonly Op[],
  E extends readonly Op[] = readonly Op[],
> = {
  /**
   * `header.revision` is the revision the txn created, or the unchanged current revision when the
   * branch taken changed nothing (only reads, or deletes that matched nothing).
   */
  readonly header: ResponseHeader;
} & TxnOutcome<T, E>;

/** Options of {@link Txn.commit}. */
export interface CommitOptions extends CallOptions {
  /**
   * `'guarded'` lets the client retry this txn like a read when the outcome of an attempt is
   * unknown (Unavailable after sending, a lost connection). Only use it when the compares make a
   * second application impossible, for example `cmp.modRevision(key, '==', seenRevision)` guarding
   * every write: the retry then fails its compare instead of writing twice, and `succeeded: false`
   * may mean "an earlier attempt already applied". Without it, a txn with writes that may have
   * reached a server fails with OutcomeUnknownError. Txns that only read are always retried.
   */
  readonly retry?: 'guarded';
}

/** What a Txn needs to run: send one request with a retry policy. */
export type TxnSender = (
  request: etcdserverpb.TxnRequest.$Properties,
  retry: RetryPolicy,
  options: CallOptions,
) => Promise<etcdserverpb.TxnResponse>;

/**
 * A transaction under construction. `if`, `then` and `else` each return a new Txn (a partially
 * built txn can serve as a template) and can be called in any order, appending to what is there.
 * Nothing is sent before {@link commit}.
 *
 * All compares are evaluated at the current revision; if all hold, the `then` ops run, otherwise
 * the `else` ops, in order, atomically, at one new revision (none when they change nothing). Reads
 * inside the txn see the txn's earlier writes. The server rejects a txn with more than 128
 * compares or ops in a branch (TooManyTxnOpsError) and one that writes the same key twice in a
 * branch (DuplicateKeyError); then nothing is applied.
 */
export class Txn<T extends readonly Op[] = [], E extends readonly Op[] = []> {
  readonly #send: TxnSender;
  readonly #ns: KeyPrefix;
  readonly #compares: readonly Compare[];
  readonly #thenOps: T;
  readonly #elseOps: E;

  /** @internal */
  constructor(
    send: TxnSender,
    ns: KeyPrefix,
    compares: readonly Compare[] = [],
    thenOps: T = [] as unknown as T,
    elseOps: E = [] as unknown as E,
  ) {
    this.#send = send;
    this.#ns = ns;
    this.#compares = compares;
    this.#thenOps = thenOps;
    this.#elseOps = elseOps;
  }

  /** Adds conditions; the `then` branch runs only when all of them hold. */
  if(...compares: Compare[]): Txn<T, E> {
    if (!compares.every((c) => c instanceof Compare)) {
      throw new InvalidArgumentError('if() takes compares built with cmp');
    }
    return new Txn(
      this.#send,
      this.#ns,
      [...this.#compares, ...compares],
      this.#thenOps,
      this.#elseOps,
    );
  }

  /**
   * Adds ops to run when every compare holds (or always, without compares).
   *
   * A Txn is not a promise: `await`ing it without {@link commit} rejects with InvalidArgumentError.
   */
  // biome-ignore lint/suspicious/noThenProperty: `then` is etcd's own name for the success branch; awaiting a Txn is caught below.
  then<const O extends readonly Op[]>(...ops: O): Txn<[...T, ...O], E> {
    // `await txn` calls then(resolve, reject): say what is missing instead of failing obscurely.
    const reject = (ops as readonly unknown[])[1];
    if (typeof ops[0] === 'function' && typeof reject === 'function') {
      reject(new InvalidArgumentError('a Txn is not a promise: call commit() to run it'));
      return this as unknown as Txn<[...T, ...O], E>;
    }
    opsArg(ops, 'then');
    return new Txn(this.#send, this.#ns, this.#compares, [...this.#thenOps, ...ops], this.#elseOps);
  }

  /** Adds ops to run when a compare fails. */
  else<const O extends readonly Op[]>(...ops: O): Txn<T, [...E, ...O]> {
    opsArg(ops, 'else');
    return new Txn(this.#send, this.#ns, this.#compares, this.#thenOps, [...this.#elseOps, ...ops]);
  }

  /**
   * Sends the txn. A txn whose ops are all reads is retried like a read; one with writes is never
   * retried once it may have reached a server (OutcomeUnknownError), unless `retry: 'guarded'`.
   */
  async commit(options?: CommitOptions): Promise<TxnResult<T, E>> {
    const o = objectArg(options, 'options');
    const guarded =
      o.retry !== undefined && choiceArg(o.retry, ['guarded'] as const, 'guarded', 'retry');
    const all = [...this.#thenOps, ...this.#elseOps];
    const retry: RetryPolicy = all.every(isReadOnly) ? 'read' : guarded ? 'guarded-write' : 'write';
    const request = encodeTxn(this.#compares, this.#thenOps, this.#elseOps, this.#ns);
    let response: etcdserverpb.TxnResponse;
    try {
      response = await this.#send(request, retry, { signal: o.signal, timeoutMs: o.timeoutMs });
    } catch (error) {
      throw error instanceof TooManyTxnOpsError ? this.#tooManyOps(error) : error;
    }
    return jsonReady({
      header: toResponseHeader(response.header),
      ...decodeTxnOutcome(response, this.#ns),
    }) as TxnResult<T, E>;
  }

  /** etcd's refusal, with this txn's counts: etcd checks each of the three lists on its own. */
  #tooManyOps(error: TooManyTxnOpsError): TooManyTxnOpsError {
    return new TooManyTxnOpsError({
      message:
        `${TooManyTxnOpsError.etcdMessage}: this txn has ${this.#compares.length} compares, ` +
        `${this.#thenOps.length} then-ops and ${this.#elseOps.length} else-ops; etcd allows each ` +
        'at most --max-txn-ops, 128 by default',
      grpcStatus: error.grpcStatus,
      metadata: error.metadata,
      cause: error.cause,
    });
  }
}

/** The TxnRequest for the given branches inside namespace `ns`. */
export function encodeTxn(
  compares: readonly Compare[],
  thenOps: readonly Op[],
  elseOps: readonly Op[],
  ns: KeyPrefix,
): etcdserverpb.TxnRequest.$Properties {
  return {
    compare: compares.map((c) => encodeCompare(c, ns)),
    success: thenOps.map((o) => encodeOp(o, ns)),
    failure: elseOps.map((o) => encodeOp(o, ns)),
  };
}

function encodeOp(o: Op, ns: KeyPrefix): etcdserverpb.RequestOp.$Properties {
  switch (o.kind) {
    case 'range':
      return { requestRange: encodeRange(o.spec, ns) };
    case 'put':
      return { requestPut: encodePut(o.spec, ns) };
    case 'delete':
      return { requestDeleteRange: encodeDelete(o.spec, ns) };
    case 'txn':
      return { requestTxn: encodeTxn(o.compares, o.success, o.failure, ns) };
  }
}

function decodeTxnOutcome(
  response: etcdserverpb.TxnResponse.$Properties,
  ns: KeyPrefix,
): { succeeded: boolean; responses: AnyOpResponse[] } {
  return {
    succeeded: response.succeeded ?? false,
    responses: (response.responses ?? []).map((r) => decodeOpResponse(r, ns)),
  };
}

function decodeOpResponse(r: etcdserverpb.ResponseOp.$Properties, ns: KeyPrefix): AnyOpResponse {
  if (r.responseRange) return { kind: 'range', ...decodeRangeBody(r.responseRange, ns) };
  if (r.responsePut) return { kind: 'put', ...decodePutBody(r.responsePut, ns) };
  if (r.responseDeleteRange) {
    return { kind: 'delete', ...decodeDeleteBody(r.responseDeleteRange, ns) };
  }
  if (r.responseTxn) {
    return { kind: 'txn', ...decodeTxnOutcome(r.responseTxn, ns) } as AnyOpResponse;
  }
  // Every op we send has a response of its kind; anything else is a server we cannot understand.
  throw new UnknownEtcdError({ message: 'txn response holds an op response of unknown kind' });
}
