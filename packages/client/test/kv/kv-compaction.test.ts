// Compaction is store-wide, so it gets a server of its own.
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CompactedError, FutureRevisionError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import { expectServerError, rejection } from './kv-support.js';

describeEachBackend('KV compaction', ({ backend }) => {
  let etcd: Etcd;

  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('reads below the compaction revision fail; reads exactly at it work', async () => {
    const v1 = await etcd.put('c/a', '1');
    const v2 = await etcd.put('c/a', '2');
    const v3 = await etcd.put('c/a', '3');
    await etcd.put('c/b', 'x');
    const compacted = await etcd.compact(v2.header.revision);
    // Compaction itself is not a write.
    expect(compacted.header.revision).toBe(v3.header.revision + 1n);

    const below = await rejection(etcd.get('c/a', { revision: v1.header.revision }));
    expectServerError(below, CompactedError);
    expect(below).toMatchObject({
      code: 'COMPACTED',
      message: 'etcdserver: mvcc: required revision has been compacted',
    });
    // The latest version at or below the compaction revision is kept.
    const at = await etcd.get('c/a', { revision: v2.header.revision });
    expect(at?.text()).toBe('2');
    expect(at?.version).toBe(2n);
    expect((await etcd.get('c/a', { revision: v3.header.revision }))?.text()).toBe('3');
    expect((await etcd.get('c/a'))?.text()).toBe('3');
  });

  it('compacting at or below the last compaction fails with CompactedError, above the current revision with FutureRevisionError', async () => {
    const put = await etcd.put('c/z', 'v');
    const now = put.header.revision;
    const last = await etcd.compact(now - 1n);
    expectServerError(await rejection(etcd.compact(now - 1n)), CompactedError);
    expectServerError(await rejection(etcd.compact(now - 2n)), CompactedError);
    expectServerError(await rejection(etcd.compact(now + 1n)), FutureRevisionError);
    // Compacting at the current revision, waiting for the physical compaction, is fine.
    const current = await etcd.compact(now, { physical: true });
    expect(current.header.revision).toBe(now);
    expect(last.header.revision).toBe(now);
    expect((await etcd.get('c/z'))?.text()).toBe('v');
  });
});
