// The hand-written encoders of the hottest requests give the generated code's bytes exactly, and
// what they do not cover goes through the generated code.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  etcdserverpb_KV,
  etcdserverpb_Lease,
  etcdserverpb_Watch,
} from '../../src/generated/methods.js';
import type { etcdserverpb } from '../../src/generated/protocol.js';
import { encodeMessage as encodeFrame } from '../../src/transport/h2/grpc-message.js';
import { encodeRequestFrame } from '../../src/transport/request-frames.js';

const bytes = fc.uint8Array({ maxLength: 300 });
/** Any int64, weighted toward the edges of the varint sizes. */
const int64 = fc.oneof(
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.constantFrom(0n, 1n, 127n, 128n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n, -1n, 2n ** 63n - 1n),
);
const flag = fc.boolean();

const rangeRequest = fc.record(
  {
    key: bytes,
    rangeEnd: bytes,
    limit: int64,
    revision: int64,
    sortOrder: fc.integer({ min: 0, max: 2 }),
    sortTarget: fc.integer({ min: 0, max: 4 }),
    serializable: flag,
    keysOnly: flag,
    countOnly: flag,
    minModRevision: int64,
    maxModRevision: int64,
    minCreateRevision: int64,
    maxCreateRevision: int64,
  },
  { requiredKeys: [] },
);

const putRequest = fc.record(
  {
    key: bytes,
    value: bytes,
    lease: int64,
    prevKv: flag,
    ignoreValue: flag,
    ignoreLease: flag,
  },
  { requiredKeys: [] },
);

const deleteRequest = fc.record(
  { key: bytes, rangeEnd: bytes, prevKv: flag },
  { requiredKeys: [] },
);

const compare = fc.record(
  {
    result: fc.integer({ min: 0, max: 3 }),
    target: fc.integer({ min: 0, max: 4 }),
    key: bytes,
    // The target oneof: any of them set (even to zero) is written, as the generated code does.
    version: int64,
    createRevision: int64,
    modRevision: int64,
    value: bytes,
    lease: int64,
    rangeEnd: bytes,
  },
  { requiredKeys: [] },
);

/** TxnRequests nested up to a few levels, ops with any of the oneof fields set. */
const { txnRequest } = fc.letrec((tie) => ({
  txnRequest: fc.record(
    {
      compare: fc.array(compare, { maxLength: 4 }),
      success: fc.array(tie('requestOp'), { maxLength: 4 }),
      failure: fc.array(tie('requestOp'), { maxLength: 4 }),
    },
    { requiredKeys: [] },
  ),
  requestOp: fc.record(
    {
      requestRange: rangeRequest,
      requestPut: putRequest,
      requestDeleteRange: deleteRequest,
      requestTxn: fc.option(tie('txnRequest'), { nil: undefined, depthSize: 'small' }),
    },
    { requiredKeys: [] },
  ),
}));

const watchCreateRequest = fc.record(
  {
    key: bytes,
    rangeEnd: bytes,
    startRevision: int64,
    progressNotify: flag,
    filters: fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 3 }),
    prevKv: flag,
    watchId: int64,
    fragment: flag,
  },
  { requiredKeys: [] },
);
/** WatchRequests with any of the oneof's members set (the generated code writes each one set). */
const watchRequest = fc.record(
  {
    createRequest: watchCreateRequest,
    cancelRequest: fc.record({ watchId: int64 }, { requiredKeys: [] }),
    progressRequest: fc.constant({}),
  },
  { requiredKeys: [] },
);

const generated = <Req>(
  method: { request: { encode(r: Req): { finish(): Uint8Array } } },
  r: Req,
) => [...encodeFrame(method.request.encode(r).finish())];

describe('request frames', () => {
  it('encodes any RangeRequest as the generated code does', () => {
    fc.assert(
      fc.property(rangeRequest, (request) => {
        const frame = encodeRequestFrame(etcdserverpb_KV.Range, request);
        expect([...frame]).toEqual(generated(etcdserverpb_KV.Range, request));
      }),
      { numRuns: 2_000 },
    );
  });

  it('encodes any PutRequest as the generated code does', () => {
    fc.assert(
      fc.property(putRequest, (request) => {
        const frame = encodeRequestFrame(etcdserverpb_KV.Put, request);
        expect([...frame]).toEqual(generated(etcdserverpb_KV.Put, request));
      }),
      { numRuns: 2_000 },
    );
  });

  it('encodes any TxnRequest as the generated code does', () => {
    fc.assert(
      fc.property(txnRequest, (request) => {
        const r = request as etcdserverpb.TxnRequest.$Properties;
        const frame = encodeRequestFrame(etcdserverpb_KV.Txn, r);
        expect([...frame]).toEqual(generated(etcdserverpb_KV.Txn, r));
      }),
      { numRuns: 1_000 },
    );
    // A thousand nested txns take seconds of CPU alone, and a loaded run took 37 s: the limit only
    // stops a hung run.
  }, 120_000);

  it('encodes any WatchRequest and LeaseKeepAliveRequest as the generated code does', () => {
    fc.assert(
      fc.property(watchRequest, (request) => {
        const frame = encodeRequestFrame(etcdserverpb_Watch.Watch, request);
        expect([...frame]).toEqual(generated(etcdserverpb_Watch.Watch, request));
      }),
      { numRuns: 2_000 },
    );
    fc.assert(
      fc.property(fc.record({ ID: int64 }, { requiredKeys: [] }), (request) => {
        const frame = encodeRequestFrame(etcdserverpb_Lease.LeaseKeepAlive, request);
        expect([...frame]).toEqual(generated(etcdserverpb_Lease.LeaseKeepAlive, request));
      }),
      { numRuns: 500 },
    );
  });

  it('encodes txns nested past its own depth limit through the generated code', () => {
    let txn: etcdserverpb.TxnRequest.$Properties = { compare: [{ key: new Uint8Array([1]) }] };
    for (let i = 0; i < 12; i++) txn = { success: [{ requestTxn: txn }], failure: [{}] };
    expect([...encodeRequestFrame(etcdserverpb_KV.Txn, txn)]).toEqual(
      generated(etcdserverpb_KV.Txn, txn),
    );
  });

  it('hands fields it does not write itself to the generated code', () => {
    const odd = [
      // A number for an int64, a base64 string for bytes, a number for a bool, a negative enum.
      { key: new Uint8Array([1]), limit: 5 },
      { key: 'AQI=' },
      { key: new Uint8Array([1]), serializable: 0 },
      { key: new Uint8Array([1]), sortOrder: -1 },
    ];
    for (const request of odd) {
      const frame = encodeRequestFrame(etcdserverpb_KV.Range, request as never);
      expect([...frame]).toEqual(generated(etcdserverpb_KV.Range, request as never));
    }
    const put = { key: new Uint8Array([1]), lease: 7 };
    expect([...encodeRequestFrame(etcdserverpb_KV.Put, put as never)]).toEqual(
      generated(etcdserverpb_KV.Put, put as never),
    );
    // Inside a txn: a number for a compare's int64, a string for a nested put's bytes.
    const txns = [
      { compare: [{ key: new Uint8Array([1]), version: 3 }] },
      { success: [{ requestPut: { key: 'AQI=' } }] },
      { failure: [{ requestTxn: { success: [{ requestDeleteRange: { prevKv: 1 } }] } }] },
    ];
    for (const request of txns) {
      const frame = encodeRequestFrame(etcdserverpb_KV.Txn, request as never);
      expect([...frame]).toEqual(generated(etcdserverpb_KV.Txn, request as never));
    }
    // A number for a watch id, a negative filter, a string key: the generated code's.
    const watches = [
      { cancelRequest: { watchId: 3 } },
      { createRequest: { key: new Uint8Array([1]), filters: [-1] } },
      { createRequest: { key: 'AQI=' } },
    ];
    for (const request of watches) {
      const frame = encodeRequestFrame(etcdserverpb_Watch.Watch, request as never);
      expect([...frame]).toEqual(generated(etcdserverpb_Watch.Watch, request as never));
    }
    // A missing compare fails as in the generated code.
    const broken = { compare: [null] } as never;
    expect(() => encodeRequestFrame(etcdserverpb_KV.Txn, broken)).toThrow(TypeError);
    // Any other method is the generated code's alone.
    const del = { key: new Uint8Array([2]), prevKv: true };
    expect([...encodeRequestFrame(etcdserverpb_KV.DeleteRange, del)]).toEqual(
      generated(etcdserverpb_KV.DeleteRange, del),
    );
  });
});
