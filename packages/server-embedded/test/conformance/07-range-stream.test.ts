// Conformance against etcd: RangeStream (etcd 3.7).
import { etcdserverpb_KV as KV } from '@etcdkit/client/protocol';
import { expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { op } from '../support/kv.js';
import { atLeast } from './fresh-server.js';
import { describeConformance } from './suite.js';

describeConformance('RangeStream (56)', ({ fresh }) => {
  it('56 RangeStream merge equals Range: kvs in order, header/more/count on the last chunk (etcd 3.7+; older etcd has no RangeStream)', async (context) => {
    const { client, api, version } = await fresh();
    if (!atLeast(version, 3, 7)) context.skip(`etcd ${version} has no RangeStream`);
    for (let t = 0; t < 3; t++) {
      await api.txn({
        success: Array.from({ length: 100 }, (_, i) =>
          op.put(`k${String(t * 100 + i).padStart(3, '0')}`, `v${i}`),
        ),
      }); // 2..4
    }
    for (const request of [{}, { limit: 25n }, { revision: 3n }, { keysOnly: true }]) {
      const chunks = await client.serverStream(KV.RangeStream, {
        key: b('k'),
        rangeEnd: b('l'),
        ...request,
      });
      const range = await api.range('k', { rangeEnd: b('l'), ...request });
      const merged = chunks.flatMap((chunk) => chunk.rangeResponse?.kvs ?? []);
      const last = chunks.at(-1)?.rangeResponse;
      expect(merged).toEqual(range.kvs);
      expect([last?.more, last?.count, last?.header]).toEqual([
        range.more,
        range.count,
        range.header,
      ]);
      for (const chunk of chunks.slice(0, -1)) {
        expect(chunk.rangeResponse?.header ?? undefined).toBeUndefined();
      }
    }
  });
});
