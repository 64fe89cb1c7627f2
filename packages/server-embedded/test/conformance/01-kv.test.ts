// Conformance against etcd: revisions, Put, Range, DeleteRange
// and the per-op checks. Each test runs on a fresh store, against the embedded server and etcd.
import { etcdserverpb_KV as KV } from '@etcdkit/client/protocol';
import { expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { grantLease, keysOf, op, SortOrder, SortTarget, summary } from '../support/kv.js';
import { put, WatchConnection } from '../watch/watch-client.js';
import { atLeast } from './fresh-server.js';
import { describeConformance, Errors } from './suite.js';

/** A key-value summary with no lease. */
const kvAt = (key: string, value: string, create: number, mod: number, version: number) => ({
  key,
  value,
  create,
  mod,
  version,
  lease: 0n,
});

describeConformance('KV (01-22)', ({ fresh }) => {
  it('01 fresh store at revision 1: nothing in it, raft term 2', async () => {
    const { api } = await fresh();
    const response = await api.range('\0', { rangeEnd: b('\0') });
    expect(response.header?.revision).toBe(1n);
    expect(response.header?.raftTerm).toBe(2n);
    expect(response.header?.clusterId).not.toBe(0n);
    expect(response.header?.memberId).not.toBe(0n);
    expect(response.kvs).toEqual([]);
    expect(response.count).toBe(0n);
    expect(response.more).toBe(false);
  });

  it('02 first put -> rev 2, create = mod = 2, version 1', async () => {
    const { api } = await fresh();
    const response = await api.put('a', '1');
    expect(response.header?.revision).toBe(2n);
    expect(response.prevKv).toBeFalsy();
    expect((await api.range('a')).kvs.map(summary)).toEqual([kvAt('a', '1', 2, 2, 1)]);
  });

  it('03 identical put bumps: version + 1, create revision kept; delete then put starts over', async () => {
    const { api } = await fresh();
    await api.put('a', '1'); // 2
    expect((await api.put('a', '1')).header?.revision).toBe(3n);
    expect((await api.range('a')).kvs.map(summary)).toEqual([kvAt('a', '1', 2, 3, 2)]);
    await api.del('a'); // 4
    await api.put('a', '1'); // 5
    expect((await api.range('a')).kvs.map(summary)).toEqual([kvAt('a', '1', 5, 5, 1)]);
  });

  it('04 put prev_kv: the key-value before the put, nothing for a new or deleted key', async () => {
    const { api } = await fresh();
    expect((await api.put('a', '1', { prevKv: true })).prevKv).toBeFalsy(); // 2
    expect(summary((await api.put('a', '2', { prevKv: true })).prevKv)).toEqual(
      kvAt('a', '1', 2, 2, 1),
    ); // 3
    await api.del('a'); // 4
    expect((await api.put('a', '3', { prevKv: true })).prevKv).toBeFalsy();
  });

  it('05 empty key rejected in every op: Range, Put, DeleteRange, Compare, txn ops', async () => {
    const { api, client } = await fresh();
    await expect(api.range('')).rejects.toMatchObject(Errors.emptyKey);
    await expect(api.range('', { rangeEnd: b('\0') })).rejects.toMatchObject(Errors.emptyKey);
    await expect(api.put('', 'v')).rejects.toMatchObject(Errors.emptyKey);
    await expect(api.del('')).rejects.toMatchObject(Errors.emptyKey);
    await expect(api.del('', { rangeEnd: b('z') })).rejects.toMatchObject(Errors.emptyKey);
    await expect(
      api.txn({ compare: [{ key: new Uint8Array(0), target: 0, result: 0 }] }),
    ).rejects.toMatchObject(Errors.emptyKey);
    await expect(api.txn({ success: [op.range('')] })).rejects.toMatchObject(Errors.emptyKey);
    await expect(api.txn({ success: [op.put('', 'v')] })).rejects.toMatchObject(Errors.emptyKey);
    await expect(api.txn({ failure: [op.del('')] })).rejects.toMatchObject(Errors.emptyKey);
    await expect(api.txn({ success: [op.txn([], [op.put('', 'v')])] })).rejects.toMatchObject(
      Errors.emptyKey,
    );
    // Nothing was written.
    expect((await client.unary(KV.Range, { key: b('a') })).header?.revision).toBe(1n);
  });

  it('06 half-open ranges: [key, range_end) holds key and not range_end; empty range_end is one key', async () => {
    const { api } = await fresh();
    for (const key of ['a', 'a/1', 'a/2', 'b', 'c']) await api.put(key, key); // 2..6
    expect(keysOf((await api.range('a', { rangeEnd: b('b') })).kvs)).toEqual(['a', 'a/1', 'a/2']);
    expect(keysOf((await api.range('a/', { rangeEnd: b('a0') })).kvs)).toEqual(['a/1', 'a/2']);
    expect(keysOf((await api.range('a/1', { rangeEnd: b('c') })).kvs)).toEqual(['a/1', 'a/2', 'b']);
    const single = await api.range('b');
    expect(single.kvs.map(summary)).toEqual([kvAt('b', 'b', 5, 5, 1)]);
    expect(single.count).toBe(1n);
  });

  it('07 empty and inverted ranges: range_end = key or below it is an empty answer, no error', async () => {
    const { api } = await fresh();
    for (const key of ['a', 'b', 'c']) await api.put(key, key); // 2..4
    for (const rangeEnd of ['b', 'a']) {
      const response = await api.range('b', { rangeEnd: b(rangeEnd) });
      expect(response.kvs).toEqual([]);
      expect(response.count).toBe(0n);
      expect(response.more).toBe(false);
      expect(response.header?.revision).toBe(4n);
    }
    expect((await api.range('missing')).kvs).toEqual([]);
  });

  it('08 range all: key "\\0" with range_end "\\0" is everything; range_end "\\0" is every key >= key', async () => {
    const { api } = await fresh();
    for (const key of ['\0', 'a', 'b', 'zz']) await api.put(key, 'v'); // 2..5
    const all = await api.range('\0', { rangeEnd: b('\0') });
    expect(keysOf(all.kvs)).toEqual(['\0', 'a', 'b', 'zz']);
    expect(all.count).toBe(4n);
    expect(keysOf((await api.range('b', { rangeEnd: b('\0') })).kvs)).toEqual(['b', 'zz']);
  });

  it('09 limit/more/count: the first keys, more only if more matched, count the total', async () => {
    const { api } = await fresh();
    for (const key of ['a', 'b', 'c', 'd', 'e']) await api.put(key, key); // 2..6
    const limited = await api.range('a', { rangeEnd: b('z'), limit: 2n });
    expect([keysOf(limited.kvs), limited.more, limited.count]).toEqual([['a', 'b'], true, 5n]);
    const exact = await api.range('a', { rangeEnd: b('z'), limit: 5n });
    expect([keysOf(exact.kvs).length, exact.more, exact.count]).toEqual([5, false, 5n]);
    const over = await api.range('a', { rangeEnd: b('z'), limit: 50n });
    expect([keysOf(over.kvs).length, over.more, over.count]).toEqual([5, false, 5n]);
  });

  it('10 count_only with limit: no kvs, count = total, more = false', async () => {
    const { api } = await fresh();
    for (const key of ['a', 'b', 'c', 'd', 'e']) await api.put(key, key);
    const response = await api.range('a', { rangeEnd: b('z'), countOnly: true, limit: 2n });
    expect(response.kvs).toEqual([]);
    expect(response.count).toBe(5n);
    expect(response.more).toBe(false);
  });

  it('11 sort then limit: all matches are sorted, then the limit applies', async () => {
    const { api } = await fresh();
    await api.put('a', '3');
    await api.put('b', '1');
    await api.put('c', '2');
    await api.put('d', '0');
    const ascending = await api.range('a', {
      rangeEnd: b('d'),
      sortTarget: SortTarget.VALUE,
      sortOrder: SortOrder.ASCEND,
      limit: 2n,
    });
    expect([keysOf(ascending.kvs), ascending.more, ascending.count]).toEqual([
      ['b', 'c'],
      true,
      3n,
    ]);
    const descending = await api.range('a', {
      rangeEnd: b('z'),
      sortTarget: SortTarget.KEY,
      sortOrder: SortOrder.DESCEND,
      limit: 3n,
    });
    expect(keysOf(descending.kvs)).toEqual(['d', 'c', 'b']);
  });

  it('12 sort target with order NONE sorts ascending by that target', async () => {
    const { api } = await fresh();
    await api.put('b', '1'); // 2
    await api.put('a', '1'); // 3
    await api.put('c', '1'); // 4
    await api.put('b', '2'); // 5
    const byMod = await api.range('a', { rangeEnd: b('z'), sortTarget: SortTarget.MOD });
    expect(keysOf(byMod.kvs)).toEqual(['a', 'c', 'b']);
    const byCreate = await api.range('a', { rangeEnd: b('z'), sortTarget: SortTarget.CREATE });
    expect(keysOf(byCreate.kvs)).toEqual(['b', 'a', 'c']);
    const byVersion = await api.range('a', { rangeEnd: b('z'), sortTarget: SortTarget.VERSION });
    expect(keysOf(byVersion.kvs)).toEqual(['a', 'c', 'b']);
  });

  it('13 filters keep the total count: min/max mod and create revisions filter kvs only', async () => {
    const { api } = await fresh();
    for (const key of ['a', 'b', 'c', 'd']) await api.put(key, key); // 2..5
    await api.put('a', 'again'); // 6
    const byMod = await api.range('a', { rangeEnd: b('z'), minModRevision: 4n });
    expect([keysOf(byMod.kvs), byMod.count, byMod.more]).toEqual([['a', 'c', 'd'], 4n, false]);
    const byCreate = await api.range('a', {
      rangeEnd: b('z'),
      minCreateRevision: 3n,
      maxCreateRevision: 4n,
    });
    expect([keysOf(byCreate.kvs), byCreate.count]).toEqual([['b', 'c'], 4n]);
    const limited = await api.range('a', { rangeEnd: b('z'), maxModRevision: 5n, limit: 1n });
    expect([keysOf(limited.kvs), limited.count, limited.more]).toEqual([['b'], 4n, true]);
  });

  it('14 range at old revision (header = current): the keys as they were then', async () => {
    const { api } = await fresh();
    await api.put('a', '1'); // 2
    await api.put('b', '1'); // 3
    await api.put('a', '2'); // 4
    await api.del('b'); // 5
    const atThree = await api.range('a', { rangeEnd: b('z'), revision: 3n });
    expect(atThree.header?.revision).toBe(5n);
    expect(atThree.kvs.map(summary)).toEqual([kvAt('a', '1', 2, 2, 1), kvAt('b', '1', 3, 3, 1)]);
    expect(atThree.count).toBe(2n);
    const atOne = await api.range('a', { rangeEnd: b('z'), revision: 1n });
    expect([atOne.kvs, atOne.count, atOne.header?.revision]).toEqual([[], 0n, 5n]);
  });

  it('15 future revision: OutOfRange "required revision is a future revision"', async () => {
    const { api } = await fresh();
    await api.put('a', '1'); // 2
    await expect(api.range('a', { revision: 3n })).rejects.toMatchObject(Errors.future);
    expect((await api.range('a', { revision: 2n })).count).toBe(1n);
  });

  it('16 keys_only drops the value only: revisions, version and lease stay (etcd 3.7 drops the lease too; the embedded server keeps it, a known difference)', async () => {
    const server = await fresh();
    const lease = await grantLease(server, 0x10n);
    await server.api.put('a', 'value', { lease }); // 2
    await server.api.put('a', 'value2', { lease }); // 3
    const response = await server.api.range('a', { keysOnly: true });
    const dropsLease = server.backend === 'etcd' && atLeast(server.version, 3, 7);
    expect(response.kvs.map(summary)).toEqual([
      { key: 'a', value: '', create: 2, mod: 3, version: 2, lease: dropsLease ? 0n : 0x10n },
    ]);
  });

  it('17 delete missing (no bump, no event)', async () => {
    const { api, endpoint } = await fresh();
    await api.put('a', '1'); // 2
    const connection = new WatchConnection(endpoint);
    try {
      const stream = connection.open();
      stream.create({ key: b('\0'), rangeEnd: b('\0') });
      await stream.take(1);
      const response = await api.del('missing');
      expect(response.deleted).toBe(0n);
      expect(response.header?.revision).toBe(2n);
      expect((await api.del('b', { rangeEnd: b('z') })).deleted).toBe(0n);
      await api.put('c', '1'); // 3: the next write takes the next revision
      expect(await stream.next()).toEqual({
        revision: 3,
        watchId: 0,
        events: [put('c', '1', 3, 3, 1)],
      });
    } finally {
      connection.close();
    }
  });

  it('18 delete range prev_kv: every deleted key-value in key order, one revision', async () => {
    const { api } = await fresh();
    await api.put('b', '2'); // 2
    await api.put('a', '1'); // 3
    await api.put('c', '3'); // 4
    const response = await api.del('a', { rangeEnd: b('c'), prevKv: true });
    expect(response.header?.revision).toBe(5n);
    expect(response.deleted).toBe(2n);
    expect(response.prevKvs.map(summary)).toEqual([
      kvAt('a', '1', 3, 3, 1),
      kvAt('b', '2', 2, 2, 1),
    ]);
    expect((await api.del('c')).prevKvs).toEqual([]); // 6, not asked for
    expect(keysOf((await api.range('\0', { rangeEnd: b('\0') })).kvs)).toEqual([]);
  });

  it('19 ignore_value on missing key: InvalidArgument "key not found"; on a present key the value stays', async () => {
    const { api } = await fresh();
    await expect(api.put('a', '', { ignoreValue: true })).rejects.toMatchObject(Errors.keyNotFound);
    await api.put('a', 'kept'); // 2
    expect((await api.put('a', '', { ignoreValue: true })).header?.revision).toBe(3n);
    expect((await api.range('a')).kvs.map(summary)).toEqual([kvAt('a', 'kept', 2, 3, 2)]);
  });

  it('19 ignore_value on missing key with an unknown lease: a Put checks the lease first, a txn put the key first', async () => {
    const { api } = await fresh();
    const put = op.put('a', '', { ignoreValue: true, lease: 0x19n });
    await expect(api.put('a', '', { ignoreValue: true, lease: 0x19n })).rejects.toMatchObject(
      Errors.leaseNotFound,
    );
    await expect(api.txn({ success: [put] })).rejects.toMatchObject(Errors.keyNotFound);
  });

  it('20 ignore_value with value: InvalidArgument "value is provided"', async () => {
    const { api } = await fresh();
    await api.put('a', '1');
    await expect(api.put('a', 'x', { ignoreValue: true })).rejects.toMatchObject(
      Errors.valueProvided,
    );
    expect((await api.range('a')).header?.revision).toBe(2n);
  });

  it('21 ignore_lease with lease: InvalidArgument "lease is provided"', async () => {
    const server = await fresh();
    const lease = await grantLease(server, 0x21n);
    await server.api.put('a', '1', { lease });
    await expect(server.api.put('a', '2', { ignoreLease: true, lease })).rejects.toMatchObject(
      Errors.leaseProvided,
    );
    await expect(server.api.put('missing', '2', { ignoreLease: true })).rejects.toMatchObject(
      Errors.keyNotFound,
    );
    await server.api.put('a', '3', { ignoreLease: true }); // 3, the lease stays
    expect(summary((await server.api.range('a')).kvs[0])).toEqual({
      ...kvAt('a', '3', 2, 3, 2),
      lease,
    });
  });

  it('22 put with unknown lease: NotFound, the key absent afterwards, no revision', async () => {
    const { api } = await fresh();
    await expect(api.put('a', '1', { lease: 0x1234n })).rejects.toMatchObject(Errors.leaseNotFound);
    const response = await api.range('a');
    expect([response.kvs, response.count, response.header?.revision]).toEqual([[], 0n, 1n]);
  });
});
