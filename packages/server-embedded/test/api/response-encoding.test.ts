import { etcdserverpb } from '@etcdkit/client/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeHeader, encodeResponse } from '../../src/api/response-encoding.js';

// Integers as the applier and the generated code may hold them: bigints of the whole int64 and
// uint64 ranges, safe numbers (negative ones too), zero of both kinds.
const int64 = fc.oneof(
  fc.constant(0n),
  fc.constant(0),
  fc.bigInt({ min: 1n, max: 2n ** 31n }),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
  fc.maxSafeNat(),
);
const bytes = fc.uint8Array({ maxLength: 40 });
const bool = fc.oneof(fc.boolean(), fc.constant(undefined));

/** An object with some of `fields` set (the others absent, as in a sparse message). */
function some<T extends Record<string, fc.Arbitrary<unknown>>>(fields: T) {
  return fc.record(fields, { requiredKeys: [] });
}

const header = some({ clusterId: int64, memberId: int64, revision: int64, raftTerm: int64 });
const keyValue = some({
  key: bytes,
  createRevision: int64,
  modRevision: int64,
  version: int64,
  value: bytes,
  lease: int64,
});
const range = some({
  header,
  kvs: fc.array(keyValue, { maxLength: 4 }),
  more: bool,
  count: int64,
});
const put = some({ header, prevKv: keyValue });
const deleteRange = some({
  header,
  deleted: int64,
  prevKvs: fc.array(keyValue, { maxLength: 3 }),
});
const { txn } = fc.letrec<{ txn: Record<string, unknown>; op: Record<string, unknown> }>((tie) => ({
  txn: some({
    header,
    succeeded: bool,
    responses: fc.array(tie('op'), { maxLength: 3 }),
  }),
  // Usually one field of the oneof, at times several (the generated code writes each one set).
  op: some({
    responseRange: range,
    responsePut: put,
    responseDeleteRange: deleteRange,
    responseTxn: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constant({}),
      tie('txn'),
    ),
  }),
}));
const watch = some({
  header,
  watchId: int64,
  created: bool,
  canceled: bool,
  compactRevision: int64,
  cancelReason: fc.oneof(fc.constant(''), fc.string({ maxLength: 30 })),
  fragment: bool,
});

const CASES = [
  ['/etcdserverpb.KV/Range', etcdserverpb.RangeResponse, range],
  ['/etcdserverpb.KV/Put', etcdserverpb.PutResponse, put],
  ['/etcdserverpb.KV/DeleteRange', etcdserverpb.DeleteRangeResponse, deleteRange],
  ['/etcdserverpb.KV/Txn', etcdserverpb.TxnResponse, txn],
  ['/etcdserverpb.Watch/Watch', etcdserverpb.WatchResponse, watch],
] as const;

/** What the generated code writes, or its error. */
function generated(codec: { encode(message: never): { finish(): Uint8Array } }, message: unknown) {
  try {
    return [...codec.encode(message as never).finish()];
  } catch (error) {
    return `throws ${(error as Error).message}`;
  }
}

describe('response encoding', () => {
  for (const [path, codec, arbitrary] of CASES) {
    it(`writes the bytes the generated code writes for ${path}'s responses`, () => {
      fc.assert(
        fc.property(arbitrary, (message) => {
          const written = encodeResponse(path, message);
          // Left to the generated code only for what this encoder does not mirror.
          const hasReason = typeof (message as { cancelReason?: string }).cancelReason === 'string';
          if (written === undefined) {
            expect(hasReason && /[\ud800-\udfff]/.test(String(message.cancelReason))).toBe(true);
            return;
          }
          expect([...written]).toEqual(generated(codec, message));
        }),
        { numRuns: 400 },
      );
    });
  }

  it('writes a header repeated at one revision with the bytes of the first', () => {
    const first = { clusterId: 2n ** 63n + 5n, memberId: 17n, revision: 900n, raftTerm: 2n };
    const expected = [...etcdserverpb.ResponseHeader.encode(first).finish()];
    expect([...encodeHeader(first)]).toEqual(expected);
    expect(encodeHeader({ ...first })).toBe(encodeHeader(first));
    // Another revision, and the same fields without the member: each its own bytes.
    const next = { ...first, revision: 901n };
    expect([...encodeHeader(next)]).toEqual([...etcdserverpb.ResponseHeader.encode(next).finish()]);
    const { memberId: _, ...noMember } = first;
    expect([...encodeHeader(noMember)]).toEqual([
      ...etcdserverpb.ResponseHeader.encode(noMember).finish(),
    ]);
    expect([...encodeHeader(first)]).toEqual(expected);
  });

  it('leaves to the generated code what it does not mirror', () => {
    const path = '/etcdserverpb.KV/Range';
    // Unknown fields kept from a decode, bytes given as base64 text, a Long-like object.
    const unknowns = { header: { revision: 3n }, $unknowns: [new Uint8Array([0x78, 1])] };
    expect(encodeResponse(path, unknowns)).toBeUndefined();
    expect(encodeResponse(path, { kvs: [{ key: 'YQ==' }] })).toBeUndefined();
    expect(encodeResponse(path, { count: { low: 1, high: 0 } })).toBeUndefined();
    expect(encodeResponse(path, { count: 1.5 })).toBeUndefined();
    // Methods not written here.
    expect(encodeResponse('/etcdserverpb.Lease/LeaseGrant', { header: {} })).toBeUndefined();
    // A header not mirrored is still encoded, by the generated code.
    expect([
      ...encodeHeader({ revision: 4n, $unknowns: [new Uint8Array([0x78, 1])] } as never),
    ]).toEqual([24, 4, 0x78, 1]);
  });

  it('leaves a txn nested past the generated code’s depth limit to it (which refuses it)', () => {
    let deep: Record<string, unknown> = { succeeded: true };
    for (let i = 0; i < 60; i++) deep = { responses: [{ responseTxn: deep }] };
    expect(encodeResponse('/etcdserverpb.KV/Txn', deep)).toBeUndefined();
    expect(generated(etcdserverpb.TxnResponse, deep)).toBe('throws max depth exceeded');
    let shallow: Record<string, unknown> = { header: { revision: 2n }, succeeded: true };
    for (let i = 0; i < 40; i++) shallow = { responses: [{ responseTxn: shallow }] };
    expect([...encodeResponse('/etcdserverpb.KV/Txn', shallow)!]).toEqual(
      generated(etcdserverpb.TxnResponse, shallow),
    );
  });
});
