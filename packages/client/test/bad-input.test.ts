// Input the client can judge alone is rejected with InvalidArgumentError before anything is sent.
// (Rules the server enforces - empty keys, sizes, txn limits - are tested against servers.)
import { describe, expect, it } from 'vitest';
import type { Rpc } from '../src/connection/types.js';
import { InvalidArgumentError } from '../src/errors.js';
import { cmp } from '../src/kv/compare.js';
import { KV } from '../src/kv/kv.js';
import { op } from '../src/kv/op.js';
import { rejection } from './kv/kv-support.js';

/** An Rpc that fails the test if anything is sent. */
const silent: Rpc = {
  unary: () => Promise.reject(new Error('nothing should be sent')),
  serverStream: () => {
    throw new Error('nothing should be sent');
  },
  bidiStream: () => Promise.reject(new Error('nothing should be sent')),
};

// Inputs a TypeScript caller cannot write but a JavaScript caller can.
// biome-ignore lint/suspicious/noExplicitAny: deliberately ill-typed input.
const untyped = (value: unknown): any => value;

async function expectInvalid(attempt: () => Promise<unknown> | unknown, message?: RegExp) {
  let error: unknown;
  try {
    await attempt();
  } catch (e) {
    error = e;
  }
  expect(error).toBeInstanceOf(InvalidArgumentError);
  expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', grpcStatus: 3 });
  if (message) expect((error as Error).message).toMatch(message);
}

describe('client-side validation', () => {
  const kv = new KV(silent);

  it('a key range needs exactly one of key, prefix, fromKey or all; end only with key', async () => {
    await expectInvalid(() => kv.range(untyped({})), /one of key, prefix, fromKey or all/);
    await expectInvalid(() => kv.range(untyped({ key: 'a', prefix: 'b' })), /only one/);
    await expectInvalid(() => kv.range(untyped({ prefix: 'a', fromKey: 'b' })), /only one/);
    await expectInvalid(() => kv.range(untyped({ all: true, key: 'a' })), /only one/);
    await expectInvalid(
      () => kv.range(untyped({ prefix: 'a', end: 'b' })),
      /end can only be given with key/,
    );
    await expectInvalid(() => kv.range(untyped({ fromKey: 'a', end: 'b' })), /end/);
    await expectInvalid(() => kv.range(untyped({ end: 'b' })), /one of/);
    await expectInvalid(() => kv.range(untyped({ all: false })), /all must be true/);
    await expectInvalid(() => kv.delete(untyped({ all: 'yes' })));
    await expectInvalid(() => kv.count(untyped({})));
  });

  it('keys, values and prefixes must be strings or Uint8Arrays', async () => {
    await expectInvalid(() => kv.get(untyped(42)), /must be a string, a Uint8Array/);
    await expectInvalid(() => kv.get(untyped(null)));
    await expectInvalid(() => kv.range(untyped({ key: ['a'] })));
    await expectInvalid(() => kv.range(untyped({ key: 'a', end: 5 })));
    await expectInvalid(() => kv.put('a', untyped(undefined)), /value/);
    await expectInvalid(() => kv.put('a', untyped({ v: 1 })), /value/);
    await expectInvalid(() => kv.put(untyped(Buffer.from('a').buffer), 'v'));
    await expectInvalid(() => kv.delete(untyped(1)));
    expect(() => kv.namespace(untyped(7))).toThrow(InvalidArgumentError);
  });

  it('sort targets and orders must be known names', async () => {
    await expectInvalid(
      () => kv.range(untyped({ prefix: 'a', sort: { target: 'size' } })),
      /sort.target/,
    );
    await expectInvalid(
      () => kv.range(untyped({ prefix: 'a', sort: { order: 'up' } })),
      /sort.order/,
    );
    await expectInvalid(() => kv.range(untyped({ prefix: 'a', sort: { target: 'KEY' } })));
    await expectInvalid(() => kv.range(untyped({ prefix: 'a', sort: 'key' })), /sort/);
  });

  it('limits are non-negative integers; revisions non-negative bigints', async () => {
    await expectInvalid(() => kv.range({ prefix: 'a', limit: -1 }), /limit/);
    await expectInvalid(() => kv.range({ prefix: 'a', limit: -1n }), /limit/);
    await expectInvalid(() => kv.range({ prefix: 'a', limit: 1.5 }), /limit/);
    await expectInvalid(() => kv.range(untyped({ prefix: 'a', limit: '10' })), /limit/);
    await expectInvalid(() => kv.range({ prefix: 'a', limit: Number.POSITIVE_INFINITY }), /limit/);
    await expectInvalid(() => kv.range(untyped({ prefix: 'a', revision: 5 })), /bigint/);
    await expectInvalid(() => kv.range({ prefix: 'a', revision: -1n }), /negative/);
    await expectInvalid(() => kv.get('a', untyped({ revision: '5' })));
    for (const filter of [
      'minModRevision',
      'maxModRevision',
      'minCreateRevision',
      'maxCreateRevision',
    ]) {
      await expectInvalid(
        () => kv.range(untyped({ prefix: 'a', [filter]: -2n })),
        new RegExp(filter),
      );
      await expectInvalid(
        () => kv.range(untyped({ prefix: 'a', [filter]: 2 })),
        new RegExp(filter),
      );
    }
    await expectInvalid(() => kv.count('a', untyped({ revision: 1 })));
    await expectInvalid(() => kv.compact(untyped(5)), /bigint/);
    await expectInvalid(() => kv.compact(-1n), /negative/);
  });

  it('flags are booleans, leases bigints or objects with a bigint id, options objects', async () => {
    await expectInvalid(() => kv.range(untyped({ prefix: 'a', keysOnly: 'yes' })), /keysOnly/);
    await expectInvalid(() => kv.range(untyped({ prefix: 'a', countOnly: 1 })), /countOnly/);
    await expectInvalid(() => kv.get('a', untyped({ serializable: 'true' })), /serializable/);
    await expectInvalid(() => kv.put('a', 'v', untyped({ prevKv: 1 })), /prevKv/);
    await expectInvalid(() => kv.put('a', 'v', untyped({ ignoreValue: 'no' })), /ignoreValue/);
    await expectInvalid(() => kv.put('a', 'v', untyped({ ignoreLease: null })), /ignoreLease/);
    await expectInvalid(() => kv.put('a', 'v', untyped({ lease: 5 })), /lease/);
    await expectInvalid(() => kv.put('a', 'v', untyped({ lease: { id: 5 } })), /lease/);
    await expectInvalid(() => kv.delete('a', untyped({ prevKv: 'yes' })), /prevKv/);
    await expectInvalid(() => kv.get('a', untyped(5)), /options must be an object/);
    await expectInvalid(() => kv.compact(1n, untyped({ physical: 'yes' })), /physical/);
  });

  it('compares need a known operator and an operand of the right type', () => {
    expect(() => cmp.value('a', untyped('='), 'v')).toThrow(InvalidArgumentError);
    expect(() => cmp.value('a', untyped('<='), 'v')).toThrow(/operator/);
    expect(() => cmp.version('a', untyped(undefined), 1n)).toThrow(/operator/);
    expect(() => cmp.version('a', '==', untyped(1))).toThrow(/bigint/);
    expect(() => cmp.modRevision('a', '>', untyped('1'))).toThrow(/bigint/);
    expect(() => cmp.createRevision('a', '<', untyped(null))).toThrow(/bigint/);
    expect(() => cmp.value('a', '==', untyped(1))).toThrow(/value/);
    expect(() => cmp.lease('a', '==', untyped('5'))).toThrow(/lease/);
    expect(() => cmp.exists(untyped({ prefix: 'a', key: 'b' }))).toThrow(/only one/);
  });

  it('ops, nested txns and txn builders take only values built with op and cmp', async () => {
    expect(() => op.get(untyped(1))).toThrow(InvalidArgumentError);
    expect(() => op.range(untyped({ prefix: 'a', sort: { target: 'x' } }))).toThrow(/sort.target/);
    expect(() => op.put('a', untyped(1))).toThrow(/value/);
    expect(() => op.delete(untyped({}))).toThrow(/one of/);
    expect(() => op.txn(untyped('a'))).toThrow(/compares/);
    expect(() => op.txn(untyped([{ key: 'a' }]))).toThrow(/compares/);
    expect(() => op.txn([], untyped([{ kind: 'put' }]))).toThrow(/op functions/);
    expect(() => op.txn([], [], untyped(op.get('a')))).toThrow(/array/);
    const txn = kv.txn();
    expect(() => txn.then(untyped({ kind: 'range' }))).toThrow(/op functions/);
    expect(() => txn.else(untyped('put'))).toThrow(/op functions/);
    expect(() => txn.if(untyped({ target: 'value' }))).toThrow(/cmp/);
    await expectInvalid(() => txn.commit(untyped({ retry: 'always' })), /retry/);
    await expectInvalid(() => txn.commit(untyped({ retry: true })), /retry/);
  });

  it('errors of async calls are rejections, never synchronous throws', async () => {
    const calls = [
      () => kv.get(untyped(1)),
      () => kv.range(untyped({})),
      () => kv.count(untyped({})),
      () => kv.put(untyped(1), 'v'),
      () => kv.delete(untyped(1)),
      () => kv.compact(untyped(1)),
      () => kv.txn().commit(untyped({ retry: 1 })),
    ];
    for (const call of calls) {
      let promise: Promise<unknown> | undefined;
      expect(() => {
        promise = call();
      }).not.toThrow();
      expect(await rejection(promise ?? Promise.resolve())).toBeInstanceOf(InvalidArgumentError);
    }
  });
});
