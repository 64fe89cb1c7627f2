import { describe, expect, it } from 'vitest';
import {
  etcdserverpb,
  etcdserverpb_KV,
  etcdserverpb_Lease,
  etcdserverpb_Watch,
  grpc_health_v1_Health,
  mvccpb,
  v3electionpb_Election,
  v3lockpb_Lock,
} from '../src/protocol.js';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

describe('generated protocol codecs', () => {
  it('encode 64-bit fields from bigint with the exact protobuf varint bytes', () => {
    // field 4 (revision), wire type 0 => tag 0x20; -1 as int64 is ten bytes of two's complement.
    const bytes = etcdserverpb.RangeRequest.encode({ revision: -1n }).finish();
    expect(hex(bytes)).toBe('20ffffffffffffffffff01');
    const small = etcdserverpb.RangeRequest.encode({ revision: 300n }).finish();
    expect(hex(small)).toBe('20ac02');
  });

  it('decode 64-bit fields to bigint without losing precision', () => {
    const header = etcdserverpb.ResponseHeader.decode(
      etcdserverpb.ResponseHeader.encode({
        clusterId: 18446744073709551615n,
        memberId: 9007199254740993n,
        revision: 9223372036854775807n,
        raftTerm: 1n,
      }).finish(),
    );
    expect(header.clusterId).toBe(18446744073709551615n);
    expect(header.memberId).toBe(9007199254740993n);
    expect(header.revision).toBe(9223372036854775807n);
    expect(header.raftTerm).toBe(1n);
  });

  it('round-trip negative lease ids and absent fields default to 0n', () => {
    const kv = mvccpb.KeyValue.decode(
      mvccpb.KeyValue.encode({ key: Buffer.from('k'), lease: -7205759403792793600n }).finish(),
    );
    expect(kv.lease).toBe(-7205759403792793600n);
    expect(kv.createRevision).toBe(0n);
    expect(kv.version).toBe(0n);
    expect(typeof kv.modRevision).toBe('bigint');
  });

  it('keep 64-bit members of a oneof as bigint (Compare.target_union)', () => {
    const compare = etcdserverpb.Compare.decode(
      etcdserverpb.Compare.encode({
        key: Buffer.from('k'),
        target: etcdserverpb.Compare.CompareTarget.MOD,
        modRevision: 123456789012345n,
        rangeEnd: Buffer.from([0]),
      }).finish(),
    );
    expect(compare.targetUnion).toBe('modRevision');
    expect(compare.modRevision).toBe(123456789012345n);
    expect(Array.from(compare.rangeEnd)).toEqual([0]);
  });

  it('carry nested transactions in RequestOp.request_txn and ResponseOp.response_txn', () => {
    const request = etcdserverpb.TxnRequest.decode(
      etcdserverpb.TxnRequest.encode({
        success: [{ requestTxn: { success: [{ requestPut: { key: Buffer.from('a') } }] } }],
      }).finish(),
    );
    const key = request.success[0]?.requestTxn?.success?.[0]?.requestPut?.key;
    expect(key && Buffer.from(key).toString()).toBe('a');
  });

  it('reject truncated varints instead of reading past the buffer', () => {
    expect(() => etcdserverpb.RangeRequest.decode(new Uint8Array([0x20, 0xff, 0xff]))).toThrow(
      RangeError,
    );
  });
});

describe('generated method table', () => {
  it('describe each RPC with its gRPC path and streaming kind', () => {
    expect(etcdserverpb_KV.Range.path).toBe('/etcdserverpb.KV/Range');
    expect(etcdserverpb_KV.Range.kind).toBe('unary');
    expect(etcdserverpb_KV.RangeStream.kind).toBe('server-stream');
    expect(etcdserverpb_Watch.Watch.kind).toBe('bidi-stream');
    expect(etcdserverpb_Lease.LeaseKeepAlive.kind).toBe('bidi-stream');
    expect(v3lockpb_Lock.Lock.path).toBe('/v3lockpb.Lock/Lock');
    expect(v3electionpb_Election.Observe.kind).toBe('server-stream');
    expect(grpc_health_v1_Health.Check.path).toBe('/grpc.health.v1.Health/Check');
    expect(Object.keys(etcdserverpb_KV)).toEqual([
      'Range',
      'RangeStream',
      'Put',
      'DeleteRange',
      'Txn',
      'Compact',
    ]);
  });
});
