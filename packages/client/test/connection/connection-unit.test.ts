// Connection behaviour against a scripted in-memory transport: retry policy, failover order,
// auth single flight, aborts, hooks. No server involved, so every branch is deterministic.
import { describe, expect, it } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import type { ConnectionOptions } from '../../src/connection/options.js';
import { judge } from '../../src/connection/retry.js';
import {
  AbortedError,
  ClientClosedError,
  DeadlineExceededError,
  EtcdError,
  InvalidConfigError,
  OutcomeUnknownError,
  RequestTimeoutError,
  UnavailableError,
  WriteNotAppliedError,
} from '../../src/errors.js';
import { etcdserverpb_Auth, etcdserverpb_KV } from '../../src/generated/methods.js';
import {
  type BidiStream,
  type Channel,
  type ChannelCallOptions,
  type ChannelOptions,
  type ChannelState,
  GrpcStatus,
  type Metadata,
  type ServerStream,
  type Transport,
  TransportError,
} from '../../src/transport/types.js';

interface Recorded {
  readonly target: string;
  readonly method: string;
  readonly metadata: Metadata;
}

type UnaryHandler = (target: string, method: string, request: unknown) => unknown;

function failure(code: GrpcStatus, details: string, sent: boolean): TransportError {
  return new TransportError({ code, details, metadata: {}, sent });
}

/** A transport whose channels answer from a script. */
class ScriptedTransport implements Transport {
  readonly name = 'scripted';
  readonly calls: Recorded[] = [];
  readonly opened: string[] = [];
  readonly closed: string[] = [];
  /** Targets whose `ready()` fails (unsent Unavailable). */
  readonly down = new Set<string>();

  constructor(public handler: UnaryHandler) {}

  open(options: ChannelOptions): Channel {
    this.opened.push(options.target);
    const transport = this;
    let state: ChannelState = 'idle';
    const target = options.target;
    return {
      target,
      state: () => state,
      async ready(_deadline: number, signal?: AbortSignal) {
        await Promise.resolve();
        if (signal?.aborted) throw failure(GrpcStatus.Cancelled, 'aborted', false);
        if (transport.down.has(target)) {
          state = 'failed';
          throw failure(GrpcStatus.Unavailable, `cannot connect to ${target}`, false);
        }
        state = 'ready';
      },
      async unary<Req, Res>(
        method: { path: string },
        request: Req,
        callOptions: ChannelCallOptions,
      ): Promise<Res> {
        transport.calls.push({
          target,
          method: method.path,
          metadata: callOptions.metadata ?? {},
        });
        await Promise.resolve();
        return transport.handler(target, method.path, request) as Res;
      },
      serverStream<Res>(): ServerStream<Res> {
        throw new Error('not scripted');
      },
      bidiStream<Req, Res>(): BidiStream<Req, Res> {
        throw new Error('not scripted');
      },
      close() {
        state = 'closed';
        transport.closed.push(target);
      },
    } as Channel;
  }
}

const PUT = etcdserverpb_KV.Put;
const RANGE = etcdserverpb_KV.Range;
const AUTH = etcdserverpb_Auth.Authenticate.path;
const key = new TextEncoder().encode('k');

/** Resolves once `condition` holds, polling every millisecond. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 1));
}

function connect(transport: Transport, options: Partial<ConnectionOptions> = {}): Connection {
  return new Connection({
    endpoints: ['http://127.0.0.1:1', 'http://127.0.0.1:2'],
    transport,
    ...options,
    retry: { minDelayMs: 1, maxDelayMs: 5, jitter: false, ...options.retry },
  });
}

describe('options validation', () => {
  const bad: Array<[string, Partial<ConnectionOptions>, RegExp]> = [
    ['no endpoints', { endpoints: [] }, /non-empty/],
    ['unknown scheme', { endpoints: ['ftp://127.0.0.1:2379'] }, /unsupported scheme/],
    ['missing port', { endpoints: ['http://127.0.0.1'] }, /missing port/],
    ['bare host without port', { endpoints: ['localhost'] }, /missing port/],
    ['garbage', { endpoints: ['http://a b:1'] }, /invalid endpoint/],
    ['a path', { endpoints: ['http://127.0.0.1:2379/v3'] }, /invalid endpoint/],
    ['port out of range', { endpoints: ['127.0.0.1:70000'] }, /out of range/],
    ['mixed schemes', { endpoints: ['http://127.0.0.1:1', 'https://127.0.0.1:2'] }, /mix/],
    ['tls with http', { endpoints: ['http://127.0.0.1:1'], tls: { ca: 'x' } }, /https/],
    [
      'half a key pair',
      { endpoints: ['https://127.0.0.1:1'], tls: { cert: 'c' } },
      /cert and tls.key go together/,
    ],
    ['empty user name', { auth: { username: '', password: 'p' } }, /username/],
    ['zero dial timeout', { dialTimeoutMs: 0 }, /dialTimeoutMs/],
    ['zero attempts', { retry: { maxAttempts: 0 } }, /maxAttempts/],
  ];
  it.each(bad)('rejects %s with InvalidConfigError, opening nothing', (_name, options, message) => {
    const transport = new ScriptedTransport(() => ({}));
    const make = () => new Connection({ endpoints: ['http://127.0.0.1:1'], transport, ...options });
    expect(make).toThrow(InvalidConfigError);
    expect(make).toThrow(message);
    expect(transport.opened).toEqual([]);
  });

  it('accepts bare host:port as http, IPv6 and https with a CA', async () => {
    const a = new Connection({ endpoints: ['127.0.0.1:2379', 'http://[::1]:2380'] });
    expect(a.endpoints).toEqual(['http://127.0.0.1:2379', 'http://[::1]:2380']);
    const b = new Connection({ endpoints: ['https://localhost:2379'], tls: { ca: 'pem' } });
    expect(b.endpoints).toEqual(['https://localhost:2379']);
    await Promise.all([a.close(), b.close()]);
  });
});

describe('retry policy (judge)', () => {
  const unavailableSent = failure(GrpcStatus.Unavailable, 'Connection dropped', true);
  const unavailableUnsent = failure(GrpcStatus.Unavailable, 'No connection established', false);

  it('retries reads and guarded writes on Unavailable, writes only when unsent', () => {
    expect(judge(unavailableSent, 'read').retry).toBe(true);
    expect(judge(unavailableSent, 'guarded-write').retry).toBe(true);
    expect(judge(unavailableUnsent, 'write').retry).toBe(true);
    const write = judge(unavailableSent, 'write');
    expect(write.retry).toBe(false);
    expect(write.error).toBeInstanceOf(OutcomeUnknownError);
    expect(write.error.cause).toBeInstanceOf(UnavailableError);
  });

  it.each([
    ['etcdserver: no leader', 'NO_LEADER'],
    ['etcdserver: rpc not supported for learner', 'NOT_SUPPORTED_FOR_LEARNER'],
  ])(
    'retries every policy elsewhere after %j: etcd refused it before applying anything',
    (details, code) => {
      const refused = failure(GrpcStatus.Unavailable, details, true);
      for (const policy of ['read', 'write', 'guarded-write'] as const) {
        const verdict = judge(refused, policy);
        expect(verdict).toMatchObject({ retry: true, endpointFailed: true, ambiguous: false });
        expect(verdict.error.code).toBe(code);
      }
    },
  );

  it.each([
    [GrpcStatus.Unavailable, 'etcdserver: unhealthy cluster', 'UNHEALTHY'],
    [
      GrpcStatus.Unknown,
      'etcdserver: re-configuration failed due to not enough started members',
      'MEMBER_NOT_ENOUGH_STARTED',
    ],
  ])(
    'reports the reconfiguration refusal %s %j as is: etcd checks before proposing',
    (code, details, etcdCode) => {
      for (const policy of ['read', 'write', 'guarded-write'] as const) {
        const verdict = judge(failure(code, details, true), policy);
        expect(verdict).toMatchObject({ retry: false, endpointFailed: false, ambiguous: false });
        expect(verdict.error.code).toBe(etcdCode);
        expect(verdict.error).not.toBeInstanceOf(OutcomeUnknownError);
      }
    },
  );

  it.each([
    [GrpcStatus.DeadlineExceeded, 'Deadline exceeded'],
    [GrpcStatus.Internal, 'Received RST_STREAM with code 2'],
    [GrpcStatus.Unknown, 'boom'],
  ])('never retries status %s; a sent write becomes OutcomeUnknownError', (code, details) => {
    const sent = failure(code, details, true);
    expect(judge(sent, 'read').retry).toBe(false);
    const write = judge(sent, 'write');
    expect(write.retry).toBe(false);
    expect(write.error).toBeInstanceOf(OutcomeUnknownError);
    expect(write.error.cause).toBeInstanceOf(EtcdError);
  });

  it('keeps a DeadlineExceededError as the cause of a timed-out write', () => {
    const write = judge(failure(GrpcStatus.DeadlineExceeded, 'Deadline exceeded', true), 'write');
    expect(write.error.cause).toBeInstanceOf(DeadlineExceededError);
  });

  it.each([
    [GrpcStatus.InvalidArgument, 'etcdserver: key is not provided', 'EMPTY_KEY'],
    [GrpcStatus.NotFound, 'etcdserver: requested lease not found', 'LEASE_NOT_FOUND'],
    [GrpcStatus.FailedPrecondition, 'etcdserver: lease already exists', 'LEASE_EXISTS'],
    [GrpcStatus.OutOfRange, 'etcdserver: mvcc: required revision has been compacted', 'COMPACTED'],
    [GrpcStatus.PermissionDenied, 'etcdserver: permission denied', 'PERMISSION_DENIED'],
    [GrpcStatus.ResourceExhausted, 'etcdserver: mvcc: database space exceeded', 'NO_SPACE'],
  ])('rethrows definite server error %s typed, for every policy', (code, details, etcdCode) => {
    for (const policy of ['read', 'write', 'guarded-write'] as const) {
      const verdict = judge(failure(code, details, true), policy);
      expect(verdict.retry).toBe(false);
      expect(verdict.error.code).toBe(etcdCode);
    }
  });
});

describe('Connection with a scripted transport', () => {
  it('fails over to the next endpoint when the first cannot connect, and sticks to it', async () => {
    const transport = new ScriptedTransport(() => ({ kvs: [] }));
    transport.down.add('127.0.0.1:1');
    const switches: Array<string | undefined> = [];
    const conn = connect(transport, {
      hooks: { onEndpointSwitch: (e) => switches.push(`${e.from}->${e.to}`) },
    });
    await conn.unary(RANGE, { key }, 'read');
    await conn.unary(RANGE, { key }, 'read');
    expect(transport.calls.map((c) => c.target)).toEqual(['127.0.0.1:2', '127.0.0.1:2']);
    expect(conn.currentEndpoint).toBe('127.0.0.1:2');
    expect(switches).toEqual(['127.0.0.1:1->127.0.0.1:2']);
    await conn.close();
  });

  it('retries an unsent write on another endpoint: applied exactly once', async () => {
    const transport = new ScriptedTransport(() => ({}));
    transport.down.add('127.0.0.1:1');
    const conn = connect(transport);
    await conn.unary(PUT, { key }, 'write');
    expect(transport.calls).toHaveLength(1);
    await conn.close();
  });

  it('never retries a write that may have reached the server', async () => {
    const transport = new ScriptedTransport(() => {
      throw failure(GrpcStatus.Unavailable, 'Connection dropped', true);
    });
    const conn = connect(transport);
    const error = await conn.unary(PUT, { key }, 'write').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((error as Error).cause).toBeInstanceOf(UnavailableError);
    expect(transport.calls).toHaveLength(1);
    await conn.close();
  });

  it('retries reads within the budget, then reports the typed error', async () => {
    const transport = new ScriptedTransport(() => {
      throw failure(GrpcStatus.Unavailable, 'etcdserver: request timed out', true);
    });
    const retries: number[] = [];
    const conn = connect(transport, {
      retry: { maxAttempts: 4 },
      hooks: { onRetry: (e) => retries.push(e.attempt) },
    });
    const error = await conn.unary(RANGE, { key }, 'read').catch((e: unknown) => e);
    expect((error as EtcdError).code).toBe('REQUEST_TIMEOUT');
    // 4 budgeted attempts, plus one free hop to the second endpoint after the first failure.
    expect(transport.calls.length).toBeGreaterThanOrEqual(4);
    expect(transport.calls.length).toBeLessThanOrEqual(5);
    expect(retries.length).toBe(transport.calls.length - 1);
    await conn.close();
  });

  it('retries a guarded write like a read', async () => {
    let n = 0;
    const transport = new ScriptedTransport(() => {
      if (n++ === 0) throw failure(GrpcStatus.Unavailable, 'etcdserver: leader changed', true);
      return {};
    });
    const conn = connect(transport);
    await conn.unary(PUT, { key }, 'guarded-write');
    expect(transport.calls).toHaveLength(2);
    await conn.close();
  });

  it('reports a guarded write that gave up after a sent attempt as outcome unknown', async () => {
    // First attempt reached a server and got no answer; the retries then cannot even connect.
    const transport = new ScriptedTransport(() => {
      transport.down.add('127.0.0.1:1');
      transport.down.add('127.0.0.1:2');
      throw failure(GrpcStatus.Unavailable, 'etcdserver: request timed out', true);
    });
    const conn = connect(transport, { retry: { maxAttempts: 2 } });
    const error = await conn.unary(PUT, { key }, 'guarded-write').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((error as Error).cause).toBeInstanceOf(UnavailableError);
    expect(transport.calls).toHaveLength(1);
    await conn.close();
  });

  it('reports a guarded write that never reached a server as WriteNotAppliedError', async () => {
    const transport = new ScriptedTransport(() => ({}));
    transport.down.add('127.0.0.1:1');
    transport.down.add('127.0.0.1:2');
    const conn = connect(transport, { retry: { maxAttempts: 2 } });
    const error = await conn.unary(PUT, { key }, 'guarded-write').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteNotAppliedError);
    expect((error as Error).cause).toBeInstanceOf(UnavailableError);
    expect(transport.calls).toHaveLength(0);
    await conn.close();
  });

  it('allows many concurrent calls without listener-leak warnings', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on('warning', onWarning);
    const transport = new ScriptedTransport(() => ({}));
    const conn = connect(transport);
    await Promise.all(Array.from({ length: 50 }, () => conn.unary(RANGE, { key }, 'read')));
    await new Promise((resolve) => setImmediate(resolve));
    process.off('warning', onWarning);
    expect(warnings).not.toContain('MaxListenersExceededWarning');
    expect(transport.calls).toHaveLength(50);
    await conn.close();
  });

  it('rejects with AbortedError (cause = reason) promptly, even while backing off', async () => {
    const transport = new ScriptedTransport(() => {
      throw failure(GrpcStatus.Unavailable, 'etcdserver: no leader', true);
    });
    const conn = connect(transport, {
      retry: { maxAttempts: 10, minDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    const controller = new AbortController();
    const reason = new Error('user gave up');
    const pending = conn.unary(RANGE, { key }, 'read', { signal: controller.signal });
    setTimeout(() => controller.abort(reason), 50);
    const started = Date.now();
    const error = await pending.catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error).toBeInstanceOf(AbortedError);
    expect((error as Error).cause).toBe(reason);
    await conn.close();
  });

  it('rejects an already aborted call without sending it', async () => {
    const transport = new ScriptedTransport(() => ({}));
    const conn = connect(transport);
    const error = await conn
      .unary(PUT, { key }, 'write', { signal: AbortSignal.abort('stop') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortedError);
    expect((error as Error).cause).toBe('stop');
    expect(transport.calls).toHaveLength(0);
    await conn.close();
  });

  it('reports a write aborted after it was sent as outcome unknown, the abort as its cause', async () => {
    let controller = new AbortController();
    const reason = new Error('user gave up');
    // The transport reports the abort as it does for a call whose request it wrote: sent.
    const transport = new ScriptedTransport(() => {
      controller.abort(reason);
      throw failure(GrpcStatus.Cancelled, 'the call was aborted', true);
    });
    const conn = connect(transport);
    for (const policy of ['write', 'guarded-write'] as const) {
      controller = new AbortController();
      const error = await conn
        .unary(PUT, { key }, policy, { signal: controller.signal })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      expect((error as Error).message).toBe(
        'the write may or may not have been applied: the operation was aborted',
      );
      expect((error as Error).cause).toBeInstanceOf(AbortedError);
      expect(((error as Error).cause as Error).cause).toBe(reason);
    }
    // A read aborted the same way is just aborted.
    controller = new AbortController();
    const read = await conn
      .unary(RANGE, { key }, 'read', { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(read).toBeInstanceOf(AbortedError);
    await conn.close();
  });

  it('reports a write aborted before it was sent as AbortedError', async () => {
    const controller = new AbortController();
    const transport = new ScriptedTransport(() => {
      controller.abort('stop');
      throw failure(GrpcStatus.Cancelled, 'the call was aborted', false);
    });
    const conn = connect(transport);
    const error = await conn
      .unary(PUT, { key }, 'write', { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortedError);
    expect((error as Error).cause).toBe('stop');
    await conn.close();
  });

  it('resolves a write answered as it is aborted with its answer: its outcome is known', async () => {
    const controller = new AbortController();
    const transport = new ScriptedTransport(() => {
      controller.abort('late');
      return { header: { revision: 7 } };
    });
    const conn = connect(transport);
    const response = await conn.unary(PUT, { key }, 'write', { signal: controller.signal });
    expect(response).toEqual({ header: { revision: 7 } });
    // A read answered as it is aborted ends as aborted: nothing depends on its answer.
    const reading = new AbortController();
    transport.handler = () => {
      reading.abort('late');
      return { header: { revision: 7 } };
    };
    const read = await conn
      .unary(RANGE, { key }, 'read', { signal: reading.signal })
      .catch((e: unknown) => e);
    expect(read).toBeInstanceOf(AbortedError);
    await conn.close();
  });

  it('reports a guarded write aborted in its backoff after a sent attempt as outcome unknown', async () => {
    const transport = new ScriptedTransport(() => {
      throw failure(GrpcStatus.Unavailable, 'etcdserver: request timed out', true);
    });
    const conn = connect(transport, {
      endpoints: ['http://127.0.0.1:1'],
      retry: { maxAttempts: 10, minDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    const controller = new AbortController();
    const pending = conn
      .unary(PUT, { key }, 'guarded-write', { signal: controller.signal })
      .catch((e: unknown) => e);
    await until(() => transport.calls.length === 1);
    controller.abort('stop');
    const error = await pending;
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((error as Error).cause).toBeInstanceOf(AbortedError);
    // Closed in its backoff instead: the same, with ClientClosedError as the cause.
    const closing = conn.unary(PUT, { key }, 'guarded-write').catch((e: unknown) => e);
    await until(() => transport.calls.length === 2);
    await conn.close();
    const closed = await closing;
    expect(closed).toBeInstanceOf(OutcomeUnknownError);
    expect((closed as Error).cause).toBeInstanceOf(ClientClosedError);
  });

  it('reports a guarded write aborted in its backoff before any attempt was sent as AbortedError', async () => {
    const transport = new ScriptedTransport(() => ({}));
    transport.down.add('127.0.0.1:1');
    transport.down.add('127.0.0.1:2');
    const conn = connect(transport, {
      retry: { maxAttempts: 10, minDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    const controller = new AbortController();
    const pending = conn
      .unary(PUT, { key }, 'guarded-write', { signal: controller.signal })
      .catch((e: unknown) => e);
    await until(() => transport.opened.length === 2);
    controller.abort('stop');
    const error = await pending;
    expect(error).toBeInstanceOf(AbortedError);
    expect((error as Error).cause).toBe('stop');
    expect(transport.calls).toHaveLength(0);
    await conn.close();
  });

  it('ends calls in backoff with ClientClosedError on close(), and later calls too', async () => {
    const transport = new ScriptedTransport(() => {
      throw failure(GrpcStatus.Unavailable, 'etcdserver: no leader', true);
    });
    const conn = connect(transport, {
      retry: { maxAttempts: 10, minDelayMs: 60_000, maxDelayMs: 60_000 },
    });
    const pending = conn.unary(RANGE, { key }, 'read').catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 20));
    await conn.close();
    expect(await pending).toBeInstanceOf(ClientClosedError);
    await expect(conn.unary(RANGE, { key }, 'read')).rejects.toBeInstanceOf(ClientClosedError);
    expect(new Set(transport.closed)).toEqual(new Set(transport.opened));
  });

  it('sends hasleader with requireLeader', async () => {
    const transport = new ScriptedTransport(() => ({}));
    const conn = connect(transport, { requireLeader: true });
    await conn.unary(RANGE, { key }, 'read');
    expect(transport.calls[0]?.metadata).toEqual({ hasleader: 'true' });
    await conn.close();
  });

  it('authenticates once for concurrent calls and sends the token', async () => {
    const transport = new ScriptedTransport((_t, method) =>
      method === AUTH ? { token: 'tok-1' } : {},
    );
    const conn = connect(transport, { auth: { username: 'root', password: 'pw' } });
    await Promise.all([1, 2, 3].map(() => conn.unary(RANGE, { key }, 'read')));
    const auths = transport.calls.filter((c) => c.method === AUTH);
    expect(auths).toHaveLength(1);
    expect(auths[0]?.metadata.token).toBeUndefined();
    const others = transport.calls.filter((c) => c.method !== AUTH);
    expect(others.map((c) => c.metadata.token)).toEqual(['tok-1', 'tok-1', 'tok-1']);
    await conn.close();
  });

  it('re-authenticates once on an invalid token and retries the write once', async () => {
    let tokens = 0;
    const refreshes: string[] = [];
    const transport = new ScriptedTransport((_t, method) => {
      if (method === AUTH) return { token: `tok-${++tokens}` };
      const call = transport.calls[transport.calls.length - 1]!;
      if (call.metadata.token === 'tok-1') {
        throw failure(GrpcStatus.Unauthenticated, 'etcdserver: invalid auth token', true);
      }
      return {};
    });
    const conn = connect(transport, {
      auth: { username: 'root', password: 'pw' },
      hooks: { onAuthRefresh: (e) => refreshes.push(e.reason) },
    });
    await conn.unary(PUT, { key }, 'write');
    expect(transport.calls.map((c) => [c.method, c.metadata.token])).toEqual([
      [AUTH, undefined],
      [PUT.path, 'tok-1'],
      [AUTH, undefined],
      [PUT.path, 'tok-2'],
    ]);
    expect(refreshes).toEqual(['initial', 'invalid-token']);
    await conn.close();
  });

  it('surfaces a second invalid-token failure', async () => {
    const transport = new ScriptedTransport((_t, method) => {
      if (method === AUTH) return { token: 'tok' };
      throw failure(GrpcStatus.Unauthenticated, 'etcdserver: invalid auth token', true);
    });
    const conn = connect(transport, { auth: { username: 'root', password: 'pw' } });
    const error = await conn.unary(PUT, { key }, 'write').catch((e: unknown) => e);
    expect((error as EtcdError).code).toBe('INVALID_AUTH_TOKEN');
    expect(transport.calls.filter((c) => c.method === PUT.path)).toHaveLength(2);
    await conn.close();
  });

  it('fails the triggering call with the authentication error', async () => {
    const transport = new ScriptedTransport((_t, method) => {
      if (method === AUTH) {
        throw failure(
          GrpcStatus.InvalidArgument,
          'etcdserver: authentication failed, invalid user ID or password',
          true,
        );
      }
      return {};
    });
    const conn = connect(transport, { auth: { username: 'root', password: 'wrong' } });
    const error = await conn.unary(RANGE, { key }, 'read').catch((e: unknown) => e);
    expect((error as EtcdError).code).toBe('AUTH_FAILED');
    expect(transport.calls.filter((c) => c.method !== AUTH)).toHaveLength(0);
    await conn.close();
  });

  it('reports every call to onCall, with attempts and errors', async () => {
    const transport = new ScriptedTransport(() => ({}));
    transport.down.add('127.0.0.1:1');
    const events: Array<[string, number, string | undefined]> = [];
    const conn = connect(transport, {
      hooks: { onCall: (e) => events.push([e.method, e.attempts, e.error?.code]) },
    });
    await conn.unary(RANGE, { key }, 'read');
    expect(events).toEqual([[RANGE.path, 2, undefined]]);
    await conn.close();
  });

  it("reads etcd's \"context deadline exceeded\" after the call's deadline as that deadline, before it as etcd's request timeout", async () => {
    // The answer is read before the client's own deadline timer runs (a busy event loop): the
    // handler holds the loop past the deadline, then fails as etcd does when the grpc-timeout the
    // client sent runs out in a handler (Lock, Election).
    const expired = (ms: number) => () => {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        // Busy: no timer can run.
      }
      throw failure(GrpcStatus.Unknown, 'context deadline exceeded', true);
    };
    const late = connect(new ScriptedTransport(expired(60)));
    const write = await late.unary(PUT, { key }, 'write', { timeoutMs: 20 }).catch((e) => e);
    expect(write).toBeInstanceOf(OutcomeUnknownError);
    expect((write as Error).cause).toBeInstanceOf(DeadlineExceededError);
    const read = await late.unary(RANGE, { key }, 'read', { timeoutMs: 20 }).catch((e) => e);
    expect(read).toBeInstanceOf(DeadlineExceededError);
    await late.close();

    const early = connect(new ScriptedTransport(expired(0)));
    const timedOut = await early
      .unary(PUT, { key }, 'write', { timeoutMs: 10_000 })
      .catch((e) => e);
    expect(timedOut).toBeInstanceOf(OutcomeUnknownError);
    expect((timedOut as Error).cause).toBeInstanceOf(RequestTimeoutError);
    await early.close();
  });

  it("reads a server's reset (Cancelled) after the call's deadline as that deadline, before it as the reset", async () => {
    // grpc-go's server resets a stream whose grpc-timeout ran out (etcd 3.5's Lock service); the
    // reset can be read before the client's own deadline timer runs.
    const reset = (ms: number) => () => {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        // Busy: no timer can run.
      }
      throw failure(GrpcStatus.Cancelled, 'Call cancelled', true);
    };
    const late = connect(new ScriptedTransport(reset(60)));
    const write = await late.unary(PUT, { key }, 'write', { timeoutMs: 20 }).catch((e) => e);
    expect(write).toBeInstanceOf(OutcomeUnknownError);
    expect((write as Error).cause).toBeInstanceOf(DeadlineExceededError);
    await late.close();

    const early = connect(new ScriptedTransport(reset(0)));
    const cancelled = await early
      .unary(RANGE, { key }, 'read', { timeoutMs: 10_000 })
      .catch((e) => e);
    expect(cancelled).not.toBeInstanceOf(DeadlineExceededError);
    expect(cancelled).toMatchObject({ message: expect.stringContaining('Call cancelled') });
    await early.close();
  });

  it('applies the call deadline to the whole call, retries included', async () => {
    const transport = new ScriptedTransport(() => {
      throw failure(GrpcStatus.Unavailable, 'etcdserver: no leader', true);
    });
    const conn = connect(transport, {
      retry: { maxAttempts: 1_000, minDelayMs: 20, maxDelayMs: 20 },
    });
    const started = Date.now();
    await expect(conn.unary(RANGE, { key }, 'read', { timeoutMs: 200 })).rejects.toBeInstanceOf(
      EtcdError,
    );
    // Retrying to the last attempt would take 20 s of pauses alone: 10 s is far from both.
    expect(Date.now() - started).toBeLessThan(10_000);
    await conn.close();
  });
});
