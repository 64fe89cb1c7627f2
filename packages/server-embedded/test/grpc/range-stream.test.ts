import { etcdserverpb_KV as KV } from '@etcdkit/client/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { status } from '../support/grpc-client.js';
import { keysOf, kv, op, SortOrder, SortTarget } from '../support/kv.js';
import {
  specBackend,
  startTestServer,
  type TestServer,
  versionAtLeast,
} from '../support/test-server.js';

const INVALID_ARGUMENT = 3;
const OUT_OF_RANGE = 11;
const UNIMPLEMENTED = 12;

describe(`RangeStream [${specBackend}] (etcd 3.7+)`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;

  beforeEach(async (context) => {
    server = await startTestServer();
    api = kv(server);
    if (!versionAtLeast(server.version, 3, 7))
      context.skip(`etcd ${server.version} has no RangeStream`);
  });
  afterEach(() => server.stop());

  /** 300 keys k000..k299 in 3 txns, at revisions 2..4. */
  async function fill(): Promise<void> {
    for (let t = 0; t < 3; t++) {
      await api.txn({
        success: Array.from({ length: 100 }, (_, i) =>
          op.put(`k${String(t * 100 + i).padStart(3, '0')}`, `v${i}`),
        ),
      });
    }
  }

  const stream = (request: Parameters<typeof api.range>[1] & { key?: Uint8Array }) =>
    server.client.serverStream(KV.RangeStream, { key: b('k'), rangeEnd: b('l'), ...request });

  it('merging the chunks gives the Range response', async () => {
    await fill();
    for (const limit of [0n, 1n, 25n, 299n, 300n, 1000n]) {
      const chunks = await stream({ limit });
      const merged = chunks.flatMap((chunk) => chunk.rangeResponse?.kvs ?? []);
      const last = chunks.at(-1)?.rangeResponse;
      const range = await api.range('k', { rangeEnd: b('l'), limit });
      expect(merged).toEqual(range.kvs);
      expect(last?.more).toBe(range.more);
      expect(last?.count).toBe(range.count);
      expect(last?.header).toEqual(range.header);
    }
  });

  it('only the last chunk carries header, more and count', async () => {
    await fill();
    const chunks = await stream({});
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks.slice(0, -1)) {
      expect(chunk.rangeResponse?.header).toBeFalsy();
      expect(chunk.rangeResponse?.count ?? 0n).toBe(0n);
      expect(chunk.rangeResponse?.more ?? false).toBe(false);
      expect(chunk.rangeResponse?.kvs?.length).toBeGreaterThan(0);
    }
    expect(chunks.at(-1)?.rangeResponse?.header).toMatchObject({ revision: 4n, raftTerm: 2n });
  });

  it('reads an older revision with the current revision in the header', async () => {
    await fill();
    const chunks = await stream({ revision: 3n });
    const merged = chunks.flatMap((chunk) => chunk.rangeResponse?.kvs ?? []);
    expect(merged).toHaveLength(200);
    expect(chunks.at(-1)?.rangeResponse).toMatchObject({ count: 200n, header: { revision: 4n } });
  });

  it('count_only is one message with the count', async () => {
    await fill();
    const chunks = await stream({ countOnly: true });
    expect(chunks).toHaveLength(1);
    expect(chunks[0]?.rangeResponse).toMatchObject({
      kvs: [],
      count: 300n,
      header: { revision: 4n },
    });
  });

  it('a single key and an empty range are one message', async () => {
    await fill();
    const single = await server.client.serverStream(KV.RangeStream, { key: b('k007') });
    expect(single).toHaveLength(1);
    expect(keysOf(single[0]?.rangeResponse?.kvs)).toEqual(['k007']);
    const empty = await server.client.serverStream(KV.RangeStream, {
      key: b('x'),
      rangeEnd: b('y'),
    });
    expect(empty).toHaveLength(1);
    expect(empty[0]?.rangeResponse).toMatchObject({ kvs: [], count: 0n });
  });

  it('a custom sort order is Unimplemented; the default orders are fine', async () => {
    await expect(stream({ sortOrder: SortOrder.DESCEND })).rejects.toMatchObject(
      status(UNIMPLEMENTED, 'RangeStream does not support custom sort orders'),
    );
    await expect(stream({ sortTarget: SortTarget.MOD })).resolves.toHaveLength(1);
    await expect(
      stream({ sortTarget: SortTarget.KEY, sortOrder: SortOrder.ASCEND }),
    ).resolves.toHaveLength(1);
  });

  it('a revision filter is Unimplemented', async () => {
    await expect(stream({ minModRevision: 2n })).rejects.toMatchObject(
      status(UNIMPLEMENTED, 'RangeStream does not support revision filters'),
    );
  });

  it('validates like Range', async () => {
    await expect(stream({ key: new Uint8Array(0) })).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: key is not provided'),
    );
    await expect(stream({ revision: 9n })).rejects.toMatchObject(
      status(OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision'),
    );
  });
});
