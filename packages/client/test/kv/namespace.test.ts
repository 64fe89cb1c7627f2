// Namespaces: keys prefixed on the way in, stripped on the way out, and no operation ever reaching
// a key outside the namespace.
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallOptions, RetryPolicy, Rpc } from '../../src/connection/types.js';
import { EmptyKeyError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import type { MethodDescriptor } from '../../src/generated/methods.js';
import type { KeyValue } from '../../src/key-value.js';
import { cmp } from '../../src/kv/compare.js';
import { KV } from '../../src/kv/kv.js';
import { op } from '../../src/kv/op.js';
import { expectServerError, rejection } from './kv-support.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describeEachBackend('namespace', ({ backend, prefix }) => {
  let etcd: Etcd;
  const k = (name: string) => `${prefix()}${name}`;
  const keysOf = (kvs: readonly KeyValue[]) => kvs.map((kv) => kv.keyText());

  /** Keys right around `app/` that a namespace on it must never touch. */
  const outside = ['ap', 'app', 'app/', 'app0', 'apq', 'b'];

  async function setUp(): Promise<KV> {
    for (const name of outside) await etcd.put(k(name), 'outside');
    return etcd.namespace(k('app/'));
  }

  async function outsideIntact(): Promise<void> {
    const all = (await etcd.range({ prefix: k('') })).kvs.filter(
      (kv) => !kv.keyText().startsWith(k('app/')) || kv.keyText() === k('app/'),
    );
    expect(all.map((kv) => [kv.keyText().slice(prefix().length), kv.text(), kv.version])).toEqual(
      outside.map((name) => [name, 'outside', 1n]),
    );
  }

  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('prefixes keys on the way in and strips them on the way out', async () => {
    const ns = await setUp();
    const put = await ns.put('a', '1');
    const again = await ns.put('a', '2', { prevKv: true });
    expect(again.prevKv?.keyText()).toBe('a');
    expect(again.prevKv?.modRevision).toBe(put.header.revision);
    expect((await etcd.get(k('app/a')))?.text()).toBe('2');
    const kv = await ns.get('a');
    expect(kv?.keyText()).toBe('a');
    expect(kv?.text()).toBe('2');
    expect(await ns.get('app/a')).toBeUndefined();
    await outsideIntact();
  });

  it('every range form stays inside the namespace', async () => {
    const ns = await setUp();
    for (const name of ['a', 'b', 'c']) await ns.put(name, name);
    const all = await ns.range({ all: true });
    expect(keysOf(all.kvs)).toEqual(['a', 'b', 'c']);
    expect(all.count).toBe(3n);
    expect(keysOf((await ns.range({ prefix: '' })).kvs)).toEqual(['a', 'b', 'c']);
    expect(keysOf((await ns.range({ fromKey: 'b' })).kvs)).toEqual(['b', 'c']);
    expect(keysOf((await ns.range({ fromKey: '' })).kvs)).toEqual(['a', 'b', 'c']);
    expect(keysOf((await ns.range({ key: 'a', end: 'c' })).kvs)).toEqual(['a', 'b']);
    expect(keysOf((await ns.range({ prefix: 'b' })).kvs)).toEqual(['b']);
    expect(
      keysOf((await ns.range({ all: true, sort: { order: 'descend' }, limit: 2 })).kvs),
    ).toEqual(['c', 'b']);
    expect(await ns.count({ all: true })).toBe(3n);
    expect(await ns.count({ fromKey: 'c' })).toBe(1n);
    const scanned: string[] = [];
    for await (const kv of ns.scan({ all: true, pageSize: 1 })) scanned.push(kv.keyText());
    expect(scanned).toEqual(['a', 'b', 'c']);
    await outsideIntact();
  });

  it('deletes of every form stay inside the namespace and report relative keys', async () => {
    const ns = await setUp();
    for (const name of ['a', 'b', 'c', 'd']) await ns.put(name, name);
    const fromKey = await ns.delete({ fromKey: 'c' }, { prevKv: true });
    expect(fromKey.deleted).toBe(2n);
    expect(keysOf(fromKey.prevKvs)).toEqual(['c', 'd']);
    const all = await ns.delete({ all: true }, { prevKv: true });
    expect(all.deleted).toBe(2n);
    expect(keysOf(all.prevKvs)).toEqual(['a', 'b']);
    expect((await ns.delete({ prefix: '' })).deleted).toBe(0n);
    await outsideIntact();
  });

  it('txns prefix compares and ops, nested ones too, and strip their responses', async () => {
    const ns = await setUp();
    await ns.put('x', 'old');
    const r = await ns
      .txn()
      .if(cmp.value('x', '==', 'old'), cmp.exists({ all: true }))
      .then(
        op.put('x', 'new', { prevKv: true }),
        op.get('x'),
        op.txn([cmp.missing('y')], [op.put('y', '1'), op.range({ all: true })]),
        op.delete({ fromKey: 'zz' }),
      )
      .commit();
    expect(r.succeeded).toBe(true);
    if (!r.succeeded) return;
    const [put, got, nested, deleted] = r.responses;
    expect(put.prevKv?.keyText()).toBe('x');
    expect(keysOf(got.kvs)).toEqual(['x']);
    expect(nested.succeeded).toBe(true);
    if (!nested.succeeded) return;
    expect(keysOf(nested.responses[1].kvs)).toEqual(['x', 'y']);
    expect(deleted.deleted).toBe(0n);
    expect((await etcd.get(k('app/y')))?.text()).toBe('1');
    // A compare over the whole namespace sees only the namespace: outside keys do not count.
    const empty = etcd.namespace(k('app/empty/'));
    expect(
      (
        await empty
          .txn()
          .if(cmp.missing({ all: true }))
          .commit()
      ).succeeded,
    ).toBe(true);
    expect(
      (
        await empty
          .txn()
          .if(cmp.missing({ fromKey: 'a' }))
          .commit()
      ).succeeded,
    ).toBe(true);
    await outsideIntact();
  });

  it('an empty key is rejected with EmptyKeyError before anything is sent', async () => {
    const ns = await setUp();
    for (const attempt of [
      () => ns.get(''),
      () => ns.put('', 'v'),
      () => ns.delete(''),
      () => ns.range({ key: '' }),
      () => ns.range({ key: '', end: 'z' }),
      () => ns.count(''),
      () => ns.txn().if(cmp.exists('')).commit(),
      () => ns.txn().then(op.put('', 'v')).commit(),
    ]) {
      expectServerError(await rejection(attempt()), EmptyKeyError);
    }
    await outsideIntact();
  });

  it('namespaces nest by concatenating prefixes', async () => {
    const ns = await setUp();
    const inner = ns.namespace('inner/');
    expect(text(inner.prefix)).toBe(k('app/inner/'));
    await inner.put('k', 'v');
    expect((await ns.get('inner/k'))?.text()).toBe('v');
    expect((await etcd.get(k('app/inner/k')))?.text()).toBe('v');
    await ns.put('inner0', 'sibling');
    expect(keysOf((await inner.range({ all: true })).kvs)).toEqual(['k']);
    expect((await inner.delete({ all: true })).deleted).toBe(1n);
    expect((await ns.get('inner0'))?.text()).toBe('sibling');
    await outsideIntact();
  });

  it('a prefix ending in 0xff bytes is clamped like any other', async () => {
    await etcd.put(k('x'), 'outside');
    const base = bytes(k(''));
    const ns = etcd.namespace(new Uint8Array([...base, 0xff]));
    await ns.put(new Uint8Array([0xff]), 'in');
    await ns.put('a', 'in');
    const all = await ns.range({ all: true });
    expect(all.kvs.map((kv) => kv.key)).toEqual([bytes('a'), new Uint8Array([0xff])]);
    expect((await ns.delete({ fromKey: new Uint8Array([0xff]) })).deleted).toBe(1n);
    expect((await etcd.get(k('x')))?.text()).toBe('outside');
  });
});

/** Records the requests it is sent; answers empty responses. */
class RequestLog implements Rpc {
  readonly requests: { method: string; request: Record<string, unknown> }[] = [];
  async unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    _retry: RetryPolicy,
    _options?: CallOptions,
  ): Promise<Res> {
    this.requests.push({ method: method.name, request: request as Record<string, unknown> });
    return {} as Res;
  }
  serverStream(): never {
    throw new Error('not used');
  }
  bidiStream(): never {
    throw new Error('not used');
  }
}

describe('namespace wire intervals', () => {
  const wire = async (run: (ns: KV) => Promise<unknown>) => {
    const log = new RequestLog();
    await run(new KV(log).namespace('ns/'));
    const request = log.requests[0]?.request;
    return [text(request?.key as Uint8Array), text(request?.rangeEnd as Uint8Array)];
  };

  it('maps each selection to the interval the server sees', async () => {
    expect(await wire((ns) => ns.get('a'))).toEqual(['ns/a', '']);
    expect(await wire((ns) => ns.range({ key: 'a', end: 'c' }))).toEqual(['ns/a', 'ns/c']);
    expect(await wire((ns) => ns.range({ prefix: 'a' }))).toEqual(['ns/a', 'ns/b']);
    expect(await wire((ns) => ns.range({ prefix: '' }))).toEqual(['ns/\0', 'ns0']);
    expect(await wire((ns) => ns.range({ fromKey: 'a' }))).toEqual(['ns/a', 'ns0']);
    expect(await wire((ns) => ns.range({ all: true }))).toEqual(['ns/\0', 'ns0']);
    expect(await wire((ns) => ns.range({ fromKey: '' }))).toEqual(['ns/\0', 'ns0']);
    expect(await wire((ns) => ns.delete({ all: true }))).toEqual(['ns/\0', 'ns0']);
    expect(await wire((ns) => ns.range({ key: 'a', end: '\0' }))).toEqual(['ns/a', 'ns0']);
  });

  it('maps the root selections the way etcd expects them', async () => {
    const log = new RequestLog();
    const kv = new KV(log);
    await kv.range({ all: true });
    await kv.range({ prefix: '' });
    await kv.range({ fromKey: 'a' });
    await kv.range({ prefix: new Uint8Array([0x61, 0xff]) });
    expect(
      log.requests.map(({ request }) => [request.key, request.rangeEnd] as Uint8Array[]),
    ).toEqual([
      [new Uint8Array([0]), new Uint8Array([0])],
      [new Uint8Array([0]), new Uint8Array([0])],
      [bytes('a'), new Uint8Array([0])],
      [new Uint8Array([0x61, 0xff]), bytes('b')],
    ]);
  });

  it('sends nothing for an empty key inside a namespace', async () => {
    const log = new RequestLog();
    const ns = new KV(log).namespace('ns/');
    expectServerError(await rejection(ns.get('')), EmptyKeyError);
    expect(log.requests).toEqual([]);
  });
});
