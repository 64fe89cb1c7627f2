// The conditions of a txn. A compare checks one property of a key (or of every key in a range)
// against an operand; a txn's `then` branch runs only when all its compares hold.
import type { Bytes } from '../bytes.js';
import { InvalidArgumentError } from '../errors.js';
import type { etcdserverpb } from '../generated/protocol.js';
import { type Interval, type KeySelector, toInterval } from '../keys/key-range.js';
import type { KeyPrefix } from '../keys/namespace.js';
import { bytesArg, choiceArg, type LeaseRef, leaseArg } from '../validate.js';

/** How a key's property is compared with the operand. Values compare as bytes. */
export type CompareOperator = '==' | '!=' | '>' | '<';

/** The property of a key a compare looks at. */
export type CompareTarget = 'value' | 'version' | 'createRevision' | 'modRevision' | 'lease';

/**
 * One condition of a txn, built with the {@link cmp} functions.
 *
 * On a missing key, a `value` compare is always false, and the other targets compare against 0n
 * (so `createRevision == 0n` means "the key does not exist"). With a range, every key in it must
 * satisfy the condition; an empty range behaves like a missing key.
 */
export class Compare {
  private constructor(
    /** The property compared. */
    readonly target: CompareTarget,
    /** How it is compared. */
    readonly operator: CompareOperator,
    /** The key or keys compared, before any namespace prefix. */
    readonly keys: Interval,
    /** What the property is compared with: bytes for `value`, else a bigint. */
    readonly operand: Uint8Array | bigint,
  ) {}

  /** Validates and builds a compare. Prefer the {@link cmp} functions. */
  static of(
    target: CompareTarget,
    key: KeySelector,
    operator: CompareOperator,
    operand: Bytes | bigint | LeaseRef,
  ): Compare {
    if (operator === undefined) throw new InvalidArgumentError('operator is required');
    const checked = choiceArg(operator, operators, '==', 'operator');
    let value: Uint8Array | bigint;
    if (target === 'value') value = bytesArg(operand, 'value');
    else if (target === 'lease') value = leaseArg(operand, 'lease');
    else if (typeof operand === 'bigint') value = operand;
    else throw new InvalidArgumentError(`the ${target} to compare with must be a bigint`);
    return new Compare(target, checked, toInterval(key), value);
  }
}

const operators = ['==', '!=', '>', '<'] as const;
// Enum values of etcdserverpb.Compare.CompareResult / CompareTarget.
const resultCode = { '==': 0, '>': 1, '<': 2, '!=': 3 } as const;
const targetCode = { version: 0, createRevision: 1, modRevision: 2, value: 3, lease: 4 } as const;

/** The protocol Compare for `compare` inside namespace `ns`. */
export function encodeCompare(compare: Compare, ns: KeyPrefix): etcdserverpb.Compare.$Properties {
  const { key, rangeEnd } = ns.interval(compare.keys);
  const message: etcdserverpb.Compare.$Properties = {
    result: resultCode[compare.operator],
    target: targetCode[compare.target],
    key,
    rangeEnd,
  };
  // The operand lives in a oneof: set exactly the field of the target, even when it is empty or
  // zero, so the server compares against it rather than against a missing field.
  if (compare.target === 'value') message.value = compare.operand as Uint8Array;
  else message[compare.target] = compare.operand as bigint;
  return message;
}

/** Compares the value (as bytes) of `key`. Always false for a missing key. */
function value(key: KeySelector, operator: CompareOperator, value: Bytes): Compare {
  return Compare.of('value', key, operator, value);
}

/** Compares the version (puts since creation; 0n when missing) of `key`. */
function version(key: KeySelector, operator: CompareOperator, version: bigint): Compare {
  return Compare.of('version', key, operator, version);
}

/** Compares the creation revision (0n when missing) of `key`. */
function createRevision(key: KeySelector, operator: CompareOperator, revision: bigint): Compare {
  return Compare.of('createRevision', key, operator, revision);
}

/** Compares the revision of the last put (0n when missing) of `key`. */
function modRevision(key: KeySelector, operator: CompareOperator, revision: bigint): Compare {
  return Compare.of('modRevision', key, operator, revision);
}

/** Compares the lease id (0n when none or missing) of `key`. */
function lease(key: KeySelector, operator: CompareOperator, lease: LeaseRef): Compare {
  return Compare.of('lease', key, operator, lease);
}

/**
 * True when `key` exists (`createRevision > 0n`). For a range: when the range holds at least one
 * key.
 */
function exists(key: KeySelector): Compare {
  return Compare.of('createRevision', key, '>', 0n);
}

/** True when `key` does not exist (`createRevision == 0n`). For a range: when it holds no key. */
function missing(key: KeySelector): Compare {
  return Compare.of('createRevision', key, '==', 0n);
}

/**
 * Builders of txn conditions. The first argument is a key, or a {@link KeyRange} to check every
 * key in a range.
 *
 * @example
 * ```ts
 * cmp.modRevision('config/a', '==', kv.modRevision)
 * cmp.value('config/mode', '!=', 'readonly')
 * cmp.missing('locks/orders')
 * cmp.createRevision({ prefix: 'locks/' }, '<', 10n)
 * ```
 */
export const cmp = {
  value,
  version,
  createRevision,
  modRevision,
  lease,
  exists,
  missing,
} as const;
