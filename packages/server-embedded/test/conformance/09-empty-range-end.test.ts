// Conformance: a range_end sent present with zero length (tag and length 0 on the wire). Go's
// encoders never send one, but the wire allows it, and gogo's decoder makes it a non-nil empty slice,
// which etcd's index reads as "from the key on" (only a nil end is one key: v3.5.30
// server/mvcc/index.go line 110). Only reads see it: a Range and a read-only txn are served from
// the request as decoded, while a write (DeleteRange, a txn with a put, delete or txn op) is applied
// from its raft entry, where the encoder left the empty field out, so it reads the key alone. Watch
// turns an empty end into nil (v3rpc/watch.go line 261): the key alone.
import { expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { keysOf, op, Result, Target } from '../support/kv.js';
import { WatchConnection } from '../watch/watch-client.js';
import { describeConformance } from './suite.js';

/** range_end (field 2 of RangeRequest, DeleteRangeRequest and WatchCreateRequest), zero length. */
const EMPTY_RANGE_END = [Uint8Array.of(0x12, 0x00)];
/** Compare's range_end (field 64: tag 64 << 3 | 2 as a varint), zero length. */
const EMPTY_COMPARE_RANGE_END = [Uint8Array.of(0x82, 0x04, 0x00)];

describeConformance('explicit empty range_end (57)', ({ fresh }) => {
  /** A fresh server holding a=1, b=2, c=3 (revisions 2..4). */
  async function abc() {
    const server = await fresh();
    for (const [key, value] of [
      ['a', '1'],
      ['b', '2'],
      ['c', '3'],
    ] as const) {
      await server.api.put(key, value);
    }
    return server;
  }

  it('57 Range: an empty range_end on the wire ranges from the key on, an absent one reads the key', async () => {
    const { api } = await abc();
    expect(keysOf((await api.range('b', { $unknowns: EMPTY_RANGE_END })).kvs)).toEqual(['b', 'c']);
    expect((await api.range('b', { $unknowns: EMPTY_RANGE_END, countOnly: true })).count).toBe(2n);
    expect(keysOf((await api.range('b')).kvs)).toEqual(['b']);
  });

  it('57 DeleteRange: an empty range_end on the wire is lost in the raft entry, the key alone is deleted', async () => {
    const { api } = await abc();
    expect((await api.del('b', { $unknowns: EMPTY_RANGE_END })).deleted).toBe(1n); // 5
    expect(keysOf((await api.range('\0', { rangeEnd: b('\0') })).kvs)).toEqual(['a', 'c']);
  });

  it('57 Txn: a read-only txn ranges from the key on, a writing one reads the key alone', async () => {
    const { api } = await abc();
    // value("b"..) == "2" fails for c=3 when the compare covers b and c; it holds for b alone.
    const compare = {
      key: b('b'),
      target: Target.VALUE,
      result: Result.EQUAL,
      value: b('2'),
      $unknowns: EMPTY_COMPARE_RANGE_END,
    };
    const rangeB = { requestRange: { key: b('b'), $unknowns: EMPTY_RANGE_END } };
    const read = await api.txn({ compare: [compare], success: [op.range('a')], failure: [rangeB] });
    expect(read.succeeded).toBe(false);
    expect(keysOf(read.responses[0]?.responseRange?.kvs)).toEqual(['b', 'c']);
    const write = await api.txn({
      compare: [compare],
      success: [rangeB, op.put('d', '4')], // 5
      failure: [op.range('a')],
    });
    expect(write.succeeded).toBe(true);
    expect(keysOf(write.responses[0]?.responseRange?.kvs)).toEqual(['b']);
    const deleted = await api.txn({
      success: [{ requestDeleteRange: { key: b('b'), $unknowns: EMPTY_RANGE_END } }], // 6
    });
    expect(deleted.responses[0]?.responseDeleteRange?.deleted).toBe(1n);
    expect(keysOf((await api.range('\0', { rangeEnd: b('\0') })).kvs)).toEqual(['a', 'c', 'd']);
  });

  it('57 Watch: an empty range_end on the wire watches the key alone', async () => {
    const server = await fresh();
    const connection = new WatchConnection(server.endpoint);
    try {
      const stream = connection.open();
      stream.create({ key: b('b'), $unknowns: EMPTY_RANGE_END });
      await stream.take(1);
      await server.api.put('c', '1'); // 2
      await server.api.put('b', '1'); // 3
      const [response] = await stream.take(1);
      expect(
        response?.events.map((event) => event.kv?.key && Buffer.from(event.kv.key).toString()),
      ).toEqual(['b']);
      expect(response?.events[0]?.kv?.modRevision).toBe(3n);
    } finally {
      connection.close();
    }
  });
});
