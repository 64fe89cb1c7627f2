// The messages of size, txn and deadline errors say what the client knows (the request's size and
// its send limit, the txn's op counts, the method and its deadline) and name etcd's limits; the
// transport's or the server's own report stays in `cause`. Runs on each transport
// (ETCDKIT_TEST_TRANSPORT) and backend.
import { describeEachBackend, startBlackHole, startTcpProxy } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  DeadlineExceededError,
  OutcomeUnknownError,
  RequestTooLargeError,
  TooManyTxnOpsError,
} from '../src/errors.js';
import { Etcd } from '../src/etcd.js';
import { op } from '../src/kv/op.js';
import { GrpcStatus, TransportError } from '../src/transport/types.js';
import { rejection } from './kv/kv-support.js';

/** Size of a PutRequest with only key and value: a tag and a varint length before each. */
function putRequestBytes(key: string, valueBytes: number): number {
  const varintBytes = (n: number) => Math.max(1, Math.ceil(Math.log2(n + 1) / 7));
  return 1 + varintBytes(key.length) + key.length + 1 + varintBytes(valueBytes) + valueBytes;
}

describeEachBackend('Errors in our words', ({ backend, prefix }) => {
  let etcd: Etcd;
  const k = (name: string) => `${prefix()}${name}`;

  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('a put over the client send limit is refused before sending, with its size and the limit', async () => {
    const key = k('huge');
    const error = await rejection(etcd.put(key, new Uint8Array(2 * 1024 * 1024)));
    const bytes = putRequestBytes(key, 2 * 1024 * 1024);
    expect(error).toBeInstanceOf(RequestTooLargeError);
    expect(error).toMatchObject({
      code: 'REQUEST_TOO_LARGE',
      grpcStatus: GrpcStatus.ResourceExhausted,
      message:
        `request too large: ${bytes} bytes exceed the client's send limit of 2097152 bytes ` +
        "(maxCallSendMsgSize); etcd's own limit is --max-request-bytes, 1.5 MiB by default",
    });
    const cause = (error as Error).cause;
    expect(cause).toBeInstanceOf(TransportError);
    expect(cause).toMatchObject({
      code: GrpcStatus.ResourceExhausted,
      details: (error as Error).message,
      sent: false,
    });
    expect(await etcd.get(key)).toBeUndefined();
  });

  it('the send limit named is the one configured', async () => {
    const small = new Etcd({ endpoints: backend().endpoints, maxCallSendMsgSize: 100 });
    try {
      const key = k('small');
      const error = await rejection(small.put(key, 'v'.repeat(100)));
      expect(error).toBeInstanceOf(RequestTooLargeError);
      expect((error as Error).message).toBe(
        `request too large: ${putRequestBytes(key, 100)} bytes exceed the client's send limit of ` +
          "100 bytes (maxCallSendMsgSize); etcd's own limit is --max-request-bytes, 1.5 MiB by default",
      );
      await small.put(key, 'v'.repeat(50));
      expect((await small.get(key))?.text()).toBe('v'.repeat(50));
    } finally {
      await small.close();
    }
  });

  it("etcd's refusal of a large request names its size and etcd's limit", async () => {
    const key = k('big');
    const valueBytes = 1.5 * 1024 * 1024 + 1;
    const error = await rejection(etcd.put(key, new Uint8Array(valueBytes)));
    expect(error).toBeInstanceOf(RequestTooLargeError);
    expect(error).toMatchObject({
      code: 'REQUEST_TOO_LARGE',
      grpcStatus: GrpcStatus.InvalidArgument,
      message:
        'etcdserver: request is too large: the server refused a request of ' +
        `${putRequestBytes(key, valueBytes)} bytes; etcd's limit is --max-request-bytes, 1.5 MiB by default`,
    });
    const cause = (error as Error).cause;
    expect(cause).toBeInstanceOf(TransportError);
    expect(cause).toMatchObject({
      code: GrpcStatus.InvalidArgument,
      details: 'etcdserver: request is too large',
    });
    expect(await etcd.get(key)).toBeUndefined();
  });

  it("a txn over etcd's op limit names its counts and the limit", async () => {
    const ops = Array.from({ length: 200 }, (_, i) => op.put(k(`many/${i}`), 'v'));
    const error = await rejection(
      etcd
        .txn()
        .then(...ops)
        .else(op.get(k('x')))
        .commit(),
    );
    expect(error).toBeInstanceOf(TooManyTxnOpsError);
    expect(error).toMatchObject({
      code: 'TOO_MANY_TXN_OPS',
      grpcStatus: GrpcStatus.InvalidArgument,
      message:
        'etcdserver: too many operations in txn request: this txn has 0 compares, 200 then-ops ' +
        'and 1 else-ops; etcd allows each at most --max-txn-ops, 128 by default',
    });
    const cause = (error as Error).cause;
    expect(cause).toBeInstanceOf(TransportError);
    expect(cause).toMatchObject({
      code: GrpcStatus.InvalidArgument,
      details: 'etcdserver: too many operations in txn request',
    });
    expect(await etcd.count({ prefix: k('many/') })).toBe(0n);
  });

  it('a call with no answer by its deadline names the method and the deadline', async () => {
    // A paused proxy holds the call's bytes: the connection stays up, no answer comes.
    const proxy = await startTcpProxy(backend().endpoints[0]!);
    const client = new Etcd({ endpoints: [proxy.endpoint] });
    try {
      await client.put(k('d'), '1');
      proxy.pause();
      const error = await rejection(client.get(k('d'), { timeoutMs: 300 }));
      expect(error).toBeInstanceOf(DeadlineExceededError);
      expect(error).toMatchObject({
        code: 'DEADLINE_EXCEEDED',
        grpcStatus: GrpcStatus.DeadlineExceeded,
        message:
          'deadline exceeded: /etcdserverpb.KV/Range got no answer within its 300 ms deadline',
      });
      // The transport's own words (grpc-js adds its timings) stay in the cause.
      const cause = (error as Error).cause;
      expect(cause).toBeInstanceOf(TransportError);
      expect(cause).toMatchObject({ code: GrpcStatus.DeadlineExceeded, sent: true });
      expect((cause as TransportError).details).toMatch(/^Deadline exceeded/);
      // A write that may have reached the server says so, with the same words.
      const write = await rejection(client.put(k('d'), '2', { timeoutMs: 300 }));
      expect(write).toBeInstanceOf(OutcomeUnknownError);
      expect((write as Error).message).toBe(
        'the write may or may not have been applied: deadline exceeded: /etcdserverpb.KV/Put ' +
          'got no answer within its 300 ms deadline',
      );
      const deadline = (write as Error).cause;
      expect(deadline).toBeInstanceOf(DeadlineExceededError);
      expect((deadline as Error).cause).toMatchObject({ code: GrpcStatus.DeadlineExceeded });
    } finally {
      proxy.resume();
      await client.close();
      await proxy.close();
    }
  });

  it('a deadline that passes while connecting names the method, the deadline and the endpoint', async () => {
    const hole = await startBlackHole();
    const client = new Etcd({ endpoints: [hole.endpoint], dialTimeoutMs: 10_000 });
    try {
      const error = await rejection(client.put(k('d'), '1', { timeoutMs: 200 }));
      expect(error).toBeInstanceOf(DeadlineExceededError);
      expect(error).toMatchObject({
        code: 'DEADLINE_EXCEEDED',
        message:
          'deadline exceeded: /etcdserverpb.KV/Put got no answer within its 200 ms deadline ' +
          `(connecting to 127.0.0.1:${hole.port})`,
      });
      expect((error as Error).cause).toBeInstanceOf(TransportError);
      expect((error as Error).cause).toMatchObject({ sent: false });
    } finally {
      await client.close();
      await hole.close();
    }
  });
});
