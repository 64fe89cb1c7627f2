// Conformance against etcd: the compaction rules.
import { etcdserverpb_Maintenance as Maintenance } from '@etcdkit/client/protocol';
import { expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { keysOf, op, summary } from '../support/kv.js';
import { describeConformance, Errors } from './suite.js';

describeConformance('compaction (33)', ({ fresh }) => {
  /** a=1 (2), b=1 (3), a=2 (4), delete b (5), c=1 (6). */
  async function history(api: Awaited<ReturnType<typeof fresh>>['api']): Promise<void> {
    await api.put('a', '1');
    await api.put('b', '1');
    await api.put('a', '2');
    await api.del('b');
    await api.put('c', '1');
  }

  it('33 compaction rules: at current is fine, no bump; future is an error; at or below the last is "compacted"', async () => {
    const { api } = await fresh();
    await history(api);
    await expect(api.compact(7)).rejects.toMatchObject(Errors.future);
    const response = await api.compact(3);
    expect(response.header?.revision).toBe(6n);
    expect(response.header?.clusterId).not.toBe(0n);
    await expect(api.compact(3)).rejects.toMatchObject(Errors.compacted);
    await expect(api.compact(2)).rejects.toMatchObject(Errors.compacted);
    expect((await api.compact(6, true)).header?.revision).toBe(6n);
    expect((await api.range('a')).header?.revision).toBe(6n);
  });

  it('33 compaction rules: reading at the compaction revision works, below it is "compacted"', async () => {
    const { api } = await fresh();
    await history(api);
    await api.compact(4);
    await expect(api.range('a', { revision: 3n })).rejects.toMatchObject(Errors.compacted);
    await expect(api.txn({ success: [op.range('a', { revision: 3n })] })).rejects.toMatchObject(
      Errors.compacted,
    );
    // The latest version at or below the compaction revision of every key is kept.
    const atCompaction = await api.range('\0', { rangeEnd: b('\0'), revision: 4n });
    expect(atCompaction.kvs.map(summary)).toEqual([
      { key: 'a', value: '2', create: 2, mod: 4, version: 2, lease: 0n },
      { key: 'b', value: '1', create: 3, mod: 3, version: 1, lease: 0n },
    ]);
    expect(keysOf((await api.range('\0', { rangeEnd: b('\0'), revision: 5n })).kvs)).toEqual(['a']);
    // Versions keep counting across the compaction.
    await api.put('a', '3'); // 7
    expect(summary((await api.range('a')).kvs[0])).toMatchObject({ create: 2, mod: 7, version: 3 });
  });

  it('33 compaction rules: a key deleted at or before the compaction revision is gone from history', async () => {
    const { api, client } = await fresh();
    await history(api);
    await api.compact(5);
    const atFive = await api.range('\0', { rangeEnd: b('\0'), revision: 5n });
    expect(keysOf(atFive.kvs)).toEqual(['a']);
    expect((await client.unary(Maintenance.HashKV, { revision: 0n })).compactRevision).toBe(5n);
  });
});
