// The read-ordering guard (option `ordering`): serializable reads never answer from a revision
// older than one this client has already seen. See docs/guarantees.md, "Read ordering".
import type { MethodDescriptor } from '../generated/methods.js';
import { etcdserverpb_KV } from '../generated/methods.js';
import type { etcdserverpb } from '../generated/protocol.js';

/** Settings of the read-ordering guard (the `ordering` option). */
export interface OrderingOptions {
  /**
   * How many stale answers one read may get before it fails with OrderViolationError. Each stale
   * answer moves the read (and the client) to another endpoint; once every endpoint was tried, the
   * next tries wait a retry backoff first, so a member that only lags a little can catch up.
   * Default: the number of endpoints.
   */
  readonly maxSwitches?: number;
}

interface Headed {
  readonly header?: { readonly revision?: bigint | null } | null;
}

/** The highest revision seen in this client's responses, and the check of serializable reads. */
export class OrderingGuard {
  /** Highest header revision of any response seen so far; 0n before the first. */
  seen = 0n;

  constructor(
    /** undefined: as many as there are endpoints at the time of the read. */
    readonly maxSwitches: number | undefined,
  ) {}

  /** Records the header revision of `response` (any service: every header is the store's). */
  observe(response: unknown): void {
    const revision = (response as Headed | undefined)?.header?.revision;
    if (typeof revision === 'bigint' && revision > this.seen) this.seen = revision;
  }

  /**
   * The revision a read of `method` with `request` must not answer below, or undefined when the
   * read is not guarded (writes and linearizable reads cannot go back in time).
   */
  floor(method: MethodDescriptor<unknown, unknown, 'unary'>, request: unknown): bigint | undefined {
    if (this.seen === 0n) return undefined;
    if (method === (etcdserverpb_KV.Range as unknown)) {
      return (request as etcdserverpb.RangeRequest.$Properties).serializable === true
        ? this.seen
        : undefined;
    }
    if (method === (etcdserverpb_KV.Txn as unknown)) {
      return isSerializableTxn(request as etcdserverpb.TxnRequest.$Properties)
        ? this.seen
        : undefined;
    }
    return undefined;
  }
}

/** The revision a response's header carries; 0n without one. */
export function headerRevision(response: unknown): bigint {
  return (response as Headed | undefined)?.header?.revision ?? 0n;
}

/** As etcd decides (etcdserver isTxnSerializable): every op of both branches a serializable range. */
function isSerializableTxn(request: etcdserverpb.TxnRequest.$Properties): boolean {
  const ops = [...(request.success ?? []), ...(request.failure ?? [])];
  return ops.every((op) => op.requestRange?.serializable === true);
}

/** Validates the `ordering` option. */
export function orderingGuardOf(
  option: boolean | OrderingOptions | undefined,
  invalid: (message: string) => Error,
): OrderingGuard | undefined {
  if (option === undefined || option === false) return undefined;
  if (option === true) return new OrderingGuard(undefined);
  if (option === null || typeof option !== 'object') {
    throw invalid('ordering must be true, false or { maxSwitches }');
  }
  const max = option.maxSwitches;
  if (max !== undefined && (!Number.isInteger(max) || max < 0)) {
    throw invalid(`ordering.maxSwitches must be an integer >= 0, got ${String(max)}`);
  }
  return new OrderingGuard(max);
}
