// The KV API against every backend: exact revisions, versions, counts and errors of each option.
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  EmptyKeyError,
  FutureRevisionError,
  KeyNotFoundError,
  LeaseNotFoundError,
  LeaseProvidedError,
  RequestTooLargeError,
  ValueProvidedError,
} from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import { KeyValue } from '../../src/key-value.js';
import { expectServerError, rejection } from './kv-support.js';

const bytes = (s: string) => new TextEncoder().encode(s);

describeEachBackend('KV', ({ backend, prefix }) => {
  let etcd: Etcd;
  const k = (name: string) => `${prefix()}${name}`;
  const keysOf = (kvs: readonly KeyValue[]) => kvs.map((kv) => kv.keyText().slice(prefix().length));

  /** The store's current revision. */
  async function revision(): Promise<bigint> {
    return (await etcd.range({ key: k('none'), countOnly: true })).header.revision;
  }

  async function putAll(...names: string[]): Promise<bigint> {
    let last = 0n;
    for (const name of names) last = (await etcd.put(k(name), `v-${name}`)).header.revision;
    return last;
  }

  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('a first put creates the key at a new revision with version 1', async () => {
    const before = await revision();
    const put = await etcd.put(k('a'), 'v1');
    expect(put.header.revision).toBe(before + 1n);
    expect(put.prevKv).toBeUndefined();
    const kv = await etcd.get(k('a'));
    expect(kv).toBeInstanceOf(KeyValue);
    expect(kv).toMatchObject({
      createRevision: before + 1n,
      modRevision: before + 1n,
      version: 1n,
      lease: 0n,
    });
    expect(kv?.keyText()).toBe(k('a'));
    expect(kv?.text()).toBe('v1');
  });

  it('an identical put still bumps the revision and the version, keeping createRevision', async () => {
    const first = await etcd.put(k('a'), 'same');
    const second = await etcd.put(k('a'), 'same', { prevKv: true });
    expect(second.header.revision).toBe(first.header.revision + 1n);
    expect(second.prevKv?.text()).toBe('same');
    expect(second.prevKv?.modRevision).toBe(first.header.revision);
    const kv = await etcd.get(k('a'));
    expect(kv).toMatchObject({
      createRevision: first.header.revision,
      modRevision: second.header.revision,
      version: 2n,
    });
  });

  it('put prevKv returns the previous key, and nothing for a new key', async () => {
    const created = await etcd.put(k('p'), 'one', { prevKv: true });
    expect(created.prevKv).toBeUndefined();
    const updated = await etcd.put(k('p'), 'two', { prevKv: true });
    expect(updated.prevKv).toBeInstanceOf(KeyValue);
    expect(updated.prevKv).toMatchObject({
      createRevision: created.header.revision,
      modRevision: created.header.revision,
      version: 1n,
    });
    expect(updated.prevKv?.keyText()).toBe(k('p'));
    expect(updated.prevKv?.text()).toBe('one');
    // Without the option there is no prevKv even though the key existed.
    expect((await etcd.put(k('p'), 'three')).prevKv).toBeUndefined();
  });

  it('delete then put starts a new generation: version 1, new createRevision', async () => {
    await etcd.put(k('g'), '1');
    await etcd.put(k('g'), '2');
    await etcd.delete(k('g'));
    const again = await etcd.put(k('g'), '3');
    expect(await etcd.get(k('g'))).toMatchObject({
      createRevision: again.header.revision,
      modRevision: again.header.revision,
      version: 1n,
    });
  });

  it('get of a missing key is undefined', async () => {
    expect(await etcd.get(k('missing'))).toBeUndefined();
  });

  it('keys and values are strings or bytes and come back as plain Uint8Arrays', async () => {
    const key = new Uint8Array([...bytes(k('bin-')), 0x00, 0xff, 0x80]);
    const value = new Uint8Array([0, 1, 2, 0xfe, 0xff]);
    await etcd.put(key, value);
    const kv = await etcd.get(key);
    expect(kv?.key).toEqual(key);
    expect(kv?.value).toEqual(value);
    expect(Object.getPrototypeOf(kv?.key)).toBe(Uint8Array.prototype);
    expect(Object.getPrototypeOf(kv?.value)).toBe(Uint8Array.prototype);
    await etcd.put(k('json'), JSON.stringify({ n: 1, s: 'é' }));
    expect((await etcd.get(k('json')))?.json<{ n: number; s: string }>()).toEqual({ n: 1, s: 'é' });
    await etcd.put(k('utf8'), 'héllo wörld ✓');
    expect((await etcd.get(bytes(k('utf8'))))?.text()).toBe('héllo wörld ✓');
  });

  it('a single key, [key, end), prefix, fromKey and all select exactly their keys', async () => {
    await putAll('r/a', 'r/b', 'r/c', 'r/d', 'r0');
    expect(keysOf((await etcd.range({ key: k('r/b') })).kvs)).toEqual(['r/b']);
    expect(keysOf((await etcd.range({ key: k('r/b'), end: k('r/d') })).kvs)).toEqual([
      'r/b',
      'r/c',
    ]);
    expect(keysOf((await etcd.range({ prefix: k('r/') })).kvs)).toEqual([
      'r/a',
      'r/b',
      'r/c',
      'r/d',
    ]);
    const fromKey = await etcd.range({ fromKey: k('r/c') });
    expect(keysOf(fromKey.kvs.filter((kv) => kv.keyText().startsWith(prefix())))).toEqual([
      'r/c',
      'r/d',
      'r0',
    ]);
    // fromKey reaches past the test's prefix: every key >= r/c, in key order.
    const fromKeys = fromKey.kvs.map((kv) => kv.keyText());
    expect(fromKeys[0]).toBe(k('r/c'));
    expect([...fromKeys].sort()).toEqual(fromKeys);
    const all = await etcd.range({ all: true });
    const allKeys = all.kvs.map((kv) => kv.keyText());
    expect(allKeys).toEqual(
      expect.arrayContaining([k('r/a'), k('r/b'), k('r/c'), k('r/d'), k('r0')]),
    );
    expect(all.count).toBe(BigInt(allKeys.length));
    expect(await etcd.count({ all: true })).toBe(all.count);
  });

  it('an empty or inverted [key, end) selects nothing, without an error', async () => {
    await putAll('e/a', 'e/b');
    const inverted = await etcd.range({ key: k('e/b'), end: k('e/a') });
    expect(inverted.kvs).toEqual([]);
    expect(inverted.count).toBe(0n);
    expect(inverted.more).toBe(false);
    expect((await etcd.range({ key: k('e/a'), end: k('e/a') })).kvs).toEqual([]);
  });

  it('limit returns the first keys, more says more matched, count counts all', async () => {
    await putAll('l/1', 'l/2', 'l/3', 'l/4', 'l/5');
    const page = await etcd.range({ prefix: k('l/'), limit: 2 });
    expect(keysOf(page.kvs)).toEqual(['l/1', 'l/2']);
    expect(page.more).toBe(true);
    expect(page.count).toBe(5n);
    const exact = await etcd.range({ prefix: k('l/'), limit: 5n });
    expect(exact.kvs).toHaveLength(5);
    expect(exact.more).toBe(false);
    expect(exact.count).toBe(5n);
    const unlimited = await etcd.range({ prefix: k('l/'), limit: 0 });
    expect(unlimited.kvs).toHaveLength(5);
    expect(unlimited.more).toBe(false);
  });

  it('countOnly returns the count without keys, and more stays false even with a limit', async () => {
    await putAll('c/1', 'c/2', 'c/3');
    const counted = await etcd.range({ prefix: k('c/'), countOnly: true, limit: 1 });
    expect(counted.kvs).toEqual([]);
    expect(counted.count).toBe(3n);
    expect(counted.more).toBe(false);
    expect(await etcd.count({ prefix: k('c/') })).toBe(3n);
    expect(await etcd.count(k('c/2'))).toBe(1n);
    expect(await etcd.count(k('c/9'))).toBe(0n);
  });

  it('sorts before the limit applies, by every target', async () => {
    // Versions: s/a 3, s/b 1, s/c 2. Mod revisions: s/b < s/c < s/a. Values: z, y, x.
    await etcd.put(k('s/a'), 'z0');
    await etcd.put(k('s/a'), 'z1');
    await etcd.put(k('s/b'), 'y');
    await etcd.put(k('s/c'), 'x0');
    await etcd.put(k('s/c'), 'x');
    await etcd.put(k('s/a'), 'z');
    const sorted = async (
      target: 'key' | 'version' | 'create' | 'mod' | 'value',
      order: 'ascend' | 'descend',
      limit = 0,
    ) => {
      const r = await etcd.range({ prefix: k('s/'), sort: { target, order }, limit });
      return { keys: keysOf(r.kvs), more: r.more, count: r.count };
    };
    expect(await sorted('key', 'descend', 2)).toEqual({
      keys: ['s/c', 's/b'],
      more: true,
      count: 3n,
    });
    expect(await sorted('key', 'ascend', 2)).toEqual({
      keys: ['s/a', 's/b'],
      more: true,
      count: 3n,
    });
    expect(await sorted('version', 'descend', 1)).toEqual({ keys: ['s/a'], more: true, count: 3n });
    expect(await sorted('version', 'ascend')).toEqual({
      keys: ['s/b', 's/c', 's/a'],
      more: false,
      count: 3n,
    });
    expect(await sorted('create', 'descend')).toEqual({
      keys: ['s/c', 's/b', 's/a'],
      more: false,
      count: 3n,
    });
    expect(await sorted('mod', 'ascend', 2)).toEqual({
      keys: ['s/b', 's/c'],
      more: true,
      count: 3n,
    });
    expect(await sorted('mod', 'descend', 1)).toEqual({ keys: ['s/a'], more: true, count: 3n });
    expect(await sorted('value', 'ascend', 2)).toEqual({
      keys: ['s/c', 's/b'],
      more: true,
      count: 3n,
    });
  });

  it('a sort target with order none sorts ascending by that target, before the limit', async () => {
    await etcd.put(k('n/a'), '1');
    await etcd.put(k('n/b'), '1');
    await etcd.put(k('n/a'), '2'); // mod: n/b < n/a
    const byMod = await etcd.range({
      prefix: k('n/'),
      sort: { target: 'mod', order: 'none' },
      limit: 1,
    });
    expect(keysOf(byMod.kvs)).toEqual(['n/b']);
    expect(byMod.more).toBe(true);
    const byValue = await etcd.range({ prefix: k('n/'), sort: { target: 'value' } });
    expect(keysOf(byValue.kvs)).toEqual(['n/b', 'n/a']);
    const byKey = await etcd.range({ prefix: k('n/'), sort: { order: 'none' } });
    expect(keysOf(byKey.kvs)).toEqual(['n/a', 'n/b']);
  });

  it('equal sort values keep key order', async () => {
    await putAll('q/c', 'q/a', 'q/b'); // each at version 1
    const r = await etcd.range({ prefix: k('q/'), sort: { target: 'version', order: 'descend' } });
    expect(keysOf(r.kvs)).toEqual(['q/a', 'q/b', 'q/c']);
  });

  it('revision filters keep only matching keys, and count still counts every key', async () => {
    const r1 = await etcd.put(k('f/a'), '1');
    const r2 = await etcd.put(k('f/b'), '1');
    const r3 = await etcd.put(k('f/c'), '1');
    await etcd.put(k('f/a'), '2'); // f/a: create r1, mod r4
    const minMod = await etcd.range({ prefix: k('f/'), minModRevision: r2.header.revision });
    expect(keysOf(minMod.kvs)).toEqual(['f/a', 'f/b', 'f/c']);
    const maxMod = await etcd.range({ prefix: k('f/'), maxModRevision: r2.header.revision });
    expect(keysOf(maxMod.kvs)).toEqual(['f/b']);
    expect(maxMod.count).toBe(3n);
    const minCreate = await etcd.range({ prefix: k('f/'), minCreateRevision: r2.header.revision });
    expect(keysOf(minCreate.kvs)).toEqual(['f/b', 'f/c']);
    expect(minCreate.count).toBe(3n);
    const maxCreate = await etcd.range({
      prefix: k('f/'),
      maxCreateRevision: r1.header.revision,
    });
    expect(keysOf(maxCreate.kvs)).toEqual(['f/a']);
    expect(maxCreate.count).toBe(3n);
    const window = await etcd.range({
      prefix: k('f/'),
      minCreateRevision: r2.header.revision,
      maxCreateRevision: r3.header.revision,
      limit: 1,
    });
    expect(keysOf(window.kvs)).toEqual(['f/b']);
    expect(window.more).toBe(true);
    expect(window.count).toBe(3n);
  });

  it('a read at an old revision sees the old store; its header has the current revision', async () => {
    const old = await etcd.put(k('h/a'), 'old');
    await etcd.put(k('h/a'), 'new');
    await etcd.put(k('h/b'), 'later');
    const now = await revision();
    const r = await etcd.range({ prefix: k('h/'), revision: old.header.revision });
    expect(r.header.revision).toBe(now);
    expect(keysOf(r.kvs)).toEqual(['h/a']);
    expect(r.kvs[0]?.text()).toBe('old');
    expect(r.count).toBe(1n);
    expect((await etcd.get(k('h/a'), { revision: old.header.revision }))?.version).toBe(1n);
    expect(await etcd.get(k('h/b'), { revision: old.header.revision })).toBeUndefined();
    expect(await etcd.count({ prefix: k('h/') }, { revision: old.header.revision })).toBe(1n);
  });

  it('a read above the current revision fails with FutureRevisionError', async () => {
    const now = await revision();
    const error = await rejection(etcd.get(k('x'), { revision: now + 10n }));
    expectServerError(error, FutureRevisionError);
    expect(error).toMatchObject({
      code: 'FUTURE_REVISION',
      message: 'etcdserver: mvcc: required revision is a future revision',
    });
    expectServerError(
      await rejection(etcd.range({ prefix: k(''), revision: now + 1n })),
      FutureRevisionError,
    );
  });

  it('keysOnly drops the values only', async () => {
    const lease = await etcd.lease.grant(60);
    const put = await etcd.put(k('ko'), 'value', { lease });
    const [kv] = (await etcd.range({ key: k('ko'), keysOnly: true })).kvs;
    expect(kv?.keyText()).toBe(k('ko'));
    expect(kv?.value).toEqual(new Uint8Array(0));
    expect(kv).toMatchObject({
      createRevision: put.header.revision,
      modRevision: put.header.revision,
      version: 1n,
      lease: lease.id,
    });
    expect((await etcd.get(k('ko'), { keysOnly: true }))?.text()).toBe('');
    await lease.revoke();
  });

  it('a serializable read returns the same keys', async () => {
    const put = await etcd.put(k('ser'), 'v');
    const kv = await etcd.get(k('ser'), { serializable: true });
    expect(kv?.modRevision).toBe(put.header.revision);
    const r = await etcd.range({ prefix: k(''), serializable: true });
    expect(keysOf(r.kvs)).toEqual(['ser']);
  });

  it('deleting a missing key deletes nothing and creates no revision', async () => {
    const before = await revision();
    const r = await etcd.delete(k('nothing'), { prevKv: true });
    expect(r.deleted).toBe(0n);
    expect(r.prevKvs).toEqual([]);
    expect(r.header.revision).toBe(before);
    expect(await revision()).toBe(before);
    const range = await etcd.delete({ prefix: k('nothing/') });
    expect(range.deleted).toBe(0n);
    expect(range.header.revision).toBe(before);
  });

  it('deleting one key returns its previous state with prevKv', async () => {
    const put = await etcd.put(k('d1'), 'gone');
    const r = await etcd.delete(k('d1'), { prevKv: true });
    expect(r.header.revision).toBe(put.header.revision + 1n);
    expect(r.deleted).toBe(1n);
    expect(r.prevKvs).toHaveLength(1);
    expect(r.prevKvs[0]?.keyText()).toBe(k('d1'));
    expect(r.prevKvs[0]?.text()).toBe('gone');
    expect(r.prevKvs[0]?.modRevision).toBe(put.header.revision);
    expect(await etcd.get(k('d1'))).toBeUndefined();
    // Without prevKv the deleted keys are counted but not returned.
    await etcd.put(k('d2'), 'x');
    expect(await etcd.delete(k('d2'))).toMatchObject({ deleted: 1n, prevKvs: [] });
  });

  it('deletes a range or a prefix in one revision, returning every deleted key in order', async () => {
    await putAll('dr/a', 'dr/b', 'dr/c', 'dr/d', 'dr0');
    const before = await revision();
    const half = await etcd.delete({ key: k('dr/a'), end: k('dr/c') }, { prevKv: true });
    expect(half.header.revision).toBe(before + 1n);
    expect(half.deleted).toBe(2n);
    expect(keysOf(half.prevKvs)).toEqual(['dr/a', 'dr/b']);
    expect(half.prevKvs.map((kv) => kv.text())).toEqual(['v-dr/a', 'v-dr/b']);
    const rest = await etcd.delete({ prefix: k('dr/') }, { prevKv: true });
    expect(rest.header.revision).toBe(before + 2n);
    expect(rest.deleted).toBe(2n);
    expect(keysOf(rest.prevKvs)).toEqual(['dr/c', 'dr/d']);
    // The prefix stopped at its end: dr0 is not under dr/.
    expect(keysOf((await etcd.range({ prefix: k('') })).kvs)).toEqual(['dr0']);
    const fromKey = await etcd.delete({ fromKey: k('dr0') }, { prevKv: true });
    expect(keysOf(fromKey.prevKvs.slice(0, 1))).toEqual(['dr0']);
  });

  it('ignoreValue on a missing key fails with KeyNotFoundError', async () => {
    const error = await rejection(etcd.put(k('iv-missing'), '', { ignoreValue: true }));
    expectServerError(error, KeyNotFoundError);
    expect(error).toMatchObject({ code: 'KEY_NOT_FOUND', message: 'etcdserver: key not found' });
    expect(await etcd.get(k('iv-missing'))).toBeUndefined();
  });

  it('ignoreValue with a value fails with ValueProvidedError', async () => {
    await etcd.put(k('iv'), 'kept');
    expectServerError(
      await rejection(etcd.put(k('iv'), 'new', { ignoreValue: true })),
      ValueProvidedError,
    );
    expect((await etcd.get(k('iv')))?.text()).toBe('kept');
  });

  it('ignoreValue changes only the lease; ignoreLease only the value', async () => {
    const lease = await etcd.lease.grant(60);
    await etcd.put(k('il'), 'first');
    const moved = await etcd.put(k('il'), '', { ignoreValue: true, lease: lease.id });
    const afterMove = await etcd.get(k('il'));
    expect(afterMove).toMatchObject({
      lease: lease.id,
      version: 2n,
      modRevision: moved.header.revision,
    });
    expect(afterMove?.text()).toBe('first');
    await etcd.put(k('il'), 'second', { ignoreLease: true });
    const afterValue = await etcd.get(k('il'));
    expect(afterValue?.lease).toBe(lease.id);
    expect(afterValue?.text()).toBe('second');
    // A put with neither option detaches the key from its lease.
    await etcd.put(k('il'), 'third');
    expect((await etcd.get(k('il')))?.lease).toBe(0n);
    await lease.revoke();
  });

  it('ignoreLease with a lease fails with LeaseProvidedError; on a missing key with KeyNotFoundError', async () => {
    const lease = await etcd.lease.grant(60);
    await etcd.put(k('ig'), 'v');
    const error = await rejection(etcd.put(k('ig'), 'w', { ignoreLease: true, lease: lease.id }));
    expectServerError(error, LeaseProvidedError);
    expect(error).toMatchObject({ message: 'etcdserver: lease is provided' });
    expect((await etcd.get(k('ig')))?.text()).toBe('v');
    expectServerError(
      await rejection(etcd.put(k('ig-missing'), 'w', { ignoreLease: true })),
      KeyNotFoundError,
    );
    await lease.revoke();
  });

  it('a put with an unknown lease fails with LeaseNotFoundError and writes nothing', async () => {
    const before = await revision();
    const error = await rejection(etcd.put(k('ul'), 'v', { lease: 0x7e57n }));
    expectServerError(error, LeaseNotFoundError);
    expect(error).toMatchObject({
      code: 'LEASE_NOT_FOUND',
      message: 'etcdserver: requested lease not found',
    });
    expect(await etcd.get(k('ul'))).toBeUndefined();
    expect(await revision()).toBe(before);
  });

  it('a put attaches the key to a lease given by id or as a granted lease', async () => {
    const lease = await etcd.lease.grant(60);
    await etcd.put(k('la'), 'v', { lease });
    await etcd.put(k('lb'), 'v', { lease: lease.id });
    expect((await etcd.range({ prefix: k('l') })).kvs.map((kv) => kv.lease)).toEqual([
      lease.id,
      lease.id,
    ]);
    await lease.revoke();
    expect(await etcd.count({ prefix: k('l') })).toBe(0n);
  });

  it('an empty key fails with EmptyKeyError in put, get, range and delete', async () => {
    for (const attempt of [
      () => etcd.put('', 'v'),
      () => etcd.get(''),
      () => etcd.range({ key: '' }),
      () => etcd.range({ key: new Uint8Array(0), end: 'z' }),
      () => etcd.delete(''),
      () => etcd.count(''),
    ]) {
      const error = await rejection(attempt());
      expectServerError(error, EmptyKeyError);
      expect(error).toMatchObject({
        code: 'EMPTY_KEY',
        message: 'etcdserver: key is not provided',
      });
    }
  });

  it('a value over 1.5 MiB fails with RequestTooLargeError and stores nothing', async () => {
    const before = await revision();
    const value = new Uint8Array(1.5 * 1024 * 1024 + 1).fill(0x61);
    const error = await rejection(etcd.put(k('big'), value));
    expect(error).toBeInstanceOf(RequestTooLargeError);
    // etcd's words first, then the request's size (errors-in-our-words.test.ts has the rest).
    expect(error).toMatchObject({ code: 'REQUEST_TOO_LARGE' });
    expect((error as Error).message).toMatch(/^etcdserver: request is too large: /);
    expect(await etcd.get(k('big'))).toBeUndefined();
    expect(await revision()).toBe(before);
    // A value well under the limit is fine.
    const fine = new Uint8Array(1024 * 1024).fill(0x62);
    await etcd.put(k('big'), fine);
    expect((await etcd.get(k('big')))?.value.length).toBe(fine.length);
  });
});
