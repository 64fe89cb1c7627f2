import { describe, expect, it } from 'vitest';
import { checkLinearizable } from '../src/checker/check.js';
import { type TxnInput, type TxnOutput, txnModel } from '../src/models/txn.js';
import { history } from './histories.js';

type Row = Parameters<typeof history<TxnInput, TxnOutput>>[0][number];
const write = (p: number, start: number, end: number, values: Record<string, string>): Row => ({
  p,
  start,
  end,
  input: {
    compares: [],
    success: Object.entries(values).map(([key, value]) => ({ type: 'put', key, value })),
    failure: [],
  },
  output: { succeeded: true, reads: [] },
});
const read = (
  p: number,
  start: number,
  end: number,
  values: Record<string, string | undefined>,
): Row => ({
  p,
  start,
  end,
  input: {
    compares: [],
    success: Object.keys(values).map((key) => ({ type: 'get', key })),
    failure: [],
  },
  output: { succeeded: true, reads: Object.values(values) },
});
/** Appends `element` to `key` if it still holds `seen`; else reads it. */
const append = (
  p: number,
  start: number,
  end: number | undefined,
  key: string,
  seen: string | undefined,
  element: string,
  output?: TxnOutput,
): Row => ({
  p,
  start,
  end,
  input: {
    compares: [{ key, expect: seen }],
    success: [{ type: 'put', key, value: seen === undefined ? element : `${seen},${element}` }],
    failure: [{ type: 'get', key }],
  },
  output,
  status: output === undefined ? 'unknown' : 'ok',
});
const check = (rows: Row[]) => checkLinearizable(txnModel(), history(rows));

describe('txn model', () => {
  it('accepts atomic multi-key writes read together', () => {
    const result = check([
      write(0, 0, 1, { a: '1', b: '1' }),
      read(1, 2, 3, { a: '1', b: '1' }),
      read(2, 0, 0.5, { a: undefined, b: undefined }),
    ]);
    expect(result.valid).toBe(true);
    expect(result.partitions).toBe(1);
  });

  it('does not split a history its txns connect: a torn read is caught only as a whole', () => {
    // The reader sees the txn's write of a but not its write of b: each key alone is fine.
    const rows = [write(0, 0, 10, { a: '1', b: '1' }), read(1, 2, 3, { a: '1', b: undefined })];
    const result = check(rows);
    expect(result.partitions).toBe(1);
    expect(result.valid).toBe(false);
    expect(result.anomalies[0]!.ops.map((op) => op.id)).toEqual([0, 1]);
    // Split by key (what P-compositionality must not do here), each half is linearizable.
    const perKey = { ...txnModel(), partition: undefined };
    for (const key of ['a', 'b']) {
      const projected = history<TxnInput, TxnOutput>(
        rows.map((row) => {
          const keep = row.input.success
            .map((s, i) => [s, i] as const)
            .filter(([s]) => s.key === key);
          const reads = row.output!.reads;
          return {
            ...row,
            input: { ...row.input, success: keep.map(([s]) => s) },
            output: {
              succeeded: true,
              reads: row.input.success[0]!.type === 'get' ? keep.map(([, i]) => reads[i]) : [],
            },
          };
        }),
      );
      expect(checkLinearizable(perKey, projected).valid).toBe(true);
    }
  });

  it('splits keys no txn connects', () => {
    const result = check([
      write(0, 0, 1, { a: '1', b: '1' }),
      write(1, 0, 1, { c: '1' }),
      read(2, 2, 3, { c: '1' }),
      read(2, 4, 5, { a: '1', b: '1' }),
    ]);
    expect(result.partitions).toBe(2);
    expect(result.valid).toBe(true);
  });

  it('rejects a lost update: two appends that both succeeded from the same list', () => {
    const result = check([
      append(0, 0, 1, 'a', undefined, 'x', { succeeded: true, reads: [] }),
      append(1, 2, 5, 'a', 'x', 'y', { succeeded: true, reads: [] }),
      append(2, 2, 5, 'a', 'x', 'z', { succeeded: true, reads: [] }),
    ]);
    expect(result.valid).toBe(false);
    expect(result.anomalies[0]!.ops).toHaveLength(3);
  });

  it('checks failed compares against what the else branch read', () => {
    const first = append(0, 0, 1, 'a', undefined, 'x', { succeeded: true, reads: [] });
    expect(
      check([first, append(1, 2, 3, 'a', undefined, 'y', { succeeded: false, reads: ['x'] })])
        .valid,
    ).toBe(true);
    // It failed although a held exactly what it expected.
    expect(
      check([first, append(1, 2, 3, 'a', 'x', 'y', { succeeded: false, reads: ['x'] })]).valid,
    ).toBe(false);
  });

  it('lets an unknown append take effect once, late, or never', () => {
    const first = append(0, 0, 1, 'a', undefined, 'x', { succeeded: true, reads: [] });
    const lost = append(1, 2, undefined, 'a', 'x', 'y');
    expect(check([first, lost, read(2, 50, 51, { a: 'x,y' })]).valid).toBe(true);
    expect(check([first, lost, read(2, 50, 51, { a: 'x' })]).valid).toBe(true);
    expect(
      check([first, lost, read(2, 50, 51, { a: 'x,y' }), read(2, 52, 53, { a: 'x' })]).valid,
    ).toBe(false);
    // Seen before it was invoked.
    expect(check([first, read(2, 1.5, 1.8, { a: 'x,y' }), lost]).valid).toBe(false);
  });
});
