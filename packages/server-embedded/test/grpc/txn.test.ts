import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { status } from '../support/grpc-client.js';
import { cmp, grantLease, keysOf, kv, op, Result, summary, Target } from '../support/kv.js';
import { specBackend, startTestServer, type TestServer } from '../support/test-server.js';

const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;
const OUT_OF_RANGE = 11;
const { EQUAL, NOT_EQUAL, GREATER, LESS } = Result;

const tooManyOps = status(INVALID_ARGUMENT, 'etcdserver: too many operations in txn request');
const duplicateKey = status(INVALID_ARGUMENT, 'etcdserver: duplicate key given in txn request');
const emptyKey = status(INVALID_ARGUMENT, 'etcdserver: key is not provided');

describe(`Txn [${specBackend}]`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;

  beforeEach(async () => {
    server = await startTestServer();
    api = kv(server);
  });
  afterEach(() => server.stop());

  describe('revisions', () => {
    it('a read-only txn makes no revision', async () => {
      await api.put('a', '1');
      const response = await api.txn({ success: [op.range('a'), op.range('b')] });
      expect(response.succeeded).toBe(true);
      expect(response.header?.revision).toBe(2n);
      expect(response.responses.map((r) => r.responseRange?.header?.revision)).toEqual([2n, 2n]);
      expect(await api.revision()).toBe(2);
    });

    it('puts and deletes of one txn share one revision, each response showing it', async () => {
      await api.put('x', '0'); // 2
      const response = await api.txn({
        success: [op.put('a', '1'), op.del('x'), op.put('b', '2')],
      });
      expect(response.header?.revision).toBe(3n);
      expect(response.responses.map((r) => r.responsePut?.header?.revision)).toEqual([
        3n,
        undefined,
        3n,
      ]);
      expect(response.responses[1]?.responseDeleteRange?.header?.revision).toBe(3n);
      expect(response.responses[1]?.responseDeleteRange?.deleted).toBe(1n);
      expect((await api.range('a', { rangeEnd: b('z') })).kvs.map(summary)).toEqual([
        { key: 'a', value: '1', create: 3, mod: 3, version: 1, lease: 0n },
        { key: 'b', value: '2', create: 3, mod: 3, version: 1, lease: 0n },
      ]);
    });

    it('a txn whose taken branch deletes nothing makes no revision', async () => {
      await api.put('a', '1');
      const response = await api.txn({ success: [op.del('missing'), op.range('a')] });
      expect(response.header?.revision).toBe(2n);
      expect(response.responses[0]?.responseDeleteRange?.header?.revision).toBe(2n);
      expect(await api.revision()).toBe(2);
    });

    it('a delete after a put in the same txn reports the new revision even if it deletes nothing', async () => {
      const response = await api.txn({ success: [op.put('a', '1'), op.del('missing')] });
      expect(response.responses[1]?.responseDeleteRange).toMatchObject({ deleted: 0n });
      expect(response.responses[1]?.responseDeleteRange?.header?.revision).toBe(2n);
    });

    it('responses inside a txn carry only a revision in their header', async () => {
      const response = await api.txn({ success: [op.put('a', '1'), op.range('a')] });
      expect(response.header?.clusterId).not.toBe(0n);
      const inner = response.responses[1]?.responseRange?.header;
      expect(inner?.revision).toBe(2n);
      expect(inner?.clusterId ?? 0n).toBe(0n);
      expect(inner?.memberId ?? 0n).toBe(0n);
      expect(inner?.raftTerm ?? 0n).toBe(0n);
    });
  });

  describe('compares', () => {
    it('on a missing key VALUE is always false; CREATE, MOD, VERSION, LEASE compare with 0', async () => {
      const passes = async (compare: ReturnType<typeof cmp.value>) =>
        (await api.txn({ compare: [compare] })).succeeded;
      expect(await passes(cmp.value('a', EQUAL, ''))).toBe(false);
      expect(await passes(cmp.value('a', NOT_EQUAL, 'x'))).toBe(false);
      expect(await passes(cmp.value('a', LESS, 'x'))).toBe(false);
      expect(await passes(cmp.create('a', EQUAL, 0))).toBe(true);
      expect(await passes(cmp.mod('a', EQUAL, 0))).toBe(true);
      expect(await passes(cmp.version('a', EQUAL, 0))).toBe(true);
      expect(await passes(cmp.lease('a', EQUAL, 0n))).toBe(true);
      expect(await passes(cmp.version('a', LESS, 1))).toBe(true);
      expect(await passes(cmp.mod('a', GREATER, 0))).toBe(false);
    });

    it('compares every target with every result on an existing key', async () => {
      const lease = await grantLease(server, 0x42n);
      await api.put('a', 'm'); // 2
      await api.put('a', 'm', { lease }); // 3
      const passes = async (compare: ReturnType<typeof cmp.value>) =>
        (await api.txn({ compare: [compare] })).succeeded;
      expect(await passes(cmp.value('a', EQUAL, 'm'))).toBe(true);
      expect(await passes(cmp.value('a', GREATER, 'l'))).toBe(true);
      expect(await passes(cmp.value('a', LESS, 'ma'))).toBe(true);
      expect(await passes(cmp.value('a', NOT_EQUAL, 'm'))).toBe(false);
      expect(await passes(cmp.create('a', EQUAL, 2))).toBe(true);
      expect(await passes(cmp.mod('a', EQUAL, 3))).toBe(true);
      expect(await passes(cmp.mod('a', LESS, 3))).toBe(false);
      expect(await passes(cmp.version('a', GREATER, 1))).toBe(true);
      expect(await passes(cmp.version('a', NOT_EQUAL, 2))).toBe(false);
      expect(await passes(cmp.lease('a', EQUAL, lease))).toBe(true);
      expect(await passes(cmp.lease('a', GREATER, 0n))).toBe(true);
    });

    it('a compare whose operand is in another field compares against zero', async () => {
      await api.put('a', '1');
      const mismatched = { key: b('a'), target: Target.MOD, result: GREATER, version: 100n };
      expect((await api.txn({ compare: [mismatched] })).succeeded).toBe(true);
    });

    it('all compares must pass for the success branch', async () => {
      await api.put('a', '1');
      const response = await api.txn({
        compare: [cmp.value('a', EQUAL, '1'), cmp.version('a', EQUAL, 2)],
        success: [op.put('won', '1')],
        failure: [op.put('lost', '1'), op.range('a')],
      });
      expect(response.succeeded).toBe(false);
      expect(response.responses).toHaveLength(2);
      expect(keysOf(response.responses[1]?.responseRange?.kvs)).toEqual(['a']);
      expect((await api.range('lost')).count).toBe(1n);
      expect((await api.range('won')).count).toBe(0n);
    });

    it('a range compare passes only if every key in the range passes', async () => {
      await api.put('k1', '1');
      await api.put('k2', '1');
      await api.put('k3', '2');
      const passes = async (compare: ReturnType<typeof cmp.value>) =>
        (await api.txn({ compare: [compare] })).succeeded;
      expect(await passes(cmp.value('k1', EQUAL, '1', 'k3'))).toBe(true);
      expect(await passes(cmp.value('k1', EQUAL, '1', 'k4'))).toBe(false);
      expect(await passes(cmp.version('k', EQUAL, 1, '\0'))).toBe(true);
      expect(await passes(cmp.create('k2', GREATER, 2, '\0'))).toBe(true);
      expect(await passes(cmp.create('k2', GREATER, 3, '\0'))).toBe(false);
      // An empty range behaves like a missing key.
      expect(await passes(cmp.create('x', EQUAL, 0, 'y'))).toBe(true);
      expect(await passes(cmp.value('x', NOT_EQUAL, 'q', 'y'))).toBe(false);
    });

    it('compares see the state before the txn, not its own writes', async () => {
      const response = await api.txn({
        success: [
          op.put('a', '1'),
          op.txn([cmp.version('a', EQUAL, 0)], [op.put('b', 'before')], [op.put('b', 'after')]),
        ],
      });
      expect(response.responses[1]?.responseTxn?.succeeded).toBe(true);
      expect(summary((await api.range('b')).kvs[0])?.value).toBe('before');
    });
  });

  describe('reads inside a txn', () => {
    it('a range after a put sees the put (read your writes)', async () => {
      await api.put('a', '1'); // 2
      const response = await api.txn({ success: [op.range('a'), op.put('a', '2'), op.range('a')] });
      const [before, , after] = response.responses;
      expect(summary(before?.responseRange?.kvs?.[0])).toMatchObject({ value: '1', mod: 2 });
      expect(before?.responseRange?.header?.revision).toBe(2n);
      expect(summary(after?.responseRange?.kvs?.[0])).toMatchObject({
        value: '2',
        mod: 3,
        version: 2,
      });
      expect(after?.responseRange?.header?.revision).toBe(3n);
    });

    it('a put with prev_kv after a delete in the same txn sees no previous value', async () => {
      await api.put('a', '1');
      const response = await api.txn({
        success: [op.del('a', '\0'), op.put('b', '2', { prevKv: true })],
      });
      expect(response.responses[1]?.responsePut?.prevKv).toBeFalsy();
    });

    it('a range at a future revision rejects the whole txn; the put is not applied', async () => {
      await api.put('a', '1'); // 2
      await expect(
        api.txn({ success: [op.put('b', '1'), op.range('a', { revision: 3n })] }),
      ).rejects.toMatchObject(
        status(OUT_OF_RANGE, 'etcdserver: mvcc: required revision is a future revision'),
      );
      expect((await api.range('b')).count).toBe(0n);
      expect(await api.revision()).toBe(2);
    });

    it('a range at a compacted revision rejects the txn', async () => {
      await api.put('a', '1'); // 2
      await api.put('a', '2'); // 3
      await api.compact(3);
      await expect(api.txn({ success: [op.range('a', { revision: 2n })] })).rejects.toMatchObject(
        status(OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted'),
      );
      const atCompaction = await api.txn({ success: [op.range('a', { revision: 3n })] });
      expect(summary(atCompaction.responses[0]?.responseRange?.kvs?.[0])?.value).toBe('2');
    });

    it('inside a txn a negative range revision counts as compacted once below the compaction', async () => {
      await api.put('a', '1');
      const fresh = await api.txn({ success: [op.range('a', { revision: -1n })] });
      expect(keysOf(fresh.responses[0]?.responseRange?.kvs)).toEqual(['a']);
      await expect(api.txn({ success: [op.range('a', { revision: -2n })] })).rejects.toMatchObject(
        status(OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted'),
      );
    });
  });

  describe('checks on the taken branch only', () => {
    it('an unknown lease on the taken branch rejects the whole txn', async () => {
      await expect(
        api.txn({ success: [op.put('a', '1'), op.put('b', '1', { lease: 0x5n })] }),
      ).rejects.toMatchObject(status(NOT_FOUND, 'etcdserver: requested lease not found'));
      expect((await api.range('a')).count).toBe(0n);
    });

    it('ignore_value on a missing key on the taken branch is "key not found"', async () => {
      await expect(
        api.txn({ success: [op.put('a', '', { ignoreValue: true })] }),
      ).rejects.toMatchObject(status(INVALID_ARGUMENT, 'etcdserver: key not found'));
    });

    it('the branch not taken is not checked for leases, keys or revisions', async () => {
      const response = await api.txn({
        compare: [cmp.create('a', EQUAL, 0)],
        success: [op.put('a', '1')],
        failure: [
          op.put('b', '1', { lease: 0x5n }),
          op.put('c', '', { ignoreValue: true }),
          op.range('a', { revision: 100n }),
        ],
      });
      expect(response.succeeded).toBe(true);
    });

    it('checks the ops of a txn against the state before it', async () => {
      // The put creates "a", but ignore_value is checked against the state before the txn.
      await expect(
        api.txn({
          success: [op.put('a', '1'), op.txn([], [op.put('a', '', { ignoreValue: true })])],
        }),
      ).rejects.toMatchObject(duplicateKey);
      await expect(
        api.txn({
          success: [op.put('b', '1'), op.txn([], [op.put('a', '', { ignoreValue: true })])],
        }),
      ).rejects.toMatchObject(status(INVALID_ARGUMENT, 'etcdserver: key not found'));
    });
  });

  describe('nested txns', () => {
    it('run the branch their own compares pick, with an empty response header', async () => {
      await api.put('a', '1'); // 2
      const response = await api.txn({
        compare: [cmp.value('a', EQUAL, '1')],
        success: [
          op.txn(
            [cmp.value('a', EQUAL, 'nope')],
            [op.put('then', '1')],
            [op.put('else', '1'), op.range('a')],
          ),
          op.txn([], [op.put('plain', '1')]),
        ],
      });
      expect(response.succeeded).toBe(true);
      expect(response.header?.revision).toBe(3n);
      const [first, second] = response.responses;
      expect(first?.responseTxn?.succeeded).toBe(false);
      expect(first?.responseTxn?.header?.revision ?? 0n).toBe(0n);
      expect(first?.responseTxn?.responses).toHaveLength(2);
      expect(first?.responseTxn?.responses?.[0]?.responsePut?.header?.revision).toBe(3n);
      expect(keysOf(first?.responseTxn?.responses?.[1]?.responseRange?.kvs)).toEqual(['a']);
      expect(second?.responseTxn?.succeeded).toBe(true);
      expect(keysOf((await api.range('a', { rangeEnd: b('z') })).kvs)).toEqual([
        'a',
        'else',
        'plain',
      ]);
    });

    it('nest several levels deep', async () => {
      const response = await api.txn({
        success: [op.txn([], [op.txn([cmp.create('a', EQUAL, 0)], [op.put('deep', '1')])])],
      });
      expect(response.responses[0]?.responseTxn?.responses?.[0]?.responseTxn?.succeeded).toBe(true);
      expect((await api.range('deep')).count).toBe(1n);
    });
  });

  describe('validation order and limits', () => {
    const puts = (n: number, prefix = 'k') =>
      Array.from({ length: n }, (_, i) => op.put(`${prefix}${i}`, 'v'));
    const compares = (n: number) =>
      Array.from({ length: n }, (_, i) => cmp.version(`c${i}`, EQUAL, 0));

    it('allows 128 ops per list and rejects 129 in any list', async () => {
      expect((await api.txn({ success: puts(128) })).responses).toHaveLength(128);
      await expect(api.txn({ success: puts(129) })).rejects.toMatchObject(tooManyOps);
      await expect(api.txn({ failure: puts(129) })).rejects.toMatchObject(tooManyOps);
      await expect(api.txn({ compare: compares(129) })).rejects.toMatchObject(tooManyOps);
      expect((await api.txn({ compare: compares(128), success: puts(128, 'x') })).succeeded).toBe(
        true,
      );
    });

    it('a nested txn counts against what its parent leaves of the budget', async () => {
      const nested = (n: number) => op.txn([], puts(n, 'n'));
      // The parent's longest list is 100 ops, so a nested list may hold 28.
      expect((await api.txn({ success: [...puts(99), nested(28)] })).succeeded).toBe(true);
      await expect(api.txn({ success: [...puts(99), nested(29)] })).rejects.toMatchObject(
        tooManyOps,
      );
      await expect(
        api.txn({ compare: compares(100), success: [nested(29)] }),
      ).rejects.toMatchObject(tooManyOps);
    });

    it('checks op count first, then empty compare keys, then each op, then duplicates', async () => {
      await expect(
        api.txn({ compare: [cmp.version('', EQUAL, 0)], success: puts(129) }),
      ).rejects.toMatchObject(tooManyOps);
      await expect(
        api.txn({ compare: [cmp.version('', EQUAL, 0)], success: [op.put('', '1')] }),
      ).rejects.toMatchObject(emptyKey);
      await expect(
        api.txn({ success: [op.put('a', '1'), op.put('a', '2')], failure: [op.range('')] }),
      ).rejects.toMatchObject(emptyKey);
      await expect(
        api.txn({ success: [op.put('a', '1'), op.put('a', 'x', { ignoreValue: true })] }),
      ).rejects.toMatchObject(status(INVALID_ARGUMENT, 'etcdserver: value is provided'));
    });

    it('an empty op is "key not found"', async () => {
      await expect(api.txn({ success: [{}] })).rejects.toMatchObject(
        status(INVALID_ARGUMENT, 'etcdserver: key not found'),
      );
    });

    it('empty keys are rejected in compares and in every kind of op', async () => {
      await expect(api.txn({ compare: [cmp.version('', EQUAL, 0)] })).rejects.toMatchObject(
        emptyKey,
      );
      await expect(api.txn({ success: [op.range('')] })).rejects.toMatchObject(emptyKey);
      await expect(api.txn({ failure: [op.del('')] })).rejects.toMatchObject(emptyKey);
      await expect(api.txn({ success: [op.txn([], [op.put('', '1')])] })).rejects.toMatchObject(
        emptyKey,
      );
    });
  });

  describe('duplicate keys', () => {
    it('the same key put twice in one branch is rejected', async () => {
      await expect(
        api.txn({ success: [op.put('a', '1'), op.put('a', '2')] }),
      ).rejects.toMatchObject(duplicateKey);
    });

    it('a put inside a deleted range is rejected, before or after the delete', async () => {
      await expect(
        api.txn({ success: [op.del('a', 'c'), op.put('b', '1')] }),
      ).rejects.toMatchObject(duplicateKey);
      await expect(
        api.txn({ success: [op.put('b', '1'), op.del('a', 'c')] }),
      ).rejects.toMatchObject(duplicateKey);
      await expect(api.txn({ success: [op.put('a', '1'), op.del('a')] })).rejects.toMatchObject(
        duplicateKey,
      );
    });

    it('a put next to a deleted range, and overlapping deletes, are fine', async () => {
      const response = await api.txn({
        success: [
          op.del('a', 'c'),
          op.del('b', 'd'),
          op.del('b'),
          op.put('d', '1'),
          op.put('e', '1'),
        ],
      });
      expect(response.succeeded).toBe(true);
    });

    it('the same key in the success and failure lists of one txn is fine', async () => {
      const response = await api.txn({ success: [op.put('a', '1')], failure: [op.put('a', '2')] });
      expect(response.succeeded).toBe(true);
    });

    it('a key put by a nested txn and by its parent is rejected', async () => {
      await expect(
        api.txn({ success: [op.put('a', '1'), op.txn([], [op.put('a', '2')])] }),
      ).rejects.toMatchObject(duplicateKey);
      await expect(
        api.txn({ success: [op.txn([], [op.put('a', '2')]), op.txn([], [], [op.put('a', '3')])] }),
      ).rejects.toMatchObject(duplicateKey);
      await expect(
        api.txn({ success: [op.del('a', 'b'), op.txn([], [], [op.put('a', '1')])] }),
      ).rejects.toMatchObject(duplicateKey);
    });

    it('the same key in the then and else of one nested txn is fine', async () => {
      const response = await api.txn({
        success: [op.txn([cmp.create('a', EQUAL, 0)], [op.put('a', '1')], [op.put('a', '2')])],
      });
      expect(response.responses[0]?.responseTxn?.succeeded).toBe(true);
      expect(summary((await api.range('a')).kvs[0])?.value).toBe('1');
    });

    it('a nested txn deleting a key put by a later nested txn is rejected', async () => {
      await expect(
        api.txn({ success: [op.txn([], [op.del('a')]), op.txn([], [op.put('a', '1')])] }),
      ).rejects.toMatchObject(duplicateKey);
    });

    it('etcd quirk: a nested txn deleting a key put by an earlier nested txn is allowed', async () => {
      const response = await api.txn({
        success: [op.txn([], [op.put('a', '1')]), op.txn([], [op.del('a')])],
      });
      expect(response.succeeded).toBe(true);
      expect((await api.range('a')).count).toBe(0n);
      expect(await api.revision()).toBe(2);
    });

    it('etcd quirk: a delete with range_end "\\0" conflicts with no put', async () => {
      await api.put('b', 'old');
      const response = await api.txn({ success: [op.del('a', '\0'), op.put('b', 'new')] });
      expect(response.responses[0]?.responseDeleteRange?.deleted).toBe(1n);
      expect(summary((await api.range('b')).kvs[0])).toMatchObject({
        value: 'new',
        version: 1,
        create: 3,
      });
    });
  });
});
