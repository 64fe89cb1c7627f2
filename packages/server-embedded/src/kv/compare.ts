// Txn compares (etcd's applyCompare). A compare reads its key, or with range_end every key of the
// range, at the revision the txn starts from, and passes only if every key read passes. A missing
// key (or an empty range) is compared as a zero KeyValue: VALUE then never passes, while CREATE,
// MOD, VERSION and LEASE compare against 0, so `create_revision == 0` means "absent".

import { bigintOf, bytesOf, type Compare } from '../api/requests.js';
import { compareBytes } from '../bytes.js';
import type { ReadView } from '../mvcc/store.js';
import type { KeyValue } from '../mvcc/types.js';
import { keyRangeOf } from './range.js';

/** Compare.CompareTarget */
const Target = { VERSION: 0, CREATE: 1, MOD: 2, VALUE: 3, LEASE: 4 } as const;
/** Compare.CompareResult */
const Result = { EQUAL: 0, GREATER: 1, LESS: 2, NOT_EQUAL: 3 } as const;

const ABSENT: KeyValue = {
  key: new Uint8Array(0),
  value: new Uint8Array(0),
  createRevision: 0,
  modRevision: 0,
  version: 0,
  lease: 0n,
};

/** True when every compare passes against `view`. */
export function applyCompares(view: ReadView, compares: readonly Compare[]): boolean {
  return compares.every((compare) => applyCompare(view, compare));
}

function applyCompare(view: ReadView, compare: Compare): boolean {
  const { kvs } = view.range(keyRangeOf(compare));
  if (kvs.length === 0) {
    if ((compare.target ?? Target.VERSION) === Target.VALUE) return false;
    return compareKeyValue(compare, ABSENT);
  }
  return kvs.every((kv) => compareKeyValue(compare, kv));
}

function compareKeyValue(compare: Compare, kv: KeyValue): boolean {
  // The operand is read from the field matching the target; an operand in another field of the
  // oneof counts as unset (zero), as in etcd.
  let order = 0;
  switch (compare.target ?? Target.VERSION) {
    case Target.VALUE:
      order = compareBytes(kv.value, bytesOf(compare.value));
      break;
    case Target.CREATE:
      order = sign(BigInt(kv.createRevision) - bigintOf(compare.createRevision));
      break;
    case Target.MOD:
      order = sign(BigInt(kv.modRevision) - bigintOf(compare.modRevision));
      break;
    case Target.VERSION:
      order = sign(BigInt(kv.version) - bigintOf(compare.version));
      break;
    case Target.LEASE:
      order = sign(kv.lease - bigintOf(compare.lease));
      break;
  }
  switch (compare.result ?? Result.EQUAL) {
    case Result.EQUAL:
      return order === 0;
    case Result.NOT_EQUAL:
      return order !== 0;
    case Result.GREATER:
      return order > 0;
    case Result.LESS:
      return order < 0;
    default:
      // etcd lets an unknown result pass.
      return true;
  }
}

function sign(difference: bigint): number {
  return difference === 0n ? 0 : difference < 0n ? -1 : 1;
}
