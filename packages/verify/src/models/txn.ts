// Multi-key transactions as one model: compares on values, then reads and writes of several keys.
import type { Model } from '../checker/model.js';
import { partitionBy } from '../checker/partition.js';
import type { Operation } from '../history.js';

/** One operation inside a txn branch. */
export type TxnStep =
  | { readonly type: 'get'; readonly key: string }
  | { readonly type: 'put'; readonly key: string; readonly value: string }
  | { readonly type: 'delete'; readonly key: string };

/** A txn: if every compare holds, `success` runs, otherwise `failure`, atomically. */
export interface TxnInput {
  /** `value(key) == expect`; `expect: undefined` means the key is absent. */
  readonly compares: readonly { readonly key: string; readonly expect: string | undefined }[];
  readonly success: readonly TxnStep[];
  readonly failure: readonly TxnStep[];
}

/** The answer to a {@link TxnInput}: which branch ran, and what its gets read, in order. */
export interface TxnOutput {
  readonly succeeded: boolean;
  readonly reads: readonly (string | undefined)[];
}

/** The state of the keys a txn history touches: present keys and their values. */
export type TxnState = ReadonlyMap<string, string>;

/** An operation of a txn history. */
export type TxnOperation = Operation<TxnInput, TxnOutput>;

/**
 * The multi-key txn model: a history is split only into groups of operations whose key sets
 * connect (a txn on `a` and `b` joins the partitions of `a` and `b`), since a txn's atomicity
 * spans every key it touches.
 */
export function txnModel(): Model<TxnState, TxnInput, TxnOutput> {
  return {
    name: 'txn',
    init: () => new Map(),
    step: stepTxn,
    hash: (s) => {
      // Values of append-only workloads grow long: length and tail tell them apart cheaply.
      let h = '';
      for (const [k, v] of [...s].sort((a, b) => (a[0] < b[0] ? -1 : 1)))
        h += `${k}:${v.length}:${v.slice(-12)};`;
      return h;
    },
    equal: (a, b) => {
      if (a.size !== b.size) return false;
      for (const [k, v] of a) if (b.get(k) !== v) return false;
      return true;
    },
    partition: partitionByConnectedKeys,
    prepare: prepareTxns,
    selfContained: (ops) => {
      const written = new Set<string>();
      for (const op of ops)
        for (const s of [...op.input.success, ...op.input.failure])
          if (s.type === 'put') written.add(`${s.key}\u0000${s.value}`);
      return ops.every((op) =>
        observed(op).every(([key, value]) => written.has(`${key}\u0000${value}`)),
      );
    },
    describe: describeTxn,
  };
}

/** Every key an operation compares, reads or writes. */
export function txnKeys(input: TxnInput): Set<string> {
  const keys = new Set<string>();
  for (const c of input.compares) keys.add(c.key);
  for (const s of input.success) keys.add(s.key);
  for (const s of input.failure) keys.add(s.key);
  return keys;
}

function stepTxn(
  s: TxnState,
  input: TxnInput,
  output: TxnOutput | undefined,
): TxnState | undefined {
  const holds = input.compares.every((c) => s.get(c.key) === c.expect);
  if (output !== undefined && output.succeeded !== holds) return undefined;
  const branch = holds ? input.success : input.failure;
  let next: Map<string, string> | undefined;
  let read = 0;
  for (const step of branch) {
    const current = next ?? s;
    if (step.type === 'get') {
      if (output !== undefined && output.reads[read] !== current.get(step.key)) return undefined;
      read++;
    } else {
      next ??= new Map(s);
      if (step.type === 'put') next.set(step.key, step.value);
      else next.delete(step.key);
    }
  }
  if (output !== undefined && output.reads.length !== read) return undefined;
  return next ?? s;
}

function partitionByConnectedKeys(history: readonly TxnOperation[]): TxnOperation[][] {
  const parent = new Map<string, string>();
  const find = (k: string): string => {
    let root = k;
    while (parent.get(root) !== root) root = parent.get(root)!;
    parent.set(k, root);
    return root;
  };
  const keysOf = history.map((op) => [...txnKeys(op.input)]);
  for (const keys of keysOf) {
    for (const k of keys) if (!parent.has(k)) parent.set(k, k);
    for (const k of keys.slice(1)) parent.set(find(k), find(keys[0]!));
  }
  return partitionBy(history, (_, i) => {
    const first = keysOf[i]![0];
    return first === undefined ? '' : find(first);
  });
}

/** The (key, value) pairs an ok operation saw present: its compares if it succeeded, its reads. */
function observed(op: TxnOperation): [string, string][] {
  if (op.status !== 'ok' || op.output === undefined) return [];
  const { input, output } = op;
  const seen: [string, string][] = [];
  if (output.succeeded)
    for (const c of input.compares) if (c.expect !== undefined) seen.push([c.key, c.expect]);
  let read = 0;
  for (const step of output.succeeded ? input.success : input.failure) {
    if (step.type !== 'get') continue;
    const value = output.reads[read++];
    if (value !== undefined) seen.push([step.key, value]);
  }
  return seen;
}

/**
 * With unique written values and failure branches that read every compared key, an unknown txn
 * whose writes nobody saw is left out, and one whose write was seen must take effect before the
 * first operation that saw it ended (see the register model's prepare for why that is sound).
 */
function prepareTxns(ops: readonly TxnOperation[]): TxnOperation[] {
  const seenBy = new Map<string, number>();
  let blindFailures = false;
  const saw = (key: string, value: string, end: number) => {
    const at = `${key}\u0000${value}`;
    seenBy.set(at, Math.min(end, seenBy.get(at) ?? Number.POSITIVE_INFINITY));
  };
  for (const op of ops) {
    for (const [key, value] of observed(op)) saw(key, value, op.end);
    const output = op.output;
    if (op.status !== 'ok' || output === undefined || output.succeeded) continue;
    const readKeys = new Set(op.input.failure.filter((s) => s.type === 'get').map((s) => s.key));
    if (op.input.compares.some((c) => !readKeys.has(c.key))) blindFailures = true;
  }
  if (blindFailures) return ops.slice();
  const out: TxnOperation[] = [];
  for (const op of ops) {
    if (op.status !== 'unknown') {
      out.push(op);
      continue;
    }
    const steps = [...op.input.success, ...op.input.failure];
    if (steps.some((s) => s.type === 'delete')) {
      out.push(op);
      continue;
    }
    const writes = steps.filter((s) => s.type === 'put');
    // Only reads: it changed nothing.
    if (writes.length === 0) continue;
    const seen = Math.min(
      ...writes.map((w) => seenBy.get(`${w.key}\u0000${w.value}`) ?? Number.POSITIVE_INFINITY),
    );
    if (Number.isFinite(seen)) out.push(seen < op.end ? { ...op, end: seen } : op);
  }
  return out;
}

function describeTxn(op: TxnOperation): string {
  const show = (v: string | undefined) => (v === undefined ? 'nil' : JSON.stringify(tail(v)));
  const steps = (branch: readonly TxnStep[]) =>
    branch
      .map((s) =>
        s.type === 'get'
          ? `r ${s.key}`
          : s.type === 'put'
            ? `w ${s.key}=${show(s.value)}`
            : `d ${s.key}`,
      )
      .join(', ');
  const compares = op.input.compares.map((c) => `${c.key}==${show(c.expect)}`).join(' && ');
  const request = `txn ${compares ? `if ${compares} ` : ''}then [${steps(op.input.success)}]${
    op.input.failure.length > 0 ? ` else [${steps(op.input.failure)}]` : ''
  }`;
  if (op.status !== 'ok' || op.output === undefined) return `${request} -> ${op.status}`;
  return `${request} -> ${op.output.succeeded ? 'then' : 'else'} reads [${op.output.reads.map(show).join(', ')}]`;
}

/** Long list values are shown by their last elements. */
function tail(value: string): string {
  return value.length <= 24 ? value : `...${value.slice(-21)}`;
}
