import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { status } from '../support/grpc-client.js';
import { grantLease, keysOf, kv, summary } from '../support/kv.js';
import { specBackend, startTestServer, type TestServer } from '../support/test-server.js';

const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;

describe(`Put [${specBackend}]`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;

  beforeEach(async () => {
    server = await startTestServer();
    api = kv(server);
  });
  afterEach(() => server.stop());

  it('the first put makes revision 2 with create = mod = 2 and version 1', async () => {
    const response = await api.put('a', '1');
    expect(response.header?.revision).toBe(2n);
    expect(response.prevKv).toBeFalsy();
    expect((await api.range('a')).kvs.map(summary)).toEqual([
      { key: 'a', value: '1', create: 2, mod: 2, version: 1, lease: 0n },
    ]);
  });

  it('an identical put still makes a revision: version + 1, create revision kept', async () => {
    await api.put('a', '1');
    expect((await api.put('a', '1')).header?.revision).toBe(3n);
    expect(summary((await api.range('a')).kvs[0])).toEqual({
      key: 'a',
      value: '1',
      create: 2,
      mod: 3,
      version: 2,
      lease: 0n,
    });
  });

  it('prev_kv returns the value before the put, and nothing for a new key', async () => {
    expect((await api.put('a', '1', { prevKv: true })).prevKv).toBeFalsy();
    const response = await api.put('a', '2', { prevKv: true });
    expect(summary(response.prevKv)).toEqual({
      key: 'a',
      value: '1',
      create: 2,
      mod: 2,
      version: 1,
      lease: 0n,
    });
  });

  it('delete then put starts over: version 1 and a new create revision', async () => {
    await api.put('a', '1'); // 2
    await api.put('a', '2'); // 3
    await api.del('a'); // 4
    await api.put('a', '3'); // 5
    expect(summary((await api.range('a')).kvs[0])).toMatchObject({ create: 5, mod: 5, version: 1 });
  });

  it('ignore_value keeps the value; ignore_lease keeps the lease', async () => {
    const lease = await grantLease(server, 0x77n);
    await api.put('a', 'v1', { lease });
    await api.put('a', '', { ignoreValue: true, prevKv: true });
    expect(summary((await api.range('a')).kvs[0])).toMatchObject({
      value: 'v1',
      version: 2,
      lease: 0n,
    });
    await api.put('a', 'v2', { lease });
    await api.put('a', 'v3', { ignoreLease: true });
    expect(summary((await api.range('a')).kvs[0])).toMatchObject({
      value: 'v3',
      version: 4,
      lease,
    });
  });

  it('a put without a lease detaches the key; with another lease it moves', async () => {
    const first = await grantLease(server, 0x10n);
    const second = await grantLease(server, 0x20n);
    await api.put('a', '1', { lease: first });
    await api.put('a', '2', { lease: second });
    expect(summary((await api.range('a')).kvs[0])?.lease).toBe(second);
    await api.put('a', '3');
    expect(summary((await api.range('a')).kvs[0])?.lease).toBe(0n);
  });

  it('ignore_value or ignore_lease on a missing key is "key not found"', async () => {
    await expect(api.put('a', '', { ignoreValue: true })).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: key not found'),
    );
    await expect(api.put('a', 'v', { ignoreLease: true })).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: key not found'),
    );
    expect(await api.revision()).toBe(1);
  });

  it('ignore_value with a value, ignore_lease with a lease are InvalidArgument', async () => {
    await api.put('a', '1');
    await expect(api.put('a', 'x', { ignoreValue: true })).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: value is provided'),
    );
    await expect(api.put('a', 'x', { ignoreLease: true, lease: 5n })).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: lease is provided'),
    );
  });

  it('a put with an unknown lease is NotFound and writes nothing', async () => {
    await expect(api.put('a', '1', { lease: 0x999n })).rejects.toMatchObject(
      status(NOT_FOUND, 'etcdserver: requested lease not found'),
    );
    expect((await api.range('a')).kvs).toEqual([]);
    expect(await api.revision()).toBe(1);
  });

  it('an empty key is InvalidArgument', async () => {
    await expect(api.put('', '1')).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: key is not provided'),
    );
  });

  it('checks an empty key before a provided value or lease', async () => {
    await expect(api.put('', 'x', { ignoreValue: true })).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: key is not provided'),
    );
    await expect(
      api.put('a', 'x', { ignoreValue: true, ignoreLease: true, lease: 1n }),
    ).rejects.toMatchObject(status(INVALID_ARGUMENT, 'etcdserver: value is provided'));
  });
});

describe(`DeleteRange [${specBackend}]`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;

  beforeEach(async () => {
    server = await startTestServer();
    api = kv(server);
  });
  afterEach(() => server.stop());

  it('deleting a missing key deletes nothing and makes no revision', async () => {
    await api.put('a', '1');
    const response = await api.del('b', { prevKv: true });
    expect(response.deleted).toBe(0n);
    expect(response.prevKvs).toEqual([]);
    expect(response.header?.revision).toBe(2n);
    expect(await api.revision()).toBe(2);
  });

  it('deletes a range in one revision and returns the previous values in key order', async () => {
    for (const key of ['a', 'b', 'c', 'd']) await api.put(key, key.toUpperCase()); // 2..5
    const response = await api.del('b', { rangeEnd: b('d'), prevKv: true });
    expect(response.deleted).toBe(2n);
    expect(response.header?.revision).toBe(6n);
    expect(response.prevKvs.map(summary)).toEqual([
      { key: 'b', value: 'B', create: 3, mod: 3, version: 1, lease: 0n },
      { key: 'c', value: 'C', create: 4, mod: 4, version: 1, lease: 0n },
    ]);
    expect(keysOf((await api.range('a', { rangeEnd: b('z') })).kvs)).toEqual(['a', 'd']);
    expect(await api.revision()).toBe(6);
  });

  it('without prev_kv only the count comes back', async () => {
    await api.put('a', '1');
    const response = await api.del('a');
    expect(response.deleted).toBe(1n);
    expect(response.prevKvs).toEqual([]);
  });

  it('range_end "\\0" deletes every key from the key on', async () => {
    for (const key of ['a', 'b', 'c']) await api.put(key, '1');
    expect((await api.del('b', { rangeEnd: b('\0') })).deleted).toBe(2n);
    expect(keysOf((await api.range('\0', { rangeEnd: b('\0') })).kvs)).toEqual(['a']);
  });

  it('an empty key is InvalidArgument', async () => {
    await expect(api.del('')).rejects.toMatchObject(
      status(INVALID_ARGUMENT, 'etcdserver: key is not provided'),
    );
  });
});
