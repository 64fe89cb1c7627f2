// Results serialize: JSON.stringify of a KeyValue, a header and every result gives bigints as
// decimal strings and bytes as base64 (the protobuf JSON mapping of etcd's gateway), on every backend.
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Etcd } from '../../src/etcd.js';
import type { ResponseHeader } from '../../src/header.js';
import { jsonReplacer, toJSONValue } from '../../src/json.js';
import { KeyValue } from '../../src/key-value.js';
import { cmp } from '../../src/kv/compare.js';
import { op } from '../../src/kv/op.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const b64 = (s: string) => Buffer.from(s).toString('base64');
/** What a value becomes once written as JSON and read back. */
const roundTrip = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

function headerJSON(header: ResponseHeader) {
  return {
    clusterId: header.clusterId.toString(),
    memberId: header.memberId.toString(),
    revision: header.revision.toString(),
    raftTerm: header.raftTerm.toString(),
  };
}

function kvJSON(kv: KeyValue) {
  return {
    key: Buffer.from(kv.key).toString('base64'),
    value: Buffer.from(kv.value).toString('base64'),
    createRevision: kv.createRevision.toString(),
    modRevision: kv.modRevision.toString(),
    version: kv.version.toString(),
    lease: kv.lease.toString(),
  };
}

describe('JSON of values the client makes', () => {
  const kv = new KeyValue({
    key: bytes('config/a'),
    value: new Uint8Array([0xff, 0x00, 0x41]),
    createRevision: 9_007_199_254_740_993n,
    modRevision: 12n,
    version: 3n,
    lease: 0n,
  });

  it('a KeyValue: bytes in base64 (binary values survive), numbers as exact decimal strings', () => {
    expect(JSON.stringify(kv)).toBe(
      '{"key":"Y29uZmlnL2E=","value":"/wBB","createRevision":"9007199254740993",' +
        '"modRevision":"12","version":"3","lease":"0"}',
    );
    expect(kv.toJSON()).toEqual(roundTrip(kv));
  });

  it('toJSONValue and jsonReplacer convert values the client did not make', () => {
    const own = { leases: [1n, 2n], key: bytes('k'), kv, missing: undefined, n: 1 };
    const expected = { leases: ['1', '2'], key: 'aw==', kv: kvJSON(kv), n: 1 };
    expect(toJSONValue(own)).toEqual(expected);
    expect(JSON.parse(JSON.stringify(own, jsonReplacer))).toEqual(expected);
    expect(toJSONValue(5n)).toBe('5');
    expect(() => JSON.stringify({ n: 1n })).toThrow(TypeError);
  });
});

describeEachBackend('JSON.stringify of results', ({ backend, prefix }) => {
  let etcd: Etcd;
  const k = (name: string) => `${prefix()}${name}`;
  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('get, range, put, delete, txn and compact results', async () => {
    const put = await etcd.put(k('a'), 'v1');
    expect(roundTrip(put)).toEqual({ header: headerJSON(put.header) });
    const again = await etcd.put(k('a'), 'v2', { prevKv: true });
    expect(roundTrip(again)).toEqual({
      header: headerJSON(again.header),
      prevKv: kvJSON(again.prevKv!),
    });
    expect(roundTrip(again.prevKv)).toMatchObject({ value: b64('v1'), version: '1' });

    const got = await etcd.get(k('a'));
    expect(roundTrip(got)).toEqual({
      key: b64(k('a')),
      value: b64('v2'),
      createRevision: put.header.revision.toString(),
      modRevision: again.header.revision.toString(),
      version: '2',
      lease: '0',
    });

    const range = await etcd.range({ prefix: prefix() });
    expect(roundTrip(range)).toEqual({
      header: headerJSON(range.header),
      kvs: [kvJSON(got!)],
      more: false,
      count: '1',
    });

    const txn = await etcd
      .txn()
      .if(cmp.version(k('a'), '==', 2n))
      .then(op.put(k('b'), 'v'), op.get(k('a')))
      .commit();
    const [, read] = txn.responses;
    expect(roundTrip(txn)).toEqual({
      header: headerJSON(txn.header),
      succeeded: true,
      responses: [{ kind: 'put' }, { kind: 'range', kvs: [kvJSON(got!)], more: false, count: '1' }],
    });
    expect(read?.kvs[0]?.text()).toBe('v2');

    const deleted = await etcd.delete({ prefix: prefix() }, { prevKv: true });
    expect(roundTrip(deleted)).toEqual({
      header: headerJSON(deleted.header),
      deleted: '2',
      prevKvs: deleted.prevKvs.map(kvJSON),
    });

    const compacted = await etcd.compact(put.header.revision);
    expect(roundTrip(compacted)).toEqual({ header: headerJSON(compacted.header) });
  });

  it('lease, watch, cluster and maintenance results', async () => {
    const lease = await etcd.lease.grant(30);
    try {
      expect(roundTrip(lease)).toEqual({
        id: lease.id.toString(),
        ttl: '30',
        header: headerJSON(lease.header),
      });
      await etcd.put(k('leased'), 'v', { lease });
      const ttl = await etcd.lease.timeToLive(lease.id, { keys: true });
      expect(roundTrip(ttl)).toEqual({
        id: lease.id.toString(),
        ttl: ttl.ttl.toString(),
        grantedTtl: '30',
        keys: [b64(k('leased'))],
        header: headerJSON(ttl.header),
      });

      const watcher = etcd.watch({ key: k('w') });
      try {
        await watcher.ready();
        await etcd.put(k('w'), 'x');
        for await (const batch of watcher) {
          expect(roundTrip(batch)).toEqual({
            revision: batch.revision.toString(),
            events: [{ type: 'put', kv: kvJSON(batch.events[0]!.kv) }],
            header: headerJSON(batch.header),
          });
          break;
        }
      } finally {
        await watcher.close();
      }

      const members = await etcd.cluster.memberList();
      const [member] = members.members;
      expect(roundTrip(members)).toEqual({
        members: [
          {
            id: member!.id.toString(),
            name: member!.name,
            peerUrls: [...member!.peerUrls],
            clientUrls: [...member!.clientUrls],
            isLearner: false,
          },
        ],
        header: headerJSON(members.header),
      });
      const status = await etcd.maintenance.status();
      expect(roundTrip(status)).toMatchObject({
        memberId: status.memberId.toString(),
        dbSize: status.dbSize.toString(),
        raftIndex: status.raftIndex.toString(),
        header: headerJSON(status.header),
      });
      const revoked = await lease.revoke();
      expect(roundTrip(revoked)).toEqual({ header: headerJSON(revoked.header) });
    } finally {
      await lease.revoke().catch(() => {});
    }
  });
});
