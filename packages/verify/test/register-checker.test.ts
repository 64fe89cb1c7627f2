import { describe, expect, it } from 'vitest';
import { checkLinearizable } from '../src/checker/check.js';
import type { Model } from '../src/checker/model.js';
import { type RegisterInput, type RegisterOutput, registerModel } from '../src/models/register.js';
import { history, linearizableRegisterHistory } from './histories.js';

type Row = Parameters<typeof history<RegisterInput, RegisterOutput>>[0][number];
const get = (
  p: number,
  start: number,
  end: number,
  value: string | undefined,
  modRevision: bigint,
  key = 'x',
): Row => ({
  p,
  start,
  end,
  input: { type: 'get', key },
  output: { type: 'get', value, modRevision },
});
const put = (
  p: number,
  start: number,
  end: number,
  value: string,
  revision: bigint,
  key = 'x',
): Row => ({
  p,
  start,
  end,
  input: { type: 'put', key, value },
  output: { type: 'put', revision },
});
const cas = (
  p: number,
  start: number,
  end: number,
  expect: string | undefined,
  value: string,
  succeeded: boolean,
  revision: bigint,
): Row => ({
  p,
  start,
  end,
  input: { type: 'cas', key: 'x', expect, value },
  output: { type: 'cas', succeeded, revision },
});
const unknownPut = (p: number, start: number, value: string, key = 'x'): Row => ({
  p,
  start,
  input: { type: 'put', key, value },
  status: 'unknown',
});
const check = (rows: Row[]) => checkLinearizable(registerModel(), history(rows));

describe('register model', () => {
  it('accepts a sequential history and a read concurrent with a write that sees either value', () => {
    expect(check([put(0, 0, 1, 'a', 2n), put(0, 2, 3, 'b', 3n), get(1, 4, 5, 'b', 3n)]).valid).toBe(
      true,
    );
    // The read overlaps the write of b: a is fine, so is b.
    expect(check([put(0, 0, 1, 'a', 2n), put(0, 2, 6, 'b', 3n), get(1, 3, 4, 'a', 2n)]).valid).toBe(
      true,
    );
    expect(check([put(0, 0, 1, 'a', 2n), put(0, 2, 6, 'b', 3n), get(1, 3, 4, 'b', 3n)]).valid).toBe(
      true,
    );
    expect(check([get(0, 0, 1, undefined, 0n)]).valid).toBe(true);
  });

  it('rejects a stale read and reports exactly the conflicting operations', () => {
    const result = check([
      put(0, 0, 1, 'a', 2n),
      get(2, 0.5, 1.5, 'a', 2n),
      put(0, 2, 3, 'b', 3n),
      get(1, 4, 5, 'a', 2n),
      put(0, 6, 7, 'c', 4n),
    ]);
    expect(result.valid).toBe(false);
    expect(result.anomalies).toHaveLength(1);
    const anomaly = result.anomalies[0]!;
    expect(anomaly.minimal).toBe(true);
    expect(anomaly.ops.map((op) => op.id)).toEqual([0, 2, 3]);
    expect(anomaly.timeline).toEqual([
      'p0 [0.0 .. 1.0] put x="a" -> ok (rev 2)',
      'p0 [2.0 .. 3.0] put x="b" -> ok (rev 3)',
      'p1 [4.0 .. 5.0] get x -> "a" (mod 2)',
    ]);
  });

  it('rejects a value that goes back: b is read, then a again with no write of a in between', () => {
    expect(
      check([
        put(0, 0, 1, 'a', 2n),
        put(1, 0, 10, 'b', 3n),
        get(2, 2, 3, 'b', 3n),
        get(2, 4, 5, 'a', 2n),
      ]).valid,
    ).toBe(false);
  });

  it('lets an unknown write take effect late, or never, but only once', () => {
    // Seen long after the client gave up on it.
    expect(
      check([put(0, 0, 1, 'a', 2n), unknownPut(1, 2, 'b'), get(2, 100, 101, 'b', 3n)]).valid,
    ).toBe(true);
    // Never applied.
    expect(
      check([put(0, 0, 1, 'a', 2n), unknownPut(1, 2, 'b'), get(2, 100, 101, 'a', 2n)]).valid,
    ).toBe(true);
    // Applied, then gone with no other write: not possible.
    expect(
      check([
        put(0, 0, 1, 'a', 2n),
        unknownPut(1, 2, 'b'),
        get(2, 100, 101, 'b', 3n),
        get(2, 102, 103, 'a', 2n),
      ]).valid,
    ).toBe(false);
    // It cannot take effect before it was invoked.
    expect(check([get(2, 0, 1, 'b', 3n), unknownPut(1, 2, 'b')]).valid).toBe(false);
  });

  it('ignores failed operations: they never took effect', () => {
    const rows: Row[] = [
      put(0, 0, 1, 'a', 2n),
      { p: 1, start: 2, end: 3, input: { type: 'put', key: 'x', value: 'b' }, status: 'fail' },
      get(2, 4, 5, 'a', 2n),
    ];
    expect(check(rows).valid).toBe(true);
  });

  it('allows one of two concurrent compare-and-sets from the same value to succeed, not both', () => {
    const base = put(0, 0, 1, 'a', 2n);
    expect(
      check([base, cas(1, 2, 5, 'a', 'b', true, 3n), cas(2, 2, 5, 'a', 'c', false, 3n)]).valid,
    ).toBe(true);
    const both = check([base, cas(1, 2, 5, 'a', 'b', true, 3n), cas(2, 2, 5, 'a', 'c', true, 4n)]);
    expect(both.valid).toBe(false);
    expect(both.anomalies[0]!.ops.map((op) => op.id)).toEqual([0, 1, 2]);
    // A CAS that failed although the value matched, and nothing else could have changed it.
    expect(check([base, cas(1, 2, 3, 'a', 'b', false, 2n)]).valid).toBe(false);
  });

  it('compares mod_revision and requires write revisions to grow', () => {
    const casRev = (expectRevision: bigint, succeeded: boolean, revision: bigint): Row => ({
      p: 1,
      start: 2,
      end: 3,
      input: { type: 'casRevision', key: 'x', expectRevision, expectValue: 'a', value: 'b' },
      output: { type: 'cas', succeeded, revision },
    });
    expect(check([put(0, 0, 1, 'a', 2n), casRev(2n, true, 3n), get(0, 4, 5, 'b', 3n)]).valid).toBe(
      true,
    );
    expect(check([put(0, 0, 1, 'a', 2n), casRev(7n, true, 8n)]).valid).toBe(false);
    expect(check([put(0, 0, 1, 'a', 5n), put(0, 2, 3, 'b', 4n)]).valid).toBe(false);
    // A read must report the revision of the write it sees.
    expect(check([put(0, 0, 1, 'a', 5n), get(0, 2, 3, 'a', 6n)]).valid).toBe(false);
  });

  it('checks each key on its own (P-compositionality) and reports each bad key', () => {
    const result = check([
      put(0, 0, 1, 'a', 2n, 'x'),
      put(0, 0, 1, 'a', 3n, 'y'),
      put(0, 2, 3, 'b', 4n, 'x'),
      get(1, 4, 5, 'a', 2n, 'x'),
      get(1, 4, 5, 'a', 3n, 'y'),
      put(0, 6, 7, 'b', 5n, 'y'),
      get(1, 8, 9, 'a', 3n, 'y'),
    ]);
    expect(result.partitions).toBe(2);
    expect(result.valid).toBe(false);
    expect(result.anomalies.map((a) => a.ops.map((op) => `${op.input.key}${op.id}`))).toEqual([
      ['x0', 'x2', 'x3'],
      ['y1', 'y5', 'y6'],
    ]);
  });

  it('answers unknown when the time budget runs out', () => {
    // 40 concurrent additions and a total no subset makes: 2^40 sets of additions to rule out.
    const adder: Model<number, number, number> = {
      name: 'adder',
      init: () => 0,
      step: (sum, add, total) => (add === 0 ? (sum === total ? sum : undefined) : sum + add),
      hash: (sum) => String(sum),
      equal: (a, b) => a === b,
      describe: (op) => `add ${op.input}`,
    };
    const rows = Array.from({ length: 40 }, (_, i) => ({
      p: i,
      start: 0,
      end: 100,
      input: 1 + (i % 2),
      output: 0,
    }));
    rows.push({ p: 40, start: 200, end: 201, input: 0, output: -1 });
    const result = checkLinearizable(adder, history(rows), { timeBudgetMs: 50 });
    expect(result.valid).toBe('unknown');
    expect(result.undecided).toBe(1);
    expect(result.anomalies).toEqual([]);
  });

  it('decides a generated 10,000-operation history, and finds the one stale read planted in it', () => {
    const ops = linearizableRegisterHistory(10_000, { seed: 7 });
    expect(ops.filter((op) => op.status === 'unknown').length).toBeGreaterThan(10);
    const valid = checkLinearizable(registerModel(), ops);
    expect(valid.valid).toBe(true);
    expect(valid.partitions).toBe(3);

    // Plant a read, long after the fact, of the first value ever written to k0.
    const first = ops.find(
      (op) => op.input.key === 'k0' && op.input.type === 'put' && op.status === 'ok',
    )!;
    const lastEnd = Math.max(...ops.filter((op) => op.status === 'ok').map((op) => op.end));
    const input = first.input as { key: string; value: string };
    const stale = {
      id: ops.length,
      process: 99,
      input: { type: 'get' as const, key: 'k0' },
      output: {
        type: 'get' as const,
        value: input.value,
        modRevision: (first.output as { revision: bigint }).revision,
      },
      status: 'ok' as const,
      start: lastEnd + 10,
      end: lastEnd + 11,
    };
    // The smallest counterexample is searched for within a time budget: 5 s by default, which a
    // loaded run can spend before reaching it, so the size asserted below gets more.
    const invalid = checkLinearizable(registerModel(), [...ops, stale], {
      minimizeBudgetMs: 60_000,
    });
    expect(invalid.valid).toBe(false);
    expect(invalid.anomalies).toHaveLength(1);
    const found = invalid.anomalies[0]!.ops;
    expect(found.map((op) => op.id)).toContain(stale.id);
    expect(found.map((op) => op.id)).toContain(first.id);
    expect(found.length).toBeLessThanOrEqual(4);
  });
});
