import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RequestOp } from '../../src/api/requests.js';
import { checkIntervals } from '../../src/kv/intervals.js';

const key = fc.constantFrom('a', 'b', 'c', 'd').map((k) => new TextEncoder().encode(k));
const rangeEnd = fc.constantFrom('', 'c', 'e', '\0').map((k) => new TextEncoder().encode(k));

/** Ops over a few keys: ranges, puts, deletes, nested txns, and ops carrying several requests. */
const { ops } = fc.letrec<{ ops: RequestOp[]; op: RequestOp }>((tie) => ({
  ops: fc.array(tie('op'), { maxLength: 4 }),
  op: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    key.map((k) => ({ requestRange: { key: k } })),
    key.map((k) => ({ requestPut: { key: k } })),
    fc.tuple(key, rangeEnd).map(([k, end]) => ({ requestDeleteRange: { key: k, rangeEnd: end } })),
    fc.tuple(key, key).map(([r, p]) => ({ requestRange: { key: r }, requestPut: { key: p } })),
    fc
      .tuple(tie('ops'), tie('ops'))
      .map(([success, failure]) => ({ requestTxn: { success, failure } })),
  ),
}));

/** The rules checked on every list, without the shortcut for lists with one put at most. */
function checkedInFull(list: RequestOp[]): string {
  // A delete makes a list the shortcut does not take; one of "z" touches no generated key.
  const padded = [...list, { requestDeleteRange: { key: new Uint8Array([0x7a]) } }];
  try {
    checkIntervals(padded);
    return 'ok';
  } catch (error) {
    return (error as Error).message;
  }
}

function checked(list: RequestOp[]): string {
  try {
    checkIntervals(list);
    return 'ok';
  } catch (error) {
    return (error as Error).message;
  }
}

describe('checkIntervals', () => {
  it('refuses exactly what the full check refuses, lists with one put at most included', () => {
    fc.assert(
      fc.property(ops, (list) => {
        expect(checked(list)).toBe(checkedInFull(list));
      }),
      { numRuns: 1000 },
    );
  });

  it('passes a lock txn list (an op carrying a range and a put is a range) and refuses a key put twice', () => {
    const put = (k: string) => ({ requestPut: { key: new TextEncoder().encode(k) } });
    const range = (k: string) => ({ requestRange: { key: new TextEncoder().encode(k) } });
    expect(checked([put('a'), range('a')])).toBe('ok');
    expect(
      checked([range('a'), { requestRange: { key: new Uint8Array([0x61]) }, ...put('a') }]),
    ).toBe('ok');
    expect(checked([put('a'), range('b'), put('a')])).toBe(
      'etcdserver: duplicate key given in txn request',
    );
  });
});
