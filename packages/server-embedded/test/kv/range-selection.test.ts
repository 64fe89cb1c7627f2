// A limited range sorted by a revision or the version hands the store a selection hint, so that it
// makes key-values for the limit alone. The answer must be the one the whole range gives when
// read, filtered, sorted and cut: the same request against a view that ignores the hint.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { executeRange, sortKeyValues } from '../../src/kv/range.js';
import type { ReadView } from '../../src/mvcc/read-view.js';
import { MvccStore } from '../../src/mvcc/store.js';
import type { KeyValue } from '../../src/mvcc/types.js';
import { b } from '../support/bytes.js';

const change = fc.record({
  key: fc.constantFrom('l/a', 'l/b', 'l/c', 'l/d', 'l/e', 'm'),
  delete: fc.boolean(),
});

describe('range selection hint', () => {
  it('answers as the whole range read, filtered, sorted and cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(change, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 25 }),
        fc.record({
          sortTarget: fc.constantFrom(1, 2, 3),
          sortOrder: fc.constantFrom(0, 1, 2),
          limit: fc.integer({ min: 1, max: 4 }),
          // 0 (no filter) often: only then does the store's read limit apply.
          maxCreateRevision: fc.oneof(fc.constant(0), fc.nat({ max: 30 })),
          minModRevision: fc.oneof(fc.constant(0), fc.nat({ max: 30 })),
          revision: fc.nat({ max: 10 }),
        }),
        (writes, request) => {
          const store = new MvccStore();
          for (const changes of writes) {
            const write = store.write();
            for (const { key, delete: isDelete } of changes) {
              if (isDelete) write.deleteRange({ key: b(key) });
              else write.put(b(key), b(`${key}@${store.revision}`), 0n);
            }
            write.end();
          }
          const wire = {
            key: b('l/'),
            rangeEnd: b('l0'),
            ...request,
            limit: BigInt(request.limit),
            maxCreateRevision: BigInt(request.maxCreateRevision),
            minModRevision: BigInt(request.minModRevision),
            revision: BigInt(Math.min(request.revision, store.revision)),
          };
          const whole: ReadView = {
            revision: store.revision,
            compactRevision: store.compactRevision,
            range: (range, options) => store.range(range, { ...options, select: undefined }),
          };
          expect(executeRange(store, wire)).toEqual(executeRange(whole, wire));
        },
      ),
      { numRuns: 400 },
    );
  });

  it("leaves a target without an order to etcd's rule: the first limit + 1 keys, sorted", () => {
    // What etcd 3.4.23 answered in the differential suite (seed -748369291).
    const store = new MvccStore();
    for (const key of ['b/1', 'a', 'a/1']) {
      const write = store.write();
      write.put(b(key), b(''), 0n);
      write.end();
    }
    const response = executeRange(store, {
      key: b('a'),
      rangeEnd: new Uint8Array([0]),
      limit: 1n,
      sortTarget: 2, // MOD
      sortOrder: 0, // NONE
    });
    expect(response.kvs?.map((kv) => Buffer.from(kv.key ?? []).toString())).toEqual(['a']);
    expect([response.more, response.count]).toEqual([true, 3n]);
  });

  it('sorts a short list in place as the stable Array.prototype.sort orders it', () => {
    const kv = fc.record({
      key: fc.uint8Array({ maxLength: 2 }),
      value: fc.uint8Array({ maxLength: 2 }),
      createRevision: fc.integer({ min: 1, max: 4 }),
      modRevision: fc.integer({ min: 1, max: 4 }),
      version: fc.integer({ min: 1, max: 4 }),
      lease: fc.constant(0n),
    });
    fc.assert(
      fc.property(
        fc.array(kv, { maxLength: 12 }),
        fc.constantFrom(0, 1, 2, 3, 4),
        fc.constantFrom(0, 1, 2),
        (kvs: KeyValue[], sortTarget, sortOrder) => {
          const field = (['key', 'version', 'createRevision', 'modRevision', 'value'] as const)[
            sortTarget
          ]!;
          const value = (x: KeyValue) => x[field];
          const compare = (a: KeyValue, b: KeyValue) => {
            const [x, y] = [value(a), value(b)];
            return typeof x === 'number' && typeof y === 'number'
              ? x - y
              : Buffer.compare(x as Uint8Array, y as Uint8Array);
          };
          const order = sortTarget !== 0 && sortOrder === 0 ? 1 : sortOrder;
          const expected =
            order === 0 || (sortTarget === 0 && order === 1)
              ? [...kvs]
              : [...kvs].sort(order === 2 ? (a, b) => compare(b, a) : compare);
          expect(sortKeyValues([...kvs], { sortTarget, sortOrder })).toEqual(expected);
        },
      ),
      { numRuns: 500 },
    );
  });
});
