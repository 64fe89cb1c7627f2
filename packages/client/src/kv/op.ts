// The operations a txn runs: reads, puts, deletes and nested txns, built with the `op` functions.
// An op is validated when it is built and bound to a namespace only when its txn is committed, so
// the same op can be used through any namespace.
import type { Bytes } from '../bytes.js';
import { InvalidArgumentError } from '../errors.js';
import type { KeySelector } from '../keys/key-range.js';
import { Compare } from './compare.js';
import {
  type DeleteOptions,
  type DeleteResponseBody,
  type DeleteSpec,
  deleteSpec,
} from './delete.js';
import { type PutOptions, type PutResponseBody, type PutSpec, putSpec } from './put.js';
import {
  type GetOptions,
  getSpec,
  type RangeRequest,
  type RangeResponseBody,
  type RangeSpec,
  rangeSpec,
} from './range.js';

/** A read inside a txn. Its response is a {@link RangeOpResponse}. */
export class RangeOp {
  /** Discriminates the kinds of ops. */
  readonly kind = 'range';
  /** @internal */
  constructor(readonly spec: RangeSpec) {}
}

/** A put inside a txn. Its response is a {@link PutOpResponse}. */
export class PutOp {
  /** Discriminates the kinds of ops. */
  readonly kind = 'put';
  /** @internal */
  constructor(readonly spec: PutSpec) {}
}

/** A delete inside a txn. Its response is a {@link DeleteOpResponse}. */
export class DeleteOp {
  /** Discriminates the kinds of ops. */
  readonly kind = 'delete';
  /** @internal */
  constructor(readonly spec: DeleteSpec) {}
}

/**
 * A txn nested inside a txn. Like every compare of a txn, its compares are evaluated against the
 * store as it was before the txn, not after the ops preceding it; its writes share the outer
 * txn's single revision. Its response is a {@link TxnOpResponse}.
 */
export class TxnOp<
  T extends readonly Op[] = readonly Op[],
  E extends readonly Op[] = readonly Op[],
> {
  /** Discriminates the kinds of ops. */
  readonly kind = 'txn';
  /** @internal */
  constructor(
    /** The conditions; all must hold for `success` to run. */
    readonly compares: readonly Compare[],
    /** Ops run when every compare holds (the `then` branch). */
    readonly success: T,
    /** Ops run otherwise (the `else` branch). */
    readonly failure: E,
  ) {}
}

/** Any operation a txn can run. */
export type Op = RangeOp | PutOp | DeleteOp | TxnOp;

/** The response to a {@link RangeOp}. */
export interface RangeOpResponse extends RangeResponseBody {
  readonly kind: 'range';
}

/** The response to a {@link PutOp}. */
export interface PutOpResponse extends PutResponseBody {
  readonly kind: 'put';
}

/** The response to a {@link DeleteOp}. */
export interface DeleteOpResponse extends DeleteResponseBody {
  readonly kind: 'delete';
}

/** The outcome of a txn: which branch ran, and the responses of its ops, in op order. */
export type TxnOutcome<T extends readonly Op[], E extends readonly Op[]> =
  | { readonly succeeded: true; readonly responses: OpResponses<T> }
  | { readonly succeeded: false; readonly responses: OpResponses<E> };

/** The response to a {@link TxnOp}: which nested branch ran, and its responses. */
export type TxnOpResponse<
  T extends readonly Op[] = readonly Op[],
  E extends readonly Op[] = readonly Op[],
> = { readonly kind: 'txn' } & TxnOutcome<T, E>;

/** The response type of an op type. */
export type OpResponse<O extends Op> = O extends RangeOp
  ? RangeOpResponse
  : O extends PutOp
    ? PutOpResponse
    : O extends DeleteOp
      ? DeleteOpResponse
      : O extends TxnOp<infer T, infer E>
        ? TxnOpResponse<T, E>
        : never;

/** The response types of a list of ops, position by position. */
export type OpResponses<T extends readonly Op[]> = { -readonly [I in keyof T]: OpResponse<T[I]> };

/** The response to any op. */
export type AnyOpResponse = RangeOpResponse | PutOpResponse | DeleteOpResponse | TxnOpResponse;

/** True when `op` cannot change the store: a read, or a txn of reads only (in both branches). */
export function isReadOnly(op: Op): boolean {
  if (op.kind === 'range') return true;
  if (op.kind === 'txn') return op.success.every(isReadOnly) && op.failure.every(isReadOnly);
  return false;
}

function checkOps(ops: unknown, name: string): readonly Op[] {
  if (ops === undefined) return [];
  if (!Array.isArray(ops)) throw new InvalidArgumentError(`${name} must be an array of ops`);
  for (const o of ops) {
    if (
      !(o instanceof RangeOp || o instanceof PutOp || o instanceof DeleteOp || o instanceof TxnOp)
    ) {
      throw new InvalidArgumentError(`${name} must hold ops built with the op functions`);
    }
  }
  return ops;
}

/** Validates a list of ops. */
export function opsArg(ops: unknown, name: string): readonly Op[] {
  return checkOps(ops, name);
}

/** Reads one key. The response's `kvs` holds it, or is empty when it is missing. */
function get(key: Bytes, options?: GetOptions): RangeOp {
  return new RangeOp(getSpec(key, options));
}

/** Reads a range of keys, with every option of {@link KV.range}. */
function range(request: RangeRequest): RangeOp {
  return new RangeOp(rangeSpec(request));
}

/** Writes one key. */
function put(key: Bytes, value: Bytes, options?: PutOptions): PutOp {
  return new PutOp(putSpec(key, value, options));
}

/** Deletes a key or a range of keys. */
function del(keys: KeySelector, options?: DeleteOptions): DeleteOp {
  return new DeleteOp(deleteSpec(keys, options));
}

/**
 * A nested txn: when the branch holding it runs, `thenOps` run if every compare holds, else
 * `elseOps`. The compares see the store as it was before the whole txn (etcd chooses every branch
 * before running any op), not the writes of earlier ops.
 *
 * @example
 * ```ts
 * op.txn([cmp.missing('a')], [op.put('a', '1')], [op.get('a')])
 * ```
 */
function txn<const T extends readonly Op[] = [], const E extends readonly Op[] = []>(
  compares: readonly Compare[],
  thenOps?: T,
  elseOps?: E,
): TxnOp<T, E> {
  if (!Array.isArray(compares) || !compares.every((c) => c instanceof Compare)) {
    throw new InvalidArgumentError('the compares of a nested txn must be an array built with cmp');
  }
  checkOps(thenOps, 'thenOps');
  checkOps(elseOps, 'elseOps');
  return new TxnOp(compares, (thenOps ?? []) as T, (elseOps ?? []) as E);
}

/**
 * Builders of txn operations.
 *
 * @example
 * ```ts
 * await etcd.txn()
 *   .if(cmp.missing('jobs/42/owner'))
 *   .then(op.put('jobs/42/owner', 'worker-a'), op.get('jobs/42'))
 *   .else(op.get('jobs/42/owner'))
 *   .commit();
 * ```
 */
export const op = { get, range, put, delete: del, txn } as const;
