// The operations a differential sequence is made of: plain data, so that fast-check can shrink
// them and a failure can print them. Revisions and leases are symbolic (relative to the
// sequence's own state), and are resolved against each server when the operation runs.

/** Keys the sequences use: few, so that operations collide, with a prefix family and "\0". */
export const KEYS = ['a', 'a/1', 'a/2', 'b', 'b/1', 'c', 'd', '\0'] as const;

/** Values puts write and compares compare against. */
export const VALUES = ['', 'x', 'y', 'xy'] as const;

/** Explicit lease ids the sequences grant and refer to (negative and the largest too). */
export const LEASE_IDS = [1n, -2n, 0x7fff_ffff_ffff_ffffn] as const;

/** TTLs the sequences grant: long, so that nothing expires during a run; the last is too large. */
export const LEASE_TTLS = [60, 600, 3600, 9_000_000_000, 9_000_000_001] as const;

/**
 * `--max-txn-ops` of both servers: small, so that random txns reach the limit (and nested txns
 * the budget their parents leave) without hundreds of ops.
 */
export const MAX_TXN_OPS = 10;

/**
 * A revision relative to the sequence's state when the operation runs: the current revision, or
 * the last compaction's (1 before any), plus an offset. May resolve to 0 or below on purpose.
 */
export interface RevisionRef {
  readonly from: 'current' | 'compacted';
  readonly offset: number;
}

/** A lease: an explicit id, or the n-th lease the server picked an id for in this sequence. */
export type LeaseRef =
  | { readonly kind: 'id'; readonly id: bigint }
  | { readonly kind: 'picked'; readonly index: number };

/** How a range or delete ends: one key, every key from it on ("\0"), a prefix, or up to a key. */
export type RangeEnd =
  | { readonly kind: 'single' }
  | { readonly kind: 'from-key' }
  | { readonly kind: 'prefix' }
  | { readonly kind: 'key'; readonly key: string };

export interface PutOp {
  readonly type: 'put';
  /** `''` is the empty key, which etcd refuses. */
  readonly key: string;
  readonly value: string;
  readonly prevKv: boolean;
  readonly lease: LeaseRef | undefined;
  readonly ignoreValue: boolean;
  readonly ignoreLease: boolean;
}

export interface DeleteOp {
  readonly type: 'delete';
  readonly key: string;
  readonly end: RangeEnd;
  readonly prevKv: boolean;
}

export const SORT_ORDERS = ['NONE', 'ASCEND', 'DESCEND'] as const;
export const SORT_TARGETS = ['KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE'] as const;
export type SortOrderName = (typeof SORT_ORDERS)[number];
export type SortTargetName = (typeof SORT_TARGETS)[number];

export interface RangeOp {
  readonly type: 'range';
  readonly key: string;
  readonly end: RangeEnd;
  readonly limit: number;
  readonly sortOrder: SortOrderName;
  readonly sortTarget: SortTargetName;
  /** Undefined: revision 0, the current one. */
  readonly revision: RevisionRef | undefined;
  readonly keysOnly: boolean;
  readonly countOnly: boolean;
  readonly minModRevision: RevisionRef | undefined;
  readonly maxModRevision: RevisionRef | undefined;
  readonly minCreateRevision: RevisionRef | undefined;
  readonly maxCreateRevision: RevisionRef | undefined;
}

export const COMPARE_RESULTS = ['EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL'] as const;
export type CompareResultName = (typeof COMPARE_RESULTS)[number];
export type CompareTargetName = 'VERSION' | 'CREATE' | 'MOD' | 'VALUE' | 'LEASE';

/** What a compare compares with; its kind is normally the target's, sometimes another field. */
export type CompareOperand =
  | { readonly kind: 'VERSION'; readonly version: number }
  | { readonly kind: 'CREATE'; readonly revision: RevisionRef }
  | { readonly kind: 'MOD'; readonly revision: RevisionRef }
  | { readonly kind: 'VALUE'; readonly value: string }
  | { readonly kind: 'LEASE'; readonly lease: LeaseRef | undefined };

export interface CompareSpec {
  readonly key: string;
  readonly end: RangeEnd;
  readonly target: CompareTargetName;
  readonly result: CompareResultName;
  readonly operand: CompareOperand;
}

/** An op inside a txn: a put, delete, range, nested txn, or an empty RequestOp. */
export type TxnOp = PutOp | DeleteOp | RangeOp | NestedTxnOp | { readonly type: 'empty' };

export interface TxnSpec {
  readonly compare: readonly CompareSpec[];
  readonly success: readonly TxnOp[];
  readonly failure: readonly TxnOp[];
}

export interface NestedTxnOp {
  readonly type: 'txn';
  readonly txn: TxnSpec;
}

export interface CompactOp {
  readonly type: 'compact';
  readonly revision: RevisionRef;
}

export interface GrantOp {
  readonly type: 'grant';
  /** 0n lets the server pick. */
  readonly id: bigint;
  readonly ttl: number;
}

export interface RevokeOp {
  readonly type: 'revoke';
  readonly lease: LeaseRef;
}

export interface TimeToLiveOp {
  readonly type: 'time-to-live';
  readonly lease: LeaseRef;
  readonly keys: boolean;
}

export interface LeasesOp {
  readonly type: 'leases';
}

/** One step of a sequence: one request to each server. */
export type Operation =
  | PutOp
  | DeleteOp
  | RangeOp
  | NestedTxnOp
  | CompactOp
  | GrantOp
  | RevokeOp
  | TimeToLiveOp
  | LeasesOp;
