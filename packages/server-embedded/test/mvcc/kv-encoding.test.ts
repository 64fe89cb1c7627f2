import { mvccpb } from '@etcdkit/client/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  int64Size,
  type KeyValueFields,
  keyValueSize,
  ProtoWriter,
  writeKeyValue,
} from '../../src/mvcc/kv-encoding.js';

const revision = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2 ** 31 }), fc.maxSafeNat());
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });

describe('kv-encoding', () => {
  it('writes the bytes protobufjs writes for the same KeyValue', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 200 }),
        fc.uint8Array({ maxLength: 300 }),
        fc.nat({ max: 40 }),
        revision,
        revision,
        revision,
        int64,
        (key, chunk, offset, createRevision, modRevision, version, lease) => {
          const start = Math.min(offset, chunk.length);
          const valueLength = chunk.length - start;
          const fields: KeyValueFields = {
            key,
            createRevision,
            modRevision,
            version,
            values: chunk,
            valueOffset: start,
            valueLength,
            lease,
          };
          const expected = mvccpb.KeyValue.encode({
            key,
            createRevision: BigInt(createRevision),
            modRevision: BigInt(modRevision),
            version: BigInt(version),
            value: chunk.subarray(start),
            lease,
          }).finish();
          // Written after other bytes, into a buffer that must grow.
          const out = new ProtoWriter(1);
          out.reserve(3);
          out.varint(300);
          out.reserve(keyValueSize(fields));
          writeKeyValue(out, fields);
          expect(keyValueSize(fields)).toBe(expected.length);
          expect([...out.bytes.subarray(2, out.length)]).toEqual([...expected]);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('sizes an int64 as its varint, negative ones at 10 bytes', () => {
    expect(int64Size(0n)).toBe(1);
    expect(int64Size(127n)).toBe(1);
    expect(int64Size(128n)).toBe(2);
    expect(int64Size(2n ** 53n)).toBe(8);
    expect(int64Size(2n ** 56n)).toBe(9);
    expect(int64Size(2n ** 63n - 1n)).toBe(9);
    expect(int64Size(-1n)).toBe(10);
  });
});
