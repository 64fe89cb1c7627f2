// Transactions: compares, branches, nested txns, server limits and the retry policy they use.
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type { CallOptions, RetryPolicy, Rpc } from '../../src/connection/types.js';
import {
  DuplicateKeyError,
  EmptyKeyError,
  FutureRevisionError,
  InvalidArgumentError,
  LeaseNotFoundError,
  TooManyTxnOpsError,
} from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import type { MethodDescriptor } from '../../src/generated/methods.js';
import type { KeyValue } from '../../src/key-value.js';
import { type Compare, cmp } from '../../src/kv/compare.js';
import { KV } from '../../src/kv/kv.js';
import { type Op, op, type PutOpResponse, type RangeOpResponse } from '../../src/kv/op.js';
import { expectServerError, rejection } from './kv-support.js';

describeEachBackend('Txn', ({ backend, prefix }) => {
  let etcd: Etcd;
  const k = (name: string) => `${prefix()}${name}`;
  const keysOf = (kvs: readonly KeyValue[]) => kvs.map((kv) => kv.keyText().slice(prefix().length));

  async function revision(): Promise<bigint> {
    return (await etcd.range({ key: k('none'), countOnly: true })).header.revision;
  }

  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('runs then when every compare holds: all puts share one new revision', async () => {
    const before = await revision();
    const r = await etcd
      .txn()
      .if(cmp.missing(k('a')), cmp.missing(k('b')))
      .then(op.put(k('a'), '1'), op.put(k('b'), '2'), op.put(k('c'), '3', { prevKv: true }))
      .else(op.get(k('a')))
      .commit();
    expect(r.succeeded).toBe(true);
    expect(r.header.revision).toBe(before + 1n);
    expect(r.responses).toEqual([{ kind: 'put' }, { kind: 'put' }, { kind: 'put' }]);
    const kvs = (await etcd.range({ prefix: k('') })).kvs;
    expect(keysOf(kvs)).toEqual(['a', 'b', 'c']);
    expect(kvs.map((kv) => kv.modRevision)).toEqual([before + 1n, before + 1n, before + 1n]);
    expect(await revision()).toBe(before + 1n);
  });

  it('runs else when a compare fails, with typed responses', async () => {
    await etcd.put(k('a'), 'taken');
    const r = await etcd
      .txn()
      .if(cmp.missing(k('a')))
      .then(op.put(k('a'), 'mine'))
      .else(op.get(k('a')), op.put(k('b'), 'x', { prevKv: true }), op.delete(k('zz')))
      .commit();
    expect(r.succeeded).toBe(false);
    if (r.succeeded) return;
    const [got, put, deleted] = r.responses;
    expectTypeOf(got).toEqualTypeOf<RangeOpResponse>();
    expectTypeOf(put).toEqualTypeOf<PutOpResponse>();
    expect(got.kind).toBe('range');
    expect(got.kvs.map((kv) => kv.text())).toEqual(['taken']);
    expect(got.count).toBe(1n);
    expect(got.more).toBe(false);
    expect(put).toEqual({ kind: 'put' });
    expect(deleted).toEqual({ kind: 'delete', deleted: 0n, prevKvs: [] });
    expect((await etcd.get(k('a')))?.text()).toBe('taken');
  });

  it('a txn that only reads creates no revision', async () => {
    await etcd.put(k('ro'), 'v');
    const before = await revision();
    const r = await etcd
      .txn()
      .then(op.get(k('ro')), op.range({ prefix: k('') }))
      .commit();
    expect(r.succeeded).toBe(true);
    expect(r.header.revision).toBe(before);
    const deletesNothing = await etcd
      .txn()
      .if(cmp.exists(k('ro')))
      .then(op.delete(k('absent')))
      .commit();
    expect(deletesNothing.header.revision).toBe(before);
    expect(await revision()).toBe(before);
  });

  it('compares on a missing key: value is always false, other targets compare with 0', async () => {
    const holds = async (...compares: Compare[]) =>
      (
        await etcd
          .txn()
          .if(...compares)
          .commit()
      ).succeeded;
    const m = k('missing');
    expect(await holds(cmp.value(m, '==', ''))).toBe(false);
    expect(await holds(cmp.value(m, '!=', 'x'))).toBe(false);
    expect(await holds(cmp.value(m, '<', 'x'))).toBe(false);
    expect(await holds(cmp.createRevision(m, '==', 0n))).toBe(true);
    expect(await holds(cmp.modRevision(m, '==', 0n))).toBe(true);
    expect(await holds(cmp.version(m, '==', 0n))).toBe(true);
    expect(await holds(cmp.lease(m, '==', 0n))).toBe(true);
    expect(await holds(cmp.missing(m))).toBe(true);
    expect(await holds(cmp.exists(m))).toBe(false);
  });

  it('compares every target with every operator', async () => {
    const lease = await etcd.lease.grant(60);
    await etcd.put(k('t'), 'm');
    const put = await etcd.put(k('t'), 'm', { lease });
    const rev = put.header.revision;
    const holds = async (compare: Compare) => (await etcd.txn().if(compare).commit()).succeeded;
    const t = k('t');
    // value, compared as bytes
    expect(await holds(cmp.value(t, '==', 'm'))).toBe(true);
    expect(await holds(cmp.value(t, '==', new TextEncoder().encode('m')))).toBe(true);
    expect(await holds(cmp.value(t, '!=', 'm'))).toBe(false);
    expect(await holds(cmp.value(t, '>', 'l'))).toBe(true);
    expect(await holds(cmp.value(t, '>', 'n'))).toBe(false);
    expect(await holds(cmp.value(t, '<', 'n'))).toBe(true);
    expect(await holds(cmp.value(t, '<', 'm'))).toBe(false);
    // version 2
    expect(await holds(cmp.version(t, '==', 2n))).toBe(true);
    expect(await holds(cmp.version(t, '!=', 2n))).toBe(false);
    expect(await holds(cmp.version(t, '>', 1n))).toBe(true);
    expect(await holds(cmp.version(t, '<', 2n))).toBe(false);
    // createRevision rev - 1, modRevision rev
    expect(await holds(cmp.createRevision(t, '==', rev - 1n))).toBe(true);
    expect(await holds(cmp.createRevision(t, '<', rev))).toBe(true);
    expect(await holds(cmp.createRevision(t, '>', rev - 1n))).toBe(false);
    expect(await holds(cmp.createRevision(t, '!=', 0n))).toBe(true);
    expect(await holds(cmp.modRevision(t, '==', rev))).toBe(true);
    expect(await holds(cmp.modRevision(t, '!=', rev))).toBe(false);
    expect(await holds(cmp.modRevision(t, '<', rev + 1n))).toBe(true);
    expect(await holds(cmp.modRevision(t, '>', rev))).toBe(false);
    // lease, by id or as the lease object
    expect(await holds(cmp.lease(t, '==', lease))).toBe(true);
    expect(await holds(cmp.lease(t, '==', lease.id))).toBe(true);
    expect(await holds(cmp.lease(t, '!=', 0n))).toBe(true);
    expect(await holds(cmp.lease(t, '>', lease.id))).toBe(false);
    expect(await holds(cmp.exists(t))).toBe(true);
    await lease.revoke();
  });

  it('a range compare holds only when every key in the range satisfies it', async () => {
    const a = await etcd.put(k('r/a'), '1');
    const b = await etcd.put(k('r/b'), '1');
    const holds = async (compare: Compare) => (await etcd.txn().if(compare).commit()).succeeded;
    expect(await holds(cmp.createRevision({ prefix: k('r/') }, '<', b.header.revision + 1n))).toBe(
      true,
    );
    expect(await holds(cmp.createRevision({ prefix: k('r/') }, '<', b.header.revision))).toBe(
      false,
    );
    expect(await holds(cmp.value({ prefix: k('r/') }, '==', '1'))).toBe(true);
    expect(
      await holds(cmp.modRevision({ key: k('r/a'), end: k('r/b') }, '==', a.header.revision)),
    ).toBe(true);
    expect(await holds(cmp.version({ key: k('r/a'), end: k('r/c') }, '==', 1n))).toBe(true);
    await etcd.put(k('r/b'), '2');
    expect(await holds(cmp.version({ key: k('r/a'), end: k('r/c') }, '==', 1n))).toBe(false);
    expect(await holds(cmp.value({ prefix: k('r/') }, '==', '1'))).toBe(false);
    expect(await holds(cmp.exists({ prefix: k('r/') }))).toBe(true);
    // An empty range behaves like a missing key.
    expect(await holds(cmp.missing({ prefix: k('empty/') }))).toBe(true);
    expect(await holds(cmp.exists({ prefix: k('empty/') }))).toBe(false);
    expect(await holds(cmp.value({ prefix: k('empty/') }, '!=', 'x'))).toBe(false);
  });

  it('reads inside a txn see its earlier writes', async () => {
    await etcd.put(k('ryw'), 'old');
    await etcd.put(k('other'), 'o');
    const r = await etcd
      .txn()
      .then(
        op.get(k('ryw')),
        op.put(k('ryw'), 'new'),
        op.get(k('ryw')),
        op.delete(k('other'), { prevKv: true }),
        op.range({ prefix: k('o') }),
      )
      .commit();
    expect(r.succeeded).toBe(true);
    if (!r.succeeded) return;
    const [before, , after, deleted, empty] = r.responses;
    expect(before.kvs[0]?.text()).toBe('old');
    expect(after.kvs[0]?.text()).toBe('new');
    expect(after.kvs[0]?.modRevision).toBe(r.header.revision);
    expect(deleted.deleted).toBe(1n);
    expect(deleted.prevKvs[0]?.text()).toBe('o');
    // The delete is visible to the read after it.
    expect(empty.kvs).toEqual([]);
    expect(empty.count).toBe(0n);
  });

  it('nested txns take their own branch, and their writes share the outer revision', async () => {
    await etcd.put(k('n/flag'), 'on');
    const before = await revision();
    const r = await etcd
      .txn()
      .if(cmp.exists(k('n/flag')))
      .then(
        op.put(k('n/outer'), '1'),
        op.txn(
          [cmp.value(k('n/flag'), '==', 'off')],
          [op.put(k('n/inner'), 'then')],
          [op.put(k('n/inner'), 'else'), op.get(k('n/outer'))],
        ),
        op.txn([], [op.txn([cmp.missing(k('n/deep'))], [op.put(k('n/deep'), 'd')])]),
      )
      .commit();
    expect(r.succeeded).toBe(true);
    expect(r.header.revision).toBe(before + 1n);
    if (!r.succeeded) return;
    const [outer, inner, wrapper] = r.responses;
    expect(outer).toEqual({ kind: 'put' });
    expect(inner.kind).toBe('txn');
    expect(inner.succeeded).toBe(false);
    if (inner.succeeded) return;
    expect(inner.responses[0]).toEqual({ kind: 'put' });
    expect(inner.responses[1].kvs.map((kv) => kv.text())).toEqual(['1']);
    expect(wrapper.succeeded).toBe(true);
    if (!wrapper.succeeded) return;
    expect(wrapper.responses[0].succeeded).toBe(true);
    const kvs = (await etcd.range({ prefix: k('n/') })).kvs;
    expect(keysOf(kvs)).toEqual(['n/deep', 'n/flag', 'n/inner', 'n/outer']);
    expect(kvs.map((kv) => kv.text())).toEqual(['d', 'on', 'else', '1']);
    expect(kvs.filter((kv) => kv.modRevision === before + 1n)).toHaveLength(3);
  });

  it('nested compares see the store before the txn, not the writes of earlier ops', async () => {
    await etcd.put(k('nc'), 'before');
    const r = await etcd
      .txn()
      .then(
        op.put(k('nc'), 'after'),
        op.get(k('nc')),
        op.txn(
          [cmp.value(k('nc'), '==', 'after')],
          [op.put(k('seen'), 'after')],
          [op.put(k('seen'), 'before')],
        ),
      )
      .commit();
    expect(r.succeeded).toBe(true);
    if (!r.succeeded) return;
    // Reads see the earlier put, but the nested compare was decided before any op ran.
    expect(r.responses[1].kvs[0]?.text()).toBe('after');
    expect(r.responses[2].succeeded).toBe(false);
    expect((await etcd.get(k('seen')))?.text()).toBe('before');
  });

  it('more than 128 ops in a branch fails with TooManyTxnOpsError and changes nothing', async () => {
    const before = await revision();
    const ops = Array.from({ length: 129 }, (_, i) => op.put(k(`many/${i}`), 'v'));
    const limit = '; etcd allows each at most --max-txn-ops, 128 by default';
    expect(
      await rejection(
        etcd
          .txn()
          .then(...ops)
          .commit(),
      ),
    ).toMatchObject({
      code: 'TOO_MANY_TXN_OPS',
      message: `${TooManyTxnOpsError.etcdMessage}: this txn has 0 compares, 129 then-ops and 0 else-ops${limit}`,
    });
    const compares = Array.from({ length: 129 }, (_, i) => cmp.missing(k(`many/${i}`)));
    const error = await rejection(
      etcd
        .txn()
        .if(...compares)
        .commit(),
    );
    expect(error).toBeInstanceOf(TooManyTxnOpsError);
    expect((error as Error).message).toBe(
      `${TooManyTxnOpsError.etcdMessage}: this txn has 129 compares, 0 then-ops and 0 else-ops${limit}`,
    );
    expect(await etcd.count({ prefix: k('many/') })).toBe(0n);
    expect(await revision()).toBe(before);
    const r = await etcd
      .txn()
      .then(...ops.slice(0, 128))
      .commit();
    expect(r.responses).toHaveLength(128);
    expect(await etcd.count({ prefix: k('many/') })).toBe(128n);
  });

  it('writing one key twice in a branch fails with DuplicateKeyError and changes nothing', async () => {
    const before = await revision();
    const cases: Op[][] = [
      [op.put(k('d'), '1'), op.put(k('d'), '2')],
      [op.delete({ prefix: k('') }), op.put(k('d'), '1')],
      [op.put(k('d'), '1'), op.txn([], [op.put(k('d'), '2')])],
      [op.txn([], [op.put(k('d'), '1')]), op.txn([], [], [op.put(k('d'), '2')])],
    ];
    for (const ops of cases) {
      expectServerError(
        await rejection(
          etcd
            .txn()
            .then(...ops)
            .commit(),
        ),
        DuplicateKeyError,
      );
    }
    expect(await etcd.count({ prefix: k('') })).toBe(0n);
    expect(await revision()).toBe(before);
  });

  it('allows the same key in both branches, in the then and else of a nested txn, and overlapping deletes', async () => {
    await etcd.put(k('x/1'), 'v');
    const allowed = await etcd
      .txn()
      .if(cmp.exists(k('x/1')))
      .then(
        op.txn([cmp.missing(k('d'))], [op.put(k('d'), 'then')], [op.put(k('d'), 'else')]),
        op.delete({ prefix: k('x/') }),
        op.delete(k('x/1')),
        op.get(k('d')),
      )
      .else(op.put(k('d'), 'outer-else'))
      .commit();
    expect(allowed.succeeded).toBe(true);
    expect((await etcd.get(k('d')))?.text()).toBe('then');
    expect(await etcd.get(k('x/1'))).toBeUndefined();
  });

  it('an empty key fails with EmptyKeyError in a compare and in an op', async () => {
    expectServerError(
      await rejection(
        etcd
          .txn()
          .if(cmp.value('', '==', 'x'))
          .commit(),
      ),
      EmptyKeyError,
    );
    expectServerError(await rejection(etcd.txn().then(op.put('', 'x')).commit()), EmptyKeyError);
    expectServerError(await rejection(etcd.txn().then(op.get('')).commit()), EmptyKeyError);
  });

  it('checks of the branch taken reject the whole txn; the other branch is not checked', async () => {
    const before = await revision();
    const future = await rejection(
      etcd
        .txn()
        .then(op.put(k('fp'), 'v'), op.get(k('fp'), { revision: before + 100n }))
        .commit(),
    );
    expectServerError(future, FutureRevisionError);
    expect(await etcd.get(k('fp'))).toBeUndefined();
    const unknownLease = await rejection(
      etcd
        .txn()
        .then(op.put(k('fp'), 'v'), op.put(k('fl'), 'v', { lease: 0x7e57n }))
        .commit(),
    );
    expectServerError(unknownLease, LeaseNotFoundError);
    expect(await etcd.count({ prefix: k('f') })).toBe(0n);
    expect(await revision()).toBe(before);
    // The same invalid op in the branch not taken does not matter.
    const untaken = await etcd
      .txn()
      .if(cmp.missing(k('fp')))
      .then(op.put(k('fp'), 'v'))
      .else(op.put(k('fl'), 'v', { lease: 0x7e57n }), op.get(k('fp'), { revision: before + 100n }))
      .commit();
    expect(untaken.succeeded).toBe(true);
    expect((await etcd.get(k('fp')))?.text()).toBe('v');
  });

  it('guards a write with a mod revision compare (compare-and-swap)', async () => {
    const first = await etcd.put(k('cas'), '1');
    const swap = (seen: bigint, value: string) =>
      etcd
        .txn()
        .if(cmp.modRevision(k('cas'), '==', seen))
        .then(op.put(k('cas'), value))
        .else(op.get(k('cas')))
        .commit({ retry: 'guarded' });
    const won = await swap(first.header.revision, '2');
    expect(won.succeeded).toBe(true);
    const lost = await swap(first.header.revision, '3');
    expect(lost.succeeded).toBe(false);
    if (lost.succeeded) return;
    expect(lost.responses[0].kvs[0]?.text()).toBe('2');
    expect(lost.responses[0].kvs[0]?.modRevision).toBe(won.header.revision);
  });
});

/** An Rpc that records the retry policy of each call and answers an empty txn response. */
class RecordingRpc implements Rpc {
  readonly policies: RetryPolicy[] = [];
  readonly requests: unknown[] = [];

  async unary<Req, Res>(
    _method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    retry: RetryPolicy,
    _options?: CallOptions,
  ): Promise<Res> {
    this.policies.push(retry);
    this.requests.push(request);
    return { header: { revision: 7n }, succeeded: true, responses: [] } as Res;
  }
  serverStream(): never {
    throw new Error('not used');
  }
  bidiStream(): never {
    throw new Error('not used');
  }
}

describe('Txn retry policy and builder', () => {
  it('is read for a txn whose every op (both branches, nested too) reads; write otherwise', async () => {
    const rpc = new RecordingRpc();
    const kv = new KV(rpc);
    await kv.txn().commit();
    await kv
      .txn()
      .then(op.get('a'))
      .else(op.range({ prefix: 'b' }))
      .commit();
    await kv
      .txn()
      .then(op.txn([], [op.get('a')], [op.get('b')]))
      .commit();
    await kv.txn().then(op.get('a')).else(op.put('a', 'v')).commit();
    await kv.txn().then(op.delete('a')).commit();
    await kv
      .txn()
      .then(op.txn([], [], [op.put('a', 'v')]))
      .commit();
    await kv
      .txn()
      .if(cmp.modRevision('a', '==', 3n))
      .then(op.put('a', 'v'))
      .commit({ retry: 'guarded' });
    // A read-only txn stays a read even when guarded.
    await kv.txn().then(op.get('a')).commit({ retry: 'guarded' });
    expect(rpc.policies).toEqual([
      'read',
      'read',
      'read',
      'write',
      'write',
      'write',
      'guarded-write',
      'read',
    ]);
  });

  it('builders return new txns, so a partial txn is a reusable template', async () => {
    const rpc = new RecordingRpc();
    const kv = new KV(rpc);
    const base = kv.txn().if(cmp.exists('a'));
    await base.then(op.put('a', '1')).commit();
    await base.then(op.put('a', '2')).else(op.get('a')).commit();
    await base.commit();
    const [first, second, third] = rpc.requests as { success: unknown[]; failure: unknown[] }[];
    expect(first?.success).toHaveLength(1);
    expect(second?.success).toHaveLength(1);
    expect(second?.failure).toHaveLength(1);
    expect(third?.success).toHaveLength(0);
  });

  it('awaiting a txn without commit rejects with InvalidArgumentError', async () => {
    const rpc = new RecordingRpc();
    const txn = new KV(rpc).txn().then(op.put('a', 'v'));
    // biome-ignore lint/suspicious/noExplicitAny: awaiting a non-promise on purpose.
    const error = await rejection(Promise.resolve(txn as any));
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(/commit\(\)/);
    expect(rpc.policies).toEqual([]);
  });

  it('encodes every compare target with its operand, even empty or zero', async () => {
    const rpc = new RecordingRpc();
    await new KV(rpc)
      .txn()
      .if(
        cmp.value('k', '==', ''),
        cmp.version('k', '!=', 0n),
        cmp.createRevision({ prefix: 'p/' }, '<', 10n),
        cmp.modRevision({ fromKey: 'f' }, '>', 1n),
        cmp.lease({ all: true }, '==', { id: 5n }),
      )
      .commit();
    const request = rpc.requests[0] as { compare: Record<string, unknown>[] };
    const bytes = (s: string) => new TextEncoder().encode(s);
    expect(request.compare).toEqual([
      {
        result: 0,
        target: 3,
        key: bytes('k'),
        rangeEnd: new Uint8Array(0),
        value: new Uint8Array(0),
      },
      { result: 3, target: 0, key: bytes('k'), rangeEnd: new Uint8Array(0), version: 0n },
      { result: 2, target: 1, key: bytes('p/'), rangeEnd: bytes('p0'), createRevision: 10n },
      { result: 1, target: 2, key: bytes('f'), rangeEnd: new Uint8Array([0]), modRevision: 1n },
      { result: 0, target: 4, key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]), lease: 5n },
    ]);
  });
});
