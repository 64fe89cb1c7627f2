// The hand-written decoders of the hottest responses give what the generated decoders give, field by
// field (values, prototypes, absent fields), or throw what they throw, whatever the bytes.
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  etcdserverpb_KV,
  etcdserverpb_Lease,
  etcdserverpb_Watch,
} from '../../src/generated/methods.js';
import { etcdserverpb } from '../../src/generated/protocol.js';
import { decodeResponse, HOT_DECODERS } from '../../src/transport/response-decoders.js';

const bytes = fc.uint8Array({ maxLength: 40 });
/** Any int64, weighted toward the edges of the varint sizes (negative ones take 10 bytes). */
const int64 = fc.oneof(
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.constantFrom(0n, 1n, 127n, 128n, 2n ** 32n, 2n ** 49n - 1n, 2n ** 49n, -1n, 2n ** 63n - 1n),
);
const uint64 = fc.oneof(
  fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  fc.constantFrom(0n, 1n, 2n ** 49n, 2n ** 63n, 2n ** 64n - 1n),
);
const header = fc.record(
  { clusterId: uint64, memberId: uint64, revision: int64, raftTerm: uint64 },
  { requiredKeys: [] },
);
const keyValue = fc.record(
  {
    key: bytes,
    createRevision: int64,
    modRevision: int64,
    version: int64,
    value: bytes,
    lease: int64,
  },
  { requiredKeys: [] },
);
const rangeResponse = fc.record(
  {
    header,
    kvs: fc.array(keyValue, { maxLength: 4 }),
    more: fc.boolean(),
    count: int64,
  },
  { requiredKeys: [] },
);
const putResponse = fc.record({ header, prevKv: keyValue }, { requiredKeys: [] });
const deleteRangeResponse = fc.record(
  { header, deleted: int64, prevKvs: fc.array(keyValue, { maxLength: 3 }) },
  { requiredKeys: [] },
);
const responseOp = fc.oneof(
  fc.record({ responseRange: rangeResponse }),
  fc.record({ responsePut: putResponse }),
  fc.record({ responseDeleteRange: deleteRangeResponse }),
);
const txnResponse = fc.record(
  { header, succeeded: fc.boolean(), responses: fc.array(responseOp, { maxLength: 4 }) },
  { requiredKeys: [] },
);
/** Event types: PUT, DELETE, and values no etcd sends (the generated decoder keeps any int32). */
const eventType = fc.oneof(
  fc.constantFrom(0, 1),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
);
const watchEvent = fc.record(
  { type: eventType, kv: keyValue, prevKv: keyValue },
  { requiredKeys: [] },
);
/** Cancel reasons: ASCII (what etcd sends), and any other text. */
const cancelReason = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
);
const watchResponse = fc.record(
  {
    header,
    watchId: int64,
    created: fc.boolean(),
    canceled: fc.boolean(),
    compactRevision: int64,
    cancelReason,
    fragment: fc.boolean(),
    events: fc.array(watchEvent, { maxLength: 4 }),
  },
  { requiredKeys: [] },
);
const leaseKeepAliveResponse = fc.record({ header, ID: int64, TTL: int64 }, { requiredKeys: [] });

interface Codec {
  encode(message: never): { finish(): Uint8Array };
  decode(bytes: Uint8Array): unknown;
}
const cases: ReadonlyArray<readonly [string, Codec, fc.Arbitrary<object>]> = [
  [etcdserverpb_KV.Range.path, etcdserverpb.RangeResponse, rangeResponse],
  [etcdserverpb_KV.Put.path, etcdserverpb.PutResponse, putResponse],
  [etcdserverpb_KV.DeleteRange.path, etcdserverpb.DeleteRangeResponse, deleteRangeResponse],
  [etcdserverpb_KV.Txn.path, etcdserverpb.TxnResponse, txnResponse],
  [etcdserverpb_Watch.Watch.path, etcdserverpb.WatchResponse, watchResponse],
  [
    etcdserverpb_Lease.LeaseKeepAlive.path,
    etcdserverpb.LeaseKeepAliveResponse,
    leaseKeepAliveResponse,
  ],
];

/** Everything observable of a decoded value: prototypes, own fields (enumerable or not), bytes. */
function shape(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Buffer.isBuffer(value)) return { buffer: [...value] };
  if (value instanceof Uint8Array) return { uint8array: [...value] };
  if (Array.isArray(value)) return value.map(shape);
  const own: Record<string, unknown> = {};
  for (const key of Object.getOwnPropertyNames(value).sort()) {
    own[key] = shape((value as Record<string, unknown>)[key]);
  }
  return { proto: Object.getPrototypeOf(value)?.constructor?.name, own };
}

/** The outcome of a decode: its shape, or the error's class and message. */
function outcome(decode: () => unknown): unknown {
  try {
    return { ok: shape(decode()) };
  } catch (error) {
    return { threw: (error as Error).constructor.name, message: (error as Error).message };
  }
}

const asBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

afterEach(() => {
  vi.restoreAllMocks();
});

describe.each(cases)('the hand decoder of %s', (path, codec, message) => {
  const hand = HOT_DECODERS.get(path)!;

  it('gives the generated decoder’s message for every message, without calling it', () => {
    const generated = vi.spyOn(codec, 'decode');
    fc.assert(
      fc.property(message, (m) => {
        const wire = asBuffer(codec.encode(m as never).finish());
        const expected = shape(codec.decode(wire));
        generated.mockClear();
        expect(shape(hand(wire))).toEqual(expected);
        expect(generated).not.toHaveBeenCalled();
      }),
      { numRuns: 300 },
    );
  });

  it('merges repeated messages as the generated decoder does (fields set twice, headers merged)', () => {
    fc.assert(
      fc.property(message, message, (a, b) => {
        const wire = Buffer.concat([
          codec.encode(a as never).finish(),
          codec.encode(b as never).finish(),
        ]);
        expect(shape(hand(wire))).toEqual(shape(codec.decode(wire)));
      }),
      { numRuns: 200 },
    );
  });

  it('gives what the generated decoder gives, or throws what it throws, for any bytes', () => {
    const corrupted = fc
      .tuple(message, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.nat())
      .map(([m, at, byte, cut]) => {
        const wire = Buffer.from(codec.encode(m as never).finish());
        if (wire.length > 0) wire[at % wire.length] = byte;
        return wire.subarray(0, wire.length - (cut % 3));
      });
    fc.assert(
      fc.property(fc.oneof(corrupted, bytes.map(asBuffer)), (wire) => {
        expect(outcome(() => hand(wire))).toEqual(outcome(() => codec.decode(wire)));
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps unknown fields as the generated decoder does', () => {
    fc.assert(
      fc.property(message, fc.integer({ min: 12, max: 2000 }), bytes, (m, field, extra) => {
        const unknown = Buffer.concat([
          Buffer.from([(((field << 3) | 2) & 0x7f) | 0x80, field >> 4]),
          Buffer.from([extra.length]),
          extra,
        ]);
        const wire = Buffer.concat([unknown, codec.encode(m as never).finish()]);
        const decoded = hand(wire) as { $unknowns?: Uint8Array[] };
        const expected = codec.decode(wire) as { $unknowns?: Uint8Array[] };
        expect(shape(decoded)).toEqual(shape(expected));
        // Kept only when the generated code keeps them (it discards them by default).
        expect(decoded.$unknowns?.map((u) => [...u])).toEqual(
          expected.$unknowns?.map((u) => [...u]),
        );
      }),
      { numRuns: 100 },
    );
  });

  it('hands a plain Uint8Array to the generated decoder', () => {
    const wire = codec.encode({ header: { revision: 5n } } as never).finish();
    const plain = new Uint8Array(wire);
    expect(shape(hand(plain))).toEqual(shape(codec.decode(plain)));
  });
});

describe('decodeResponse', () => {
  it('decodes the hot methods by hand and every other one with the generated decoder', () => {
    const header = { revision: 7n, memberId: 3n };
    const put = Buffer.from(etcdserverpb.PutResponse.encode({ header }).finish());
    const decoded = decodeResponse(etcdserverpb_KV.Put, put);
    expect(decoded).toBeInstanceOf(etcdserverpb.PutResponse);
    expect(decoded.header?.revision).toBe(7n);
    expect(decoded.header?.memberId).toBe(3n);
    expect(decoded.header?.clusterId).toBe(0n);
    expect(decoded.prevKv).toBeNull();
    const compact = Buffer.from(etcdserverpb.CompactionResponse.encode({ header }).finish());
    const generated = vi.spyOn(etcdserverpb.CompactionResponse, 'decode');
    expect(decodeResponse(etcdserverpb_KV.Compact, compact).header?.revision).toBe(7n);
    expect(generated).toHaveBeenCalledTimes(1);
  });

  it('decodes a nested txn (left to the generated decoder) as the generated decoder does', () => {
    const wire = Buffer.from(
      etcdserverpb.TxnResponse.encode({
        succeeded: true,
        responses: [{ responseTxn: { succeeded: true, responses: [{ responsePut: {} }] } }],
      }).finish(),
    );
    const decoded = decodeResponse(etcdserverpb_KV.Txn, wire);
    expect(shape(decoded)).toEqual(shape(etcdserverpb.TxnResponse.decode(wire)));
    expect(decoded.responses[0]?.responseTxn?.succeeded).toBe(true);
  });
});
