// Operations as one line of text each, in the spirit of etcdctl, for failure reports.
import * as fc from 'fast-check';
import type {
  CompareSpec,
  LeaseRef,
  Operation,
  RangeEnd,
  RangeOp,
  RevisionRef,
  TxnOp,
  TxnSpec,
} from './operations.js';

/** A key or value as a quoted string ("\0" shows as "\u0000"). */
export const quote = (text: string): string => JSON.stringify(text);

export function describeRevision(ref: RevisionRef): string {
  if (ref.offset === 0) return ref.from;
  return `${ref.from}${ref.offset > 0 ? '+' : ''}${ref.offset}`;
}

export function describeLease(ref: LeaseRef): string {
  return ref.kind === 'id' ? `${ref.id}` : `picked#${ref.index}`;
}

function describeKeys(key: string, end: RangeEnd): string {
  switch (end.kind) {
    case 'single':
      return quote(key);
    case 'from-key':
      return `[${quote(key)}, "\\u0000")`;
    case 'prefix':
      return `prefix ${quote(key)}`;
    case 'key':
      return `[${quote(key)}, ${quote(end.key)})`;
  }
}

function flags(entries: readonly (string | false | undefined)[]): string {
  const set = entries.filter((entry): entry is string => typeof entry === 'string');
  return set.length === 0 ? '' : ` ${set.join(' ')}`;
}

function describeRange(op: RangeOp): string {
  const sorted =
    op.sortOrder !== 'NONE' || op.sortTarget !== 'KEY'
      ? `sort=${op.sortTarget}/${op.sortOrder}`
      : undefined;
  const filter = (name: string, ref: RevisionRef | undefined) =>
    ref && `${name}=${describeRevision(ref)}`;
  return `range ${describeKeys(op.key, op.end)}${flags([
    op.limit !== 0 && `limit=${op.limit}`,
    sorted,
    op.revision && `rev=${describeRevision(op.revision)}`,
    op.keysOnly && 'keys_only',
    op.countOnly && 'count_only',
    filter('min_mod', op.minModRevision),
    filter('max_mod', op.maxModRevision),
    filter('min_create', op.minCreateRevision),
    filter('max_create', op.maxCreateRevision),
  ])}`;
}

function describeCompare(compare: CompareSpec): string {
  const operand = compare.operand;
  const value =
    operand.kind === 'VALUE'
      ? quote(operand.value)
      : operand.kind === 'VERSION'
        ? `${operand.version}`
        : operand.kind === 'LEASE'
          ? operand.lease
            ? describeLease(operand.lease)
            : '0'
          : describeRevision(operand.revision);
  const field = operand.kind === compare.target ? '' : ` (in the ${operand.kind} field)`;
  const keys = describeKeys(compare.key, compare.end);
  return `${compare.target.toLowerCase()}(${keys}) ${compare.result} ${value}${field}`;
}

function describeTxn(txn: TxnSpec): string {
  const list = (ops: readonly TxnOp[]) => `[${ops.map(describeTxnOp).join('; ')}]`;
  return `txn if [${txn.compare.map(describeCompare).join(', ')}] then ${list(txn.success)} else ${list(txn.failure)}`;
}

function describeTxnOp(op: TxnOp): string {
  return op.type === 'empty' ? 'empty-op' : describeOperation(op);
}

/** One operation as a line of text. */
export function describeOperation(op: Operation): string {
  switch (op.type) {
    case 'put':
      return `put ${quote(op.key)} = ${quote(op.value)}${flags([
        op.prevKv && 'prev_kv',
        op.lease && `lease=${describeLease(op.lease)}`,
        op.ignoreValue && 'ignore_value',
        op.ignoreLease && 'ignore_lease',
      ])}`;
    case 'delete':
      return `delete ${describeKeys(op.key, op.end)}${flags([op.prevKv && 'prev_kv'])}`;
    case 'range':
      return describeRange(op);
    case 'txn':
      return describeTxn(op.txn);
    case 'compact':
      return `compact ${describeRevision(op.revision)}`;
    case 'grant':
      return `lease grant ttl=${op.ttl}${op.id === 0n ? '' : ` id=${op.id}`}`;
    case 'revoke':
      return `lease revoke ${describeLease(op.lease)}`;
    case 'time-to-live':
      return `lease timetolive ${describeLease(op.lease)}${flags([op.keys && 'keys'])}`;
    case 'leases':
      return 'lease list';
  }
}

/** A generated sequence: the operations, printed one per numbered line by fast-check. */
export class Sequence {
  constructor(readonly operations: readonly Operation[]) {}

  [fc.toStringMethod](): string {
    return this.toString();
  }

  toString(): string {
    const lines = this.operations.map((op, i) => `  ${i + 1}. ${describeOperation(op)}`);
    return `\n${lines.join('\n')}\n`;
  }
}
