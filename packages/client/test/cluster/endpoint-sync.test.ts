// Endpoint discovery: Connection.setEndpoints (against a scripted transport, so every branch is
// deterministic), Etcd.syncEndpoints and the autoSyncIntervalMs timer (scripted, then on both
// backends), and a real 3-member cluster a client given one member's URL survives that member's loss.
import { fileURLToPath } from 'node:url';
import { EmbeddedCluster } from '@etcdkit/server-embedded';
import {
  describeEachBackend,
  describeRealEtcd,
  type EtcdCluster,
  type EtcdProcess,
  makeTestCertificates,
  runModuleScript,
  startEtcd,
  startEtcdCluster,
  type TestCertificates,
} from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Member } from '../../src/cluster/cluster.js';
import { type EndpointSyncEvent, memberEndpoints } from '../../src/cluster/endpoint-sync.js';
import { Connection } from '../../src/connection/connection.js';
import type { EndpointSwitchEvent } from '../../src/connection/options.js';
import {
  ClientClosedError,
  InvalidConfigError,
  NoMemberEndpointsError,
  UnavailableError,
} from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import {
  etcdserverpb_Auth,
  etcdserverpb_Cluster,
  etcdserverpb_KV,
  type MethodDescriptor,
} from '../../src/generated/methods.js';
import { selectTransport } from '../../src/transport/select.js';
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
import { AUTH_BACKENDS, enableAuth, ROOT_PASSWORD, startAuthServer } from '../auth-servers.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const RANGE = etcdserverpb_KV.Range;
const MEMBER_LIST = etcdserverpb_Cluster.MemberList.path;

/** One unary call a fake channel received. */
interface FakeCall {
  readonly target: string;
  readonly method: string;
  readonly metadata: Metadata;
}

/**
 * A transport whose channels answer unary calls with `answer(target, method)`, and record what
 * was opened, closed and called.
 */
class FakeTransport implements Transport {
  readonly name = 'fake';
  readonly opened: string[] = [];
  readonly closed: string[] = [];
  readonly calls: FakeCall[] = [];

  constructor(public answer: (target: string, method: string) => unknown) {}

  open(options: ChannelOptions): Channel {
    const { target } = options;
    this.opened.push(target);
    let state: ChannelState = 'idle';
    const calls = this.calls;
    const closed = this.closed;
    const answer = (method: string) => this.answer(target, method);
    const channel: Channel = {
      target,
      state: () => state,
      async ready() {
        await Promise.resolve();
        if (state === 'closed') {
          throw new TransportError({
            code: GrpcStatus.Unavailable,
            details: `channel to ${target} is closed`,
            metadata: {},
            sent: false,
          });
        }
        state = 'ready';
      },
      async unary<Req, Res>(
        method: MethodDescriptor<Req, Res, 'unary'>,
        _request: Req,
        callOptions: ChannelCallOptions,
      ): Promise<Res> {
        calls.push({ target, method: method.path, metadata: callOptions.metadata ?? {} });
        return (await answer(method.path)) as Res;
      },
      serverStream<Res>(): ServerStream<Res> {
        throw new Error('not scripted');
      },
      bidiStream<Req, Res>(): BidiStream<Req, Res> {
        throw new Error('not scripted');
      },
      close() {
        state = 'closed';
        closed.push(target);
      },
    };
    return channel;
  }
}

/** A promise and the function that resolves it. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Collects hook events; `count(n)` resolves once n have arrived. */
function recorder<E>() {
  const events: E[] = [];
  let wake: (() => void) | undefined;
  return {
    events,
    hook: (event: E) => {
      events.push(event);
      wake?.();
    },
    count: (n: number) =>
      new Promise<E[]>((resolve) => {
        const check = () => {
          if (events.length >= n) resolve(events.slice(0, n));
          else wake = check;
        };
        check();
      }),
  };
}

/** A MemberList answer in the protocol's shape. */
function memberListAnswer(
  members: ReadonlyArray<{ name: string; clientURLs: string[]; isLearner?: boolean }>,
) {
  return {
    header: { clusterId: 1n, memberId: 1n, revision: 0n, raftTerm: 2n },
    members: members.map((m, i) => ({
      ID: BigInt(i + 1),
      name: m.name,
      peerURLs: [`http://127.0.0.1:${2380 + i}`],
      clientURLs: m.clientURLs,
      isLearner: m.isLearner ?? false,
    })),
  };
}

const A = 'http://127.0.0.1:1';
const B = 'http://127.0.0.1:2';
const C = 'http://127.0.0.1:3';

describe('Connection.setEndpoints', () => {
  function connect(transport: Transport, switches?: (event: EndpointSwitchEvent) => void) {
    return new Connection({
      endpoints: [A, B],
      transport,
      retry: { minDelayMs: 1, maxDelayMs: 5, jitter: false },
      hooks: { onEndpointSwitch: switches },
    });
  }

  const bad: Array<[string, string[], RegExp]> = [
    ['an empty list', [], /endpoints must be a non-empty array of URLs/],
    ['a malformed URL', [B, 'http://a b:1'], /invalid endpoint "http:\/\/a b:1"/],
    ['a URL without port', ['http://127.0.0.1'], /missing port/],
    ['an unsupported scheme', ['ftp://etcd:1'], /unsupported scheme "ftp"/],
    ['mixed http and https', [B, 'https://127.0.0.1:4'], /endpoints mix http and https/],
    [
      'https for an http client',
      ['https://127.0.0.1:4'],
      /endpoints use https but the client was created for http/,
    ],
  ];
  it.each(bad)(
    'rejects %s with InvalidConfigError and changes nothing',
    async (_, list, message) => {
      const transport = new FakeTransport(() => ({}));
      const conn = connect(transport);
      try {
        await conn.unary(RANGE, { key: bytes('k') }, 'read');
        const set = () => conn.setEndpoints(list);
        expect(set).toThrow(InvalidConfigError);
        expect(set).toThrow(message);
        expect(conn.endpoints).toEqual([A, B]);
        await conn.unary(RANGE, { key: bytes('k') }, 'read');
        expect(transport.calls.map((c) => c.target)).toEqual(['127.0.0.1:1', '127.0.0.1:1']);
        expect(transport.opened).toEqual(['127.0.0.1:1']);
        expect(transport.closed).toEqual([]);
      } finally {
        await conn.close();
      }
    },
  );

  it('rejects an http list for an https client: the scheme is fixed', () => {
    const conn = new Connection({
      endpoints: ['https://127.0.0.1:4'],
      transport: new FakeTransport(() => ({})),
    });
    expect(() => conn.setEndpoints([A])).toThrow(
      'endpoints use http but the client was created for https; the scheme cannot change',
    );
    expect(conn.endpoints).toEqual(['https://127.0.0.1:4']);
    return conn.close();
  });

  it('normalises the URLs and drops duplicates', async () => {
    const conn = connect(new FakeTransport(() => ({})));
    conn.setEndpoints(['127.0.0.1:3', C, 'HTTP://127.0.0.1:2/', B]);
    expect(conn.endpoints).toEqual([C, B]);
    await conn.close();
  });

  it('throws ClientClosedError after close()', async () => {
    const conn = connect(new FakeTransport(() => ({})));
    await conn.close();
    expect(() => conn.setEndpoints([C])).toThrow(ClientClosedError);
  });

  it('keeps the current endpoint and its channel when it is still listed', async () => {
    const transport = new FakeTransport(() => ({}));
    const switches = recorder<EndpointSwitchEvent>();
    const conn = connect(transport, switches.hook);
    try {
      await conn.unary(RANGE, { key: bytes('k') }, 'read');
      conn.setEndpoints([C, A]);
      expect(conn.endpoints).toEqual([C, A]);
      expect(conn.currentEndpoint).toBe('127.0.0.1:1');
      await conn.unary(RANGE, { key: bytes('k') }, 'read');
      expect(transport.calls.map((c) => c.target)).toEqual(['127.0.0.1:1', '127.0.0.1:1']);
      expect(transport.opened).toEqual(['127.0.0.1:1']);
      expect(transport.closed).toEqual([]);
      expect(switches.events).toEqual([]);
    } finally {
      await conn.close();
    }
  });

  it('moves the next call to the first listed endpoint when the current one is dropped', async () => {
    const transport = new FakeTransport(() => ({}));
    const switches = recorder<EndpointSwitchEvent>();
    const conn = connect(transport, switches.hook);
    try {
      await conn.unary(RANGE, { key: bytes('k') }, 'read');
      conn.setEndpoints([B, C]);
      // Nothing used A's channel any more: closed at once.
      expect(transport.closed).toEqual(['127.0.0.1:1']);
      expect(conn.currentEndpoint).toBe('127.0.0.1:2');
      await conn.unary(RANGE, { key: bytes('k') }, 'read');
      expect(transport.calls.map((c) => c.target)).toEqual(['127.0.0.1:1', '127.0.0.1:2']);
      expect(switches.events).toEqual([{ from: '127.0.0.1:1', to: '127.0.0.1:2' }]);
    } finally {
      await conn.close();
    }
  });

  it('lets a call in flight on a dropped endpoint finish, then closes its channel', async () => {
    const blocked = deferred<unknown>();
    const transport = new FakeTransport((target) =>
      target === '127.0.0.1:1' ? blocked.promise : { count: 7n },
    );
    const conn = connect(transport);
    try {
      const inFlight = conn.unary(RANGE, { key: bytes('k') }, 'read');
      await vi.waitFor(() => expect(transport.calls).toHaveLength(1), { timeout: 10_000 });
      conn.setEndpoints([B]);
      expect(transport.closed).toEqual([]);
      // New calls go to B meanwhile.
      expect(await conn.unary(RANGE, { key: bytes('k') }, 'read')).toEqual({ count: 7n });
      blocked.resolve({ count: 1n });
      expect(await inFlight).toEqual({ count: 1n });
      expect(transport.closed).toEqual(['127.0.0.1:1']);
      expect(transport.calls.map((c) => c.target)).toEqual(['127.0.0.1:1', '127.0.0.1:2']);
    } finally {
      await conn.close();
    }
  });

  it('gives a dropped endpoint listed again its channel back while it is still in use', async () => {
    const blocked = deferred<unknown>();
    const transport: FakeTransport = new FakeTransport((target) =>
      target === '127.0.0.1:1' && transport.calls.length === 1 ? blocked.promise : {},
    );
    const switches = recorder<EndpointSwitchEvent>();
    const conn = connect(transport, switches.hook);
    try {
      const inFlight = conn.unary(RANGE, { key: bytes('k') }, 'read');
      await vi.waitFor(() => expect(transport.calls).toHaveLength(1), { timeout: 10_000 });
      conn.setEndpoints([B]);
      conn.setEndpoints([A]);
      blocked.resolve({});
      await inFlight;
      await conn.unary(RANGE, { key: bytes('k') }, 'read');
      expect(transport.calls.map((c) => c.target)).toEqual(['127.0.0.1:1', '127.0.0.1:1']);
      expect(transport.opened).toEqual(['127.0.0.1:1']);
      expect(transport.closed).toEqual([]);
      // Calls never left A: no switch to report.
      expect(switches.events).toEqual([]);
    } finally {
      await conn.close();
    }
    expect(transport.closed).toEqual(['127.0.0.1:1']);
  });

  it('fails over across the new list only', async () => {
    const transport = new FakeTransport((target) => {
      if (target === '127.0.0.1:3') {
        throw new TransportError({
          code: GrpcStatus.Unavailable,
          details: 'connection refused',
          metadata: {},
          sent: false,
        });
      }
      return {};
    });
    const conn = connect(transport);
    try {
      conn.setEndpoints([C, B]);
      await conn.unary(RANGE, { key: bytes('k') }, 'read');
      expect(transport.calls.map((c) => c.target)).toEqual(['127.0.0.1:3', '127.0.0.1:2']);
    } finally {
      await conn.close();
    }
  });
});

describe('memberEndpoints', () => {
  const member = (name: string, clientUrls: string[], isLearner = false): Member => ({
    id: 1n,
    name,
    peerUrls: [],
    clientUrls,
    isLearner,
  });

  it('takes the client URLs of started voting members, in member order, normalised, once', () => {
    const members = [
      member('m1', ['http://10.0.0.1:2379', 'http://10.0.0.1:22379']),
      member('', []), // added, not started
      member('learner', ['http://10.0.0.4:2379'], true),
      member('m2', ['HTTP://10.0.0.2:2379/', 'http://10.0.0.1:2379']),
    ];
    expect(memberEndpoints(members, false)).toEqual({
      endpoints: ['http://10.0.0.1:2379', 'http://10.0.0.1:22379', 'http://10.0.0.2:2379'],
      ignored: [],
    });
  });

  it('keeps the client scheme and reports the URLs it cannot use', () => {
    const members = [
      member('m1', ['https://10.0.0.1:2379', 'http://10.0.0.1:2380']),
      member('m2', ['unix://localhost:1', 'https://[::1]:2379']),
    ];
    expect(memberEndpoints(members, true)).toEqual({
      endpoints: ['https://10.0.0.1:2379', 'https://[::1]:2379'],
      ignored: ['http://10.0.0.1:2380', 'unix://localhost:1'],
    });
  });
});

describe('Etcd.syncEndpoints and autoSyncIntervalMs (scripted)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('replaces the endpoints with the started voting members, reported to the hook', async () => {
    const transport = new FakeTransport((_, method) =>
      method === MEMBER_LIST
        ? memberListAnswer([
            { name: 'a', clientURLs: [A] },
            { name: 'c', clientURLs: [C, 'https://127.0.0.1:13'] },
            { name: '', clientURLs: [] },
            { name: 'l', clientURLs: ['http://127.0.0.1:14'], isLearner: true },
          ])
        : {},
    );
    const syncs = recorder<EndpointSyncEvent>();
    const etcd = new Etcd({ endpoints: [A, B], transport, hooks: { onEndpointSync: syncs.hook } });
    try {
      const result = await etcd.syncEndpoints();
      expect(result).toEqual({
        endpoints: [A, C],
        previous: [A, B],
        changed: true,
        ignored: ['https://127.0.0.1:13'],
      });
      expect(etcd.connection.endpoints).toEqual([A, C]);
      expect(syncs.events).toEqual([{ auto: false, result }]);
      // The same set again, in another order: nothing changes, the client's order stays.
      transport.answer = () =>
        memberListAnswer([
          { name: 'c', clientURLs: [C] },
          { name: 'a', clientURLs: [A] },
        ]);
      expect(await etcd.syncEndpoints()).toEqual({
        endpoints: [A, C],
        previous: [A, C],
        changed: false,
        ignored: [],
      });
    } finally {
      await etcd.close();
    }
  });

  it('keeps the endpoints and rejects with NoMemberEndpointsError when no member is usable', async () => {
    const transport = new FakeTransport(() =>
      memberListAnswer([
        { name: '', clientURLs: [] },
        { name: 'l', clientURLs: [C], isLearner: true },
      ]),
    );
    const syncs = recorder<EndpointSyncEvent>();
    const etcd = new Etcd({ endpoints: [A, B], transport, hooks: { onEndpointSync: syncs.hook } });
    try {
      const error = await etcd.syncEndpoints().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NoMemberEndpointsError);
      expect(error).toMatchObject({
        code: 'NO_MEMBER_ENDPOINTS',
        message: 'endpoint sync: no started voting member among 2; endpoints unchanged',
      });
      expect(etcd.connection.endpoints).toEqual([A, B]);
      expect(syncs.events).toEqual([{ auto: false, error }]);

      transport.answer = () =>
        memberListAnswer([{ name: 's', clientURLs: ['https://127.0.0.1:13'] }]);
      await expect(etcd.syncEndpoints()).rejects.toThrow(
        'endpoint sync: no http client URL among 1 started voting members (ignored: https://127.0.0.1:13); endpoints unchanged',
      );
      expect(etcd.connection.endpoints).toEqual([A, B]);
    } finally {
      await etcd.close();
    }
  });

  it('sends MemberList with the client credentials', async () => {
    const transport = new FakeTransport((_, method) =>
      method === etcdserverpb_Auth.Authenticate.path
        ? { token: 'tok.1' }
        : memberListAnswer([{ name: 'c', clientURLs: [C] }]),
    );
    const etcd = new Etcd({ endpoints: [A], transport, auth: { username: 'u', password: 'p' } });
    try {
      await etcd.syncEndpoints();
      expect(transport.calls.map((c) => [c.method, c.metadata])).toEqual([
        [etcdserverpb_Auth.Authenticate.path, {}],
        [MEMBER_LIST, { token: 'tok.1' }],
      ]);
    } finally {
      await etcd.close();
    }
  });

  it('rejects a bad autoSyncIntervalMs with InvalidConfigError', () => {
    for (const value of [-1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31]) {
      expect(() => new Etcd({ endpoints: [A], autoSyncIntervalMs: value })).toThrow(
        /autoSyncIntervalMs must be 0 \(off\) or a positive number of ms/,
      );
    }
  });

  it('syncs every interval; a failed sync is reported and retried; close() stops it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const answers: unknown[] = [
      memberListAnswer([]), // fails: nobody listed
      memberListAnswer([{ name: 'c', clientURLs: [C] }]),
    ];
    const transport = new FakeTransport((_, method) => {
      if (method !== MEMBER_LIST) return {};
      const next = answers.shift();
      if (next === undefined) throw new Error('no more answers scripted');
      return next;
    });
    const syncs = recorder<EndpointSyncEvent>();
    const etcd = new Etcd({
      endpoints: [A, B],
      transport,
      autoSyncIntervalMs: 1_000,
      hooks: { onEndpointSync: syncs.hook },
    });
    try {
      await vi.advanceTimersByTimeAsync(999);
      expect(syncs.events).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      const [failed] = await syncs.count(1);
      expect(failed).toEqual({ auto: true, error: expect.any(NoMemberEndpointsError) });
      expect(etcd.connection.endpoints).toEqual([A, B]);
      await vi.advanceTimersByTimeAsync(1_000);
      const [, synced] = await syncs.count(2);
      expect(synced).toEqual({
        auto: true,
        result: { endpoints: [C], previous: [A, B], changed: true, ignored: [] },
      });
      expect(etcd.connection.endpoints).toEqual([C]);
    } finally {
      await etcd.close();
    }
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(syncs.events).toHaveLength(2);
    expect(transport.calls.filter((c) => c.method === MEMBER_LIST)).toHaveLength(2);
  });

  it('never keeps the process alive: a client with auto sync left open exits by itself', async () => {
    const etcdModule = fileURLToPath(new URL('../../src/etcd.ts', import.meta.url));
    const script = `
      import { Etcd } from ${JSON.stringify(etcdModule)};
      const etcd = new Etcd({ endpoints: ['http://127.0.0.1:1'], autoSyncIntervalMs: 60_000 });
      console.log('created', etcd.connection.endpoints.join(','));
    `;
    const stdout = await runModuleScript(script, { timeoutMs: 30_000 });
    expect(stdout.trim()).toBe('created http://127.0.0.1:1');
  });
});

describeEachBackend('endpoint sync against one member', ({ backend }) => {
  it('yields exactly the member advertised client URL, and calls go on through it', async () => {
    const [endpoint] = backend().endpoints;
    const dead = 'http://127.0.0.1:1';
    const etcd = new Etcd({ endpoints: [dead, endpoint!], dialTimeoutMs: 2_000 });
    try {
      const result = await etcd.syncEndpoints();
      expect(result).toEqual({
        endpoints: [endpoint],
        previous: [dead, endpoint],
        changed: true,
        ignored: [],
      });
      expect(etcd.connection.endpoints).toEqual([endpoint]);
      expect(etcd.connection.currentEndpoint).toBe(new URL(endpoint!).host);
      await etcd.put('sync/one', 'v');
      expect((await etcd.get('sync/one'))?.text()).toBe('v');
      expect(await etcd.syncEndpoints()).toEqual({
        endpoints: [endpoint],
        previous: [endpoint],
        changed: false,
        ignored: [],
      });
    } finally {
      await etcd.close();
    }
  });
});

describeEachBackend(
  'endpoint sync with auth on',
  ({ name }) => {
    let server: Awaited<ReturnType<typeof startAuthServer>>;
    beforeAll(async () => {
      server = await startAuthServer(name);
      await enableAuth(server.endpoint);
    });
    afterAll(async () => {
      await server?.stop();
    });

    it('lists the members with the client token', async () => {
      const sent: Array<[string, string | undefined]> = [];
      const grpc = selectTransport(undefined);
      // The real transport, recording the token each unary call carries.
      const transport: Transport = {
        name: 'recording',
        open(options) {
          const channel = grpc.open(options);
          return new Proxy(channel, {
            get(target, property, receiver) {
              if (property !== 'unary') {
                const value: unknown = Reflect.get(target, property, receiver);
                return typeof value === 'function' ? value.bind(target) : value;
              }
              return (method: { path: string }, request: unknown, call: ChannelCallOptions) => {
                sent.push([method.path, call.metadata?.token === undefined ? undefined : 'token']);
                return target.unary(method as never, request, call);
              };
            },
          });
        },
      };
      const etcd = new Etcd({
        endpoints: [...server.endpoints, 'http://127.0.0.1:1'],
        transport,
        auth: { username: 'root', password: ROOT_PASSWORD },
      });
      try {
        expect((await etcd.syncEndpoints()).endpoints).toEqual([server.endpoint]);
        expect(sent).toEqual([
          [etcdserverpb_Auth.Authenticate.path, undefined],
          [MEMBER_LIST, 'token'],
        ]);
      } finally {
        await etcd.close();
      }
    });
  },
  { only: AUTH_BACKENDS },
);

describeRealEtcd('endpoint sync over TLS', () => {
  let certs: TestCertificates;
  let etcd: EtcdProcess;
  beforeAll(async () => {
    certs = await makeTestCertificates();
    etcd = await startEtcd({ tls: certs.etcdTls({ clientCertAuth: true }) });
  });
  afterAll(async () => {
    await etcd?.stop();
    await certs?.remove();
  });

  it('takes the https URL the member advertises and reaches it with the client TLS settings', async () => {
    expect(etcd.endpoint).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const byName = `https://localhost:${etcd.clientPort}`;
    const client = new Etcd({ endpoints: [byName], tls: certs.clientTls });
    try {
      expect(await client.syncEndpoints()).toEqual({
        endpoints: [etcd.endpoint],
        previous: [byName],
        changed: true,
        ignored: [],
      });
      await client.put('sync/tls', 'v');
      expect((await client.get('sync/tls'))?.text()).toBe('v');
      expect(client.connection.currentEndpoint).toBe(`127.0.0.1:${etcd.clientPort}`);
    } finally {
      await client.close();
    }
  });
});

/** A member a test can stop and start again. */
interface StoppableMember {
  readonly endpoint: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** What the 3-member tests need of a cluster, real or simulated. */
interface TestCluster {
  readonly endpoints: readonly string[];
  /** A member that does not lead, so that stopping it does not also start an election. */
  follower(): Promise<StoppableMember>;
  stop(): Promise<void>;
}

/** The 3-member tests, declared inside a suite of `start`'s kind of cluster. */
function threeMemberTests(start: () => Promise<TestCluster>): void {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await start();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('a client given one member finds the others, then survives that member being stopped', async () => {
    const only = await cluster.follower();
    const etcd = new Etcd({ endpoints: [only.endpoint], dialTimeoutMs: 1_000 });
    try {
      const result = await etcd.syncEndpoints();
      expect(result.changed).toBe(true);
      expect(result.previous).toEqual([only.endpoint]);
      expect([...result.endpoints].sort()).toEqual([...cluster.endpoints].sort());
      expect(etcd.connection.currentEndpoint).toBe(new URL(only.endpoint).host);
      await etcd.put('sync/cluster', 'before');

      await only.stop();
      expect((await etcd.get('sync/cluster'))?.text()).toBe('before');
      expect(etcd.connection.currentEndpoint).not.toBe(new URL(only.endpoint).host);
      await etcd.put('sync/cluster', 'after');
      expect((await etcd.get('sync/cluster'))?.text()).toBe('after');

      // Without the sync, the same client would have had nowhere to go.
      const unsynced = new Etcd({
        endpoints: [only.endpoint],
        dialTimeoutMs: 500,
        retry: { maxAttempts: 1 },
      });
      try {
        await expect(unsynced.get('sync/cluster')).rejects.toBeInstanceOf(UnavailableError);
      } finally {
        await unsynced.close();
      }
    } finally {
      await etcd.close();
      await only.start();
    }
  });

  it('autoSyncIntervalMs discovers the members in the background', async () => {
    const syncs = recorder<EndpointSyncEvent>();
    const [first] = cluster.endpoints;
    const etcd = new Etcd({
      endpoints: [first!],
      autoSyncIntervalMs: 50,
      hooks: { onEndpointSync: syncs.hook },
    });
    try {
      const [event] = await syncs.count(1);
      expect(event?.auto).toBe(true);
      expect(event?.error).toBeUndefined();
      expect(event?.result?.previous).toEqual([first]);
      expect([...(event?.result?.endpoints ?? [])].sort()).toEqual([...cluster.endpoints].sort());
      expect([...etcd.connection.endpoints].sort()).toEqual([...cluster.endpoints].sort());
    } finally {
      await etcd.close();
    }
  });
}

describeRealEtcd('endpoint sync on a 3-member cluster', () => {
  threeMemberTests(async () => {
    const cluster: EtcdCluster = await startEtcdCluster({ members: 3 });
    return {
      endpoints: cluster.endpoints,
      follower: async () => {
        const leader = await cluster.waitForLeader();
        const member = cluster.members.find((m) => m !== leader)!;
        return {
          endpoint: member.endpoint,
          stop: () => member.kill(),
          start: () => member.start(),
        };
      },
      stop: () => cluster.stop(),
    };
  });
});

describe('endpoint sync on a 3-member cluster [backend: embedded cluster]', () => {
  threeMemberTests(async () => {
    const cluster = await EmbeddedCluster.start({ members: 3 });
    return {
      endpoints: cluster.endpoints,
      follower: async () => cluster.members.find((m) => !m.isLeader)!,
      stop: () => cluster.stop(),
    };
  });
});
