// The etcdkit client against the embedded server: the KV API end to end, RangeStream scans included.
import { cmp, Etcd, op } from '@etcdkit/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';

describe('the etcdkit client against the embedded server', () => {
  let server: EmbeddedEtcd;
  let etcd: Etcd;

  beforeEach(async () => {
    server = await EmbeddedEtcd.start();
    etcd = new Etcd({ endpoints: [...server.endpoints] });
  });
  afterEach(async () => {
    await etcd.close();
    await server.stop();
  });

  it('puts, gets, ranges and deletes', async () => {
    const put = await etcd.put('config/a', 'v1');
    expect(put.header.revision).toBe(2n);
    await etcd.put('config/b', 'v2');
    expect((await etcd.get('config/a'))?.text()).toBe('v1');
    const page = await etcd.range({ prefix: 'config/', limit: 1 });
    expect(page.kvs.map((kv) => kv.text())).toEqual(['v1']);
    expect(page.more).toBe(true);
    expect(page.count).toBe(2n);
    expect((await etcd.delete({ prefix: 'config/' })).deleted).toBe(2n);
    expect(await etcd.get('config/a')).toBeUndefined();
  });

  it('commits a guarded txn and reads its own write', async () => {
    const seen = await etcd.put('config/a', 'v1');
    const result = await etcd
      .txn()
      .if(cmp.modRevision('config/a', '==', seen.header.revision))
      .then(op.put('config/a', 'v2'), op.get('config/a'))
      .else(op.get('config/a'))
      .commit();
    expect(result.succeeded).toBe(true);
    expect(result.header.revision).toBe(3n);
  });

  it('scans thousands of keys at one revision through RangeStream', async () => {
    for (let batch = 0; batch < 25; batch++) {
      const ops = Array.from({ length: 100 }, (_, i) =>
        op.put(`jobs/${String(batch * 100 + i).padStart(5, '0')}`, 'x'),
      );
      await etcd
        .txn()
        .then(...ops)
        .commit();
    }
    const scan = etcd.scan({ prefix: 'jobs/' });
    let count = 0;
    let previous = '';
    for await (const kv of scan) {
      expect(kv.keyText() > previous).toBe(true);
      previous = kv.keyText();
      count++;
    }
    expect(count).toBe(2500);
    expect(scan.revision).toBe(26n);
  });

  it('compacts, and reads below the compaction fail', async () => {
    await etcd.put('a', '1');
    await etcd.put('a', '2');
    await etcd.compact(3n);
    await expect(etcd.get('a', { revision: 2n })).rejects.toMatchObject({ code: 'COMPACTED' });
    expect((await etcd.get('a', { revision: 3n }))?.text()).toBe('2');
  });
});
