import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { status } from '../support/grpc-client.js';
import { keysOf, kv, summary } from '../support/kv.js';
import { specBackend, startTestServer, type TestServer } from '../support/test-server.js';

const OUT_OF_RANGE = 11;
const compacted = status(OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted');
const future = status(OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision');

describe(`Compact [${specBackend}]`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;

  beforeEach(async () => {
    server = await startTestServer();
    api = kv(server);
    await api.put('a', '1'); // 2
    await api.put('b', '1'); // 3
    await api.put('a', '2'); // 4
    await api.del('b'); // 5
  });
  afterEach(() => server.stop());

  it('compacting at the current revision is fine and makes no revision', async () => {
    const response = await api.compact(5);
    expect(response.header?.revision).toBe(5n);
    expect(response.header?.clusterId).not.toBe(0n);
    expect(await api.revision()).toBe(5);
  });

  it('physical compaction answers the same way', async () => {
    expect((await api.compact(4, true)).header?.revision).toBe(5n);
    await expect(api.range('a', { revision: 3n })).rejects.toMatchObject(compacted);
  });

  it('compacting a future revision is an error', async () => {
    await expect(api.compact(6)).rejects.toMatchObject(future);
  });

  it('compacting at or below the last compaction is an error', async () => {
    await api.compact(3);
    await expect(api.compact(3)).rejects.toMatchObject(compacted);
    await expect(api.compact(2)).rejects.toMatchObject(compacted);
    await api.compact(4);
  });

  it('keeps what was visible at the compaction revision and everything after', async () => {
    await api.compact(4);
    await expect(api.range('a', { revision: 3n })).rejects.toMatchObject(compacted);
    const atCompaction = await api.range('a', { rangeEnd: b('z'), revision: 4n });
    expect(atCompaction.kvs.map(summary)).toEqual([
      { key: 'a', value: '2', create: 2, mod: 4, version: 2, lease: 0n },
      { key: 'b', value: '1', create: 3, mod: 3, version: 1, lease: 0n },
    ]);
    expect(keysOf((await api.range('a', { rangeEnd: b('z') })).kvs)).toEqual(['a']);
    // A new put keeps counting versions from before the compaction.
    await api.put('a', '3');
    expect(summary((await api.range('a')).kvs[0])).toMatchObject({ create: 2, version: 3 });
  });
});
