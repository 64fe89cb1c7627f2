// Conformance against etcd: Txn revisions, compares, limits,
// duplicate keys, branch-only checks, nested txns and read-your-writes.
import { expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { cmp, keysOf, op, Result, summary, Target } from '../support/kv.js';
import { put, WatchConnection } from '../watch/watch-client.js';
import { describeConformance, Errors } from './suite.js';

const { EQUAL, NOT_EQUAL, GREATER, LESS } = Result;

describeConformance('Txn (23-32)', ({ fresh }) => {
  it('23 read-only txn no bump: ranges and empty deletes keep the revision', async () => {
    const { api } = await fresh();
    await api.put('a', '1'); // 2
    const response = await api.txn({ success: [op.range('a'), op.del('missing'), op.range('b')] });
    expect(response.succeeded).toBe(true);
    expect(response.header?.revision).toBe(2n);
    expect(response.responses.map((r) => r.responseRange?.header?.revision)).toEqual([
      2n,
      undefined,
      2n,
    ]);
    expect(response.responses[1]?.responseDeleteRange).toMatchObject({
      deleted: 0n,
      header: { revision: 2n },
    });
    expect((await api.put('b', '1')).header?.revision).toBe(3n);
  });

  it('24 multi-put txn one revision, one watch response in op order', async () => {
    const { api, endpoint } = await fresh();
    const connection = new WatchConnection(endpoint);
    try {
      const stream = connection.open();
      stream.create({ key: b('a'), rangeEnd: b('z') });
      await stream.take(1);
      const response = await api.txn({
        success: [op.put('c', '1'), op.put('a', '2'), op.put('b', '3')],
      });
      expect(response.header?.revision).toBe(2n);
      expect(response.responses.map((r) => r.responsePut?.header?.revision)).toEqual([2n, 2n, 2n]);
      expect(await stream.next()).toEqual({
        revision: 2,
        watchId: 0,
        events: [put('c', '1', 2, 2, 1), put('a', '2', 2, 2, 1), put('b', '3', 2, 2, 1)],
      });
      expect(await stream.drain(200)).toEqual([]);
    } finally {
      connection.close();
    }
  });

  it('25 compare on missing key: VALUE always false; CREATE, MOD, VERSION, LEASE against 0', async () => {
    const { api } = await fresh();
    const passes = async (compare: ReturnType<typeof cmp.value>) =>
      (await api.txn({ compare: [compare] })).succeeded;
    expect(await passes(cmp.value('a', EQUAL, ''))).toBe(false);
    expect(await passes(cmp.value('a', NOT_EQUAL, 'x'))).toBe(false);
    expect(await passes(cmp.value('a', LESS, 'x'))).toBe(false);
    expect(await passes(cmp.value('a', GREATER, ''))).toBe(false);
    expect(await passes(cmp.create('a', EQUAL, 0))).toBe(true);
    expect(await passes(cmp.mod('a', EQUAL, 0))).toBe(true);
    expect(await passes(cmp.version('a', EQUAL, 0))).toBe(true);
    expect(await passes(cmp.lease('a', EQUAL, 0n))).toBe(true);
    expect(await passes(cmp.version('a', LESS, 1))).toBe(true);
    expect(await passes(cmp.mod('a', GREATER, 0))).toBe(false);
  });

  it('26 range compare: every key in the range must pass; an empty range is a missing key', async () => {
    const { api } = await fresh();
    await api.put('k1', '1'); // 2
    await api.put('k2', '1'); // 3
    await api.put('k3', '2'); // 4
    const passes = async (compare: ReturnType<typeof cmp.value>) =>
      (await api.txn({ compare: [compare] })).succeeded;
    expect(await passes(cmp.value('k1', EQUAL, '1', 'k3'))).toBe(true);
    expect(await passes(cmp.value('k1', EQUAL, '1', 'k4'))).toBe(false);
    expect(await passes(cmp.version('k', EQUAL, 1, '\0'))).toBe(true);
    expect(await passes(cmp.create('k2', GREATER, 2, '\0'))).toBe(true);
    expect(await passes(cmp.create('k2', GREATER, 3, '\0'))).toBe(false);
    expect(await passes(cmp.mod('k1', LESS, 4, 'k3'))).toBe(true);
    expect(await passes(cmp.create('x', EQUAL, 0, 'y'))).toBe(true);
    expect(await passes(cmp.value('x', NOT_EQUAL, 'q', 'y'))).toBe(false);
  });

  it('27 129 ops: 128 per list pass, 129 in success, failure or compare is "too many operations"', async () => {
    const { api } = await fresh();
    const puts = (n: number, prefix = 'k') =>
      Array.from({ length: n }, (_, i) => op.put(`${prefix}${i}`, 'v'));
    const compares = (n: number) =>
      Array.from({ length: n }, (_, i) => cmp.version(`c${i}`, EQUAL, 0));
    const response = await api.txn({ compare: compares(128), success: puts(128) });
    expect([response.succeeded, response.responses.length, response.header?.revision]).toEqual([
      true,
      128,
      2n,
    ]);
    await expect(api.txn({ success: puts(129) })).rejects.toMatchObject(Errors.tooManyOps);
    await expect(api.txn({ failure: puts(129) })).rejects.toMatchObject(Errors.tooManyOps);
    await expect(api.txn({ compare: compares(129) })).rejects.toMatchObject(Errors.tooManyOps);
    // A nested txn counts against what its parent leaves: 100 + 28 fits, 100 + 29 does not.
    const nested = (n: number) => op.txn([], puts(n, 'n'));
    expect((await api.txn({ success: [...puts(99, 'p'), nested(28)] })).succeeded).toBe(true);
    await expect(api.txn({ success: [...puts(99, 'p'), nested(29)] })).rejects.toMatchObject(
      Errors.tooManyOps,
    );
  });

  it('28 duplicate-key cases: errors and allowed cases', async () => {
    const { api } = await fresh();
    const rejected = [
      [op.put('a', '1'), op.put('a', '2')],
      [op.del('a', 'c'), op.put('b', '1')],
      [op.put('b', '1'), op.del('a', 'c')],
      [op.put('a', '1'), op.txn([], [op.put('a', '2')])],
      [op.txn([], [op.put('a', '2')]), op.txn([], [], [op.put('a', '3')])],
      [op.txn([], [op.del('a')]), op.txn([], [op.put('a', '1')])],
    ];
    for (const success of rejected) {
      await expect(api.txn({ success })).rejects.toMatchObject(Errors.duplicateKey);
    }
    const allowed = [
      // Overlapping deletes, and puts next to a deleted range.
      [op.del('a', 'c'), op.del('b', 'd'), op.del('b'), op.put('d', '1'), op.put('e', '1')],
      // The same key in the then and else of one nested txn.
      [op.txn([cmp.create('x', EQUAL, 0)], [op.put('x', '1')], [op.put('x', '2')])],
      // etcd's quirk: a delete with range_end "\0" conflicts with no put.
      [op.del('f', '\0'), op.put('g', '1')],
      // etcd's quirk: a nested txn may delete what an earlier nested txn put.
      [op.txn([], [op.put('h', '1')]), op.txn([], [op.del('h')])],
    ];
    const revisions = [];
    for (const success of allowed) {
      const response = await api.txn({ success });
      expect(response.succeeded).toBe(true);
      revisions.push(response.header?.revision);
    }
    expect(revisions).toEqual([2n, 3n, 4n, 5n]);
    // Success and failure may name the same key.
    expect(
      (await api.txn({ success: [op.put('a', '1')], failure: [op.put('a', '2')] })).succeeded,
    ).toBe(true);
    // The "\0" delete took x with it.
    expect(keysOf((await api.range('\0', { rangeEnd: b('\0') })).kvs)).toEqual([
      'a',
      'd',
      'e',
      'g',
    ]);
  });

  it('29 txn put plus future range (put not applied): OutOfRange, no revision', async () => {
    const { api } = await fresh();
    await api.put('a', '1'); // 2
    await expect(
      api.txn({ success: [op.put('b', '1'), op.range('a', { revision: 3n })] }),
    ).rejects.toMatchObject(Errors.future);
    const response = await api.range('b');
    expect([response.count, response.header?.revision]).toEqual([0n, 2n]);
  });

  it('29 txn put plus future range: the puts on the path are checked before the ranges, wherever they sit', async () => {
    const { api } = await fresh();
    const future = op.range('a', { revision: 5n });
    await expect(
      api.txn({ success: [future, op.put('b', '', { ignoreValue: true })] }),
    ).rejects.toMatchObject(Errors.keyNotFound);
    await expect(
      api.txn({ success: [future, op.txn([], [op.put('b', '1', { lease: 0x29n })])] }),
    ).rejects.toMatchObject(Errors.leaseNotFound);
    await expect(api.txn({ success: [future, op.put('b', '1')] })).rejects.toMatchObject(
      Errors.future,
    );
  });

  it('30 untaken branch not validated: unknown lease, ignore_value on a missing key, future range', async () => {
    const { api } = await fresh();
    const response = await api.txn({
      compare: [cmp.create('a', EQUAL, 0)],
      success: [op.put('a', '1')],
      failure: [
        op.put('b', '1', { lease: 0x5n }),
        op.put('c', '', { ignoreValue: true }),
        op.range('a', { revision: 100n }),
      ],
    });
    expect([response.succeeded, response.header?.revision]).toEqual([true, 2n]);
    // The same ops on the taken branch reject the whole txn.
    await expect(
      api.txn({ success: [op.put('z', '1'), op.put('b', '1', { lease: 0x5n })] }),
    ).rejects.toMatchObject(Errors.leaseNotFound);
    await expect(
      api.txn({ success: [op.put('c', '', { ignoreValue: true })] }),
    ).rejects.toMatchObject(Errors.keyNotFound);
    expect(keysOf((await api.range('\0', { rangeEnd: b('\0') })).kvs)).toEqual(['a']);
  });

  it('31 nested txn paths: each nested txn takes its own branch; sub-headers hold only the revision', async () => {
    const { api } = await fresh();
    await api.put('a', '1'); // 2
    const response = await api.txn({
      compare: [cmp.value('a', EQUAL, '1')],
      success: [
        op.txn(
          [cmp.value('a', EQUAL, 'nope')],
          [op.put('then', '1')],
          [op.put('else', '1'), op.range('a')],
        ),
        op.txn([], [op.txn([cmp.version('a', GREATER, 0)], [op.put('deep', '1')])]),
      ],
      failure: [op.put('outer-else', '1')],
    });
    expect([response.succeeded, response.header?.revision]).toEqual([true, 3n]);
    expect(response.header?.clusterId).not.toBe(0n);
    const [first, second] = response.responses;
    expect(first?.responseTxn?.succeeded).toBe(false);
    expect(first?.responseTxn?.header?.revision ?? 0n).toBe(0n);
    const inner = first?.responseTxn?.responses ?? [];
    const header = inner[0]?.responsePut?.header;
    expect([header?.clusterId, header?.memberId, header?.raftTerm, header?.revision]).toEqual([
      0n,
      0n,
      0n,
      3n,
    ]);
    expect(inner[1]?.responseRange?.kvs?.map(summary)).toEqual([
      { key: 'a', value: '1', create: 2, mod: 2, version: 1, lease: 0n },
    ]);
    expect(second?.responseTxn?.responses?.[0]?.responseTxn?.succeeded).toBe(true);
    expect(keysOf((await api.range('\0', { rangeEnd: b('\0') })).kvs)).toEqual([
      'a',
      'deep',
      'else',
    ]);
  });

  it('32 read-your-writes in txn: a range after a put or delete sees it; compares see the state before', async () => {
    const { api } = await fresh();
    await api.put('a', '1'); // 2
    await api.put('b', '1'); // 3
    const response = await api.txn({
      success: [
        op.range('a'),
        op.put('a', '2'),
        op.range('a'),
        op.del('b'),
        op.range('b'),
        op.txn(
          [{ key: b('a'), target: Target.VALUE, result: EQUAL, value: b('1') }],
          [op.range('a', { countOnly: true })],
        ),
      ],
    });
    const [before, , after, , deleted, nested] = response.responses;
    expect(summary(before?.responseRange?.kvs?.[0])).toMatchObject({ value: '1', mod: 2 });
    expect(before?.responseRange?.header?.revision).toBe(3n);
    expect(summary(after?.responseRange?.kvs?.[0])).toEqual({
      key: 'a',
      value: '2',
      create: 2,
      mod: 4,
      version: 2,
      lease: 0n,
    });
    expect(after?.responseRange?.header?.revision).toBe(4n);
    expect(deleted?.responseRange?.kvs).toEqual([]);
    expect(nested?.responseTxn?.succeeded).toBe(true);
    expect(nested?.responseTxn?.responses?.[0]?.responseRange?.count).toBe(1n);
  });
});
