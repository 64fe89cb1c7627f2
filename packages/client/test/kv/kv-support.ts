// Shared helpers of the KV, txn, scan and namespace suites.
import { expect } from 'vitest';
import { EtcdError, type ServerErrorClass } from '../../src/errors.js';

/** The error a promise rejects with; fails the test if it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

/** Asserts that `error` is the server error `cls`: its class, stable code and etcd's exact message. */
export function expectServerError(error: unknown, cls: ServerErrorClass): void {
  expect(error).toBeInstanceOf(cls);
  expect(error).toBeInstanceOf(EtcdError);
  expect(error).toMatchObject({ code: cls.errorCode, message: cls.etcdMessage, name: cls.name });
}
