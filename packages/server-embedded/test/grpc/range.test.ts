import { type etcdserverpb, etcdserverpb_KV as KV } from '@etcdkit/client/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { status } from '../support/grpc-client.js';
import { grantLease, keysOf, kv, SortOrder, SortTarget, summary } from '../support/kv.js';
import {
  specBackend,
  startTestServer,
  type TestServer,
  versionAtLeast,
} from '../support/test-server.js';

type SortOrderValue = etcdserverpb.RangeRequest.SortOrder;
type SortTargetValue = etcdserverpb.RangeRequest.SortTarget;

const INVALID_ARGUMENT = 3;
const OUT_OF_RANGE = 11;

describe(`Range [${specBackend}]`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;

  beforeEach(async () => {
    server = await startTestServer();
    api = kv(server);
  });
  afterEach(() => server.stop());

  /** a..e at revisions 2..6, values A..E. */
  async function abcde(): Promise<void> {
    for (const key of ['a', 'b', 'c', 'd', 'e']) await api.put(key, key.toUpperCase());
  }

  it('a fresh store answers at revision 1 with nothing in it', async () => {
    const response = await api.range('\0', { rangeEnd: b('\0') });
    expect(response.header?.revision).toBe(1n);
    expect(response.kvs).toEqual([]);
    expect(response.count).toBe(0n);
    expect(response.more).toBe(false);
  });

  it('an empty range_end reads the key alone', async () => {
    await abcde();
    const response = await api.range('c');
    expect(response.kvs.map(summary)).toEqual([
      { key: 'c', value: 'C', create: 4, mod: 4, version: 1, lease: 0n },
    ]);
    expect(response.count).toBe(1n);
  });

  it('range_end makes the half-open range [key, range_end)', async () => {
    await abcde();
    expect(keysOf((await api.range('b', { rangeEnd: b('d') })).kvs)).toEqual(['b', 'c']);
  });

  it('range_end "\\0" reads every key >= key', async () => {
    await abcde();
    expect(keysOf((await api.range('c', { rangeEnd: b('\0') })).kvs)).toEqual(['c', 'd', 'e']);
  });

  it('key "\\0" with range_end "\\0" reads everything', async () => {
    await abcde();
    const response = await api.range('\0', { rangeEnd: b('\0') });
    expect(keysOf(response.kvs)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(response.count).toBe(5n);
  });

  it('a range_end at or below the key is an empty range, not an error', async () => {
    await abcde();
    for (const rangeEnd of ['c', 'b']) {
      const response = await api.range('c', { rangeEnd: b(rangeEnd) });
      expect(response.kvs).toEqual([]);
      expect(response.count).toBe(0n);
      expect(response.header?.revision).toBe(6n);
    }
  });

  it('limit returns the first keys; more and count tell about the rest', async () => {
    await abcde();
    const limited = await api.range('a', { rangeEnd: b('z'), limit: 2n });
    expect(keysOf(limited.kvs)).toEqual(['a', 'b']);
    expect(limited.more).toBe(true);
    expect(limited.count).toBe(5n);
    const exact = await api.range('a', { rangeEnd: b('z'), limit: 5n });
    expect(exact.more).toBe(false);
    expect(exact.count).toBe(5n);
    const negative = await api.range('a', { rangeEnd: b('z'), limit: -1n });
    expect(keysOf(negative.kvs)).toHaveLength(5);
    expect(negative.more).toBe(false);
  });

  it('count_only returns no keys, the total count, and more = false even with a limit', async () => {
    await abcde();
    const response = await api.range('a', { rangeEnd: b('z'), countOnly: true, limit: 2n });
    expect(response.kvs).toEqual([]);
    expect(response.count).toBe(5n);
    expect(response.more).toBe(false);
  });

  it('sorts all matches first, then applies the limit', async () => {
    await api.put('a', '3');
    await api.put('b', '1');
    await api.put('c', '2');
    await api.put('d', '0');
    const response = await api.range('a', {
      rangeEnd: b('d'),
      sortTarget: SortTarget.VALUE,
      sortOrder: SortOrder.ASCEND,
      limit: 2n,
    });
    expect(keysOf(response.kvs)).toEqual(['b', 'c']);
    expect(response.more).toBe(true);
    expect(response.count).toBe(3n);
    const descending = await api.range('a', {
      rangeEnd: b('z'),
      sortTarget: SortTarget.VALUE,
      sortOrder: SortOrder.DESCEND,
      limit: 3n,
    });
    expect(keysOf(descending.kvs)).toEqual(['a', 'c', 'b']);
  });

  it('a sort target with order NONE sorts ascending by that target', async () => {
    await api.put('b', '1'); // 2
    await api.put('a', '1'); // 3
    await api.put('c', '1'); // 4
    await api.put('b', '2'); // 5
    const response = await api.range('a', { rangeEnd: b('z'), sortTarget: SortTarget.MOD });
    expect(keysOf(response.kvs)).toEqual(['a', 'c', 'b']);
    const byCreate = await api.range('a', { rangeEnd: b('z'), sortTarget: SortTarget.CREATE });
    expect(keysOf(byCreate.kvs)).toEqual(['b', 'a', 'c']);
  });

  it('sorts by key descending, and by version with ties kept in key order', async () => {
    await abcde();
    await api.put('d', 'D2');
    const descending = await api.range('a', {
      rangeEnd: b('z'),
      sortTarget: SortTarget.KEY,
      sortOrder: SortOrder.DESCEND,
    });
    expect(keysOf(descending.kvs)).toEqual(['e', 'd', 'c', 'b', 'a']);
    const byVersion = await api.range('a', {
      rangeEnd: b('z'),
      sortTarget: SortTarget.VERSION,
      sortOrder: SortOrder.ASCEND,
    });
    expect(keysOf(byVersion.kvs)).toEqual(['a', 'b', 'c', 'e', 'd']);
    const byVersionDescending = await api.range('a', {
      rangeEnd: b('z'),
      sortTarget: SortTarget.VERSION,
      sortOrder: SortOrder.DESCEND,
    });
    expect(keysOf(byVersionDescending.kvs)).toEqual(['d', 'a', 'b', 'c', 'e']);
  });

  it('min/max revision filters drop keys but keep the total count', async () => {
    await abcde(); // a@2 .. e@6
    await api.put('b', 'B2'); // b: create 3, mod 7
    const mod = await api.range('a', { rangeEnd: b('z'), minModRevision: 4n, maxModRevision: 6n });
    expect(keysOf(mod.kvs)).toEqual(['c', 'd', 'e']);
    expect(mod.count).toBe(5n);
    const created = await api.range('a', { rangeEnd: b('z'), maxCreateRevision: 3n });
    expect(keysOf(created.kvs)).toEqual(['a', 'b']);
    const minCreated = await api.range('a', { rangeEnd: b('z'), minCreateRevision: 5n });
    expect(keysOf(minCreated.kvs)).toEqual(['d', 'e']);
    const limited = await api.range('a', { rangeEnd: b('z'), minModRevision: 3n, limit: 2n });
    expect(keysOf(limited.kvs)).toEqual(['b', 'c']);
    expect(limited.more).toBe(true);
    expect(limited.count).toBe(5n);
  });

  it('keys_only drops the value and keeps revisions, version and lease', async () => {
    const lease = await grantLease(server, 0x1234n);
    await api.put('a', 'value', { lease });
    await api.put('a', 'value2', { lease });
    const response = await api.range('a', { keysOnly: true });
    const revision = Number(response.header?.revision);
    expect(response.kvs.map(summary)).toEqual([
      { key: 'a', value: '', create: revision - 1, mod: revision, version: 2, lease },
    ]);
  });

  it('reads an older revision; the header still has the current revision', async () => {
    await abcde();
    await api.put('a', 'A2'); // 7
    await api.del('b'); // 8
    const old = await api.range('a', { rangeEnd: b('z'), revision: 3n });
    expect(old.header?.revision).toBe(8n);
    expect(old.kvs.map(summary)).toEqual([
      { key: 'a', value: 'A', create: 2, mod: 2, version: 1, lease: 0n },
      { key: 'b', value: 'B', create: 3, mod: 3, version: 1, lease: 0n },
    ]);
    expect(old.count).toBe(2n);
    const negative = await api.range('a', { rangeEnd: b('z'), revision: -3n });
    expect(keysOf(negative.kvs)).toEqual(['a', 'c', 'd', 'e']);
  });

  it('a future revision is OutOfRange', async () => {
    await abcde();
    await expect(api.range('a', { revision: 7n })).rejects.toMatchObject(
      status(OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision'),
    );
  });

  it('a compacted revision is OutOfRange; reading exactly at the compaction revision is fine', async () => {
    await abcde();
    await api.put('a', 'A2'); // 7
    await api.compact(4);
    await expect(api.range('a', { revision: 3n })).rejects.toMatchObject(
      status(OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted'),
    );
    const atCompaction = await api.range('a', { rangeEnd: b('z'), revision: 4n });
    expect(keysOf(atCompaction.kvs)).toEqual(['a', 'b', 'c']);
    expect(summary(atCompaction.kvs[0])?.value).toBe('A');
  });

  it('an empty key is InvalidArgument', async () => {
    await expect(api.range('')).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: key is not provided'),
    );
    await expect(api.range('', { rangeEnd: b('z') })).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: key is not provided'),
    );
  });

  it('an unknown sort order or target is InvalidArgument (etcd 3.6+)', async (context) => {
    if (!versionAtLeast(server.version, 3, 6)) context.skip('etcd < 3.6 accepts any sort value');
    await expect(api.range('a', { sortOrder: 7 as SortOrderValue })).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: invalid sort option'),
    );
    await expect(api.range('a', { sortTarget: 9 as SortTargetValue })).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: invalid sort option'),
    );
  });

  it('keys are ordered byte-wise, bytes above 0x7f after ASCII', async () => {
    for (const key of [[0xff], [0x61, 0x00], [0x61], [0xc3, 0xa9], [0x7f]]) {
      await server.client.unary(KV.Put, { key: new Uint8Array(key), value: b('') });
    }
    const response = await api.range('\0', { rangeEnd: b('\0') });
    expect(response.kvs.map((kv) => [...(kv.key ?? [])])).toEqual([
      [0x61],
      [0x61, 0x00],
      [0x7f],
      [0xc3, 0xa9],
      [0xff],
    ]);
  });
});
