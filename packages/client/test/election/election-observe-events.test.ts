// What a resuming ElectionClient.observe() tells about its stream, on each backend: a lost stream is
// reported once per outage (to onDisconnected and the client's onObserveDisconnect hook) with its
// typed error and the endpoint it was on, its return once (onResumed, onObserveResume) with the new
// endpoint and the number of streams it took; the reopen backoff is the configured one; the
// optional leader check replaces a silent stream that missed a change; and an observation that
// ends (abort, close) leaves no timer, no listener and no registration behind. Faults come from TCP
// proxies in front of the backend (cut, paused) and from the probe (refused reopens), so both
// backends meet the same ones.
import { EmbeddedCluster } from '@etcdkit/server-embedded';
import {
  abortRegistrations,
  describeEachBackend,
  startTcpProxy,
  type TcpProxy,
} from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Rpc } from '../../src/connection/types.js';
import { ElectionClient } from '../../src/election/election.js';
import { ElectionObservers, observeResuming } from '../../src/election/election-observe.js';
import { type ObserveRuntime, SYSTEM_RUNTIME } from '../../src/election/election-observe-check.js';
import type {
  ElectionHooks,
  ObserveDisconnected,
  ObserveResumed,
} from '../../src/election/election-observe-events.js';
import {
  DEFAULT_OBSERVE_SETTINGS,
  observeSettings,
} from '../../src/election/election-observe-options.js';
import {
  AbortedError,
  ClientClosedError,
  DeadlineExceededError,
  ElectionNoLeaderError,
  type EtcdError,
  InvalidArgumentError,
  PermissionDeniedError,
  UnavailableError,
} from '../../src/errors.js';
import { Etcd, type EtcdOptions } from '../../src/etcd.js';
import type { KeyValue } from '../../src/key-value.js';
import type { ServerStream } from '../../src/transport/types.js';
import { waitFor } from '../watch/watch-support.js';
import { ObserveProbe } from './election-observe-support.js';

const targetOf = (proxy: TcpProxy) => `127.0.0.1:${proxy.port}`;
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** Everything an observation reported, through its callbacks and through the client's hooks. */
interface Reports {
  /** onObserveDisconnect */
  readonly disconnects: ObserveDisconnected[];
  /** onObserveResume */
  readonly resumes: ObserveResumed[];
  /** onDisconnected */
  readonly errors: EtcdError[];
  /** onResumed */
  readonly resumed: ObserveResumed[];
  readonly hooks: ElectionHooks;
  readonly callbacks: {
    onDisconnected(error: EtcdError): void;
    onResumed(resumed: ObserveResumed): void;
  };
}

function reports(): Reports {
  const r = {
    disconnects: [] as ObserveDisconnected[],
    resumes: [] as ObserveResumed[],
    errors: [] as EtcdError[],
    resumed: [] as ObserveResumed[],
  };
  return {
    ...r,
    hooks: {
      onObserveDisconnect: (event) => r.disconnects.push(event),
      onObserveResume: (event) => r.resumes.push(event),
    },
    callbacks: {
      onDisconnected: (error) => r.errors.push(error),
      onResumed: (resumed) => r.resumed.push(resumed),
    },
  };
}

/** An iteration running in the background: what it yielded, and how it ended. */
interface Running {
  readonly values: string[];
  readonly ended: Promise<unknown>;
}

function consume(iterable: AsyncIterable<KeyValue>): Running {
  const values: string[] = [];
  const ended = (async () => {
    try {
      for await (const kv of iterable) values.push(kv.text());
      return undefined;
    } catch (error) {
      return error;
    }
  })();
  return { values, ended };
}

/**
 * observeResuming itself (not through ElectionClient.observe) on `rpc`, consumed in the background:
 * for the cases that hand it a probe, a runtime or settings of their own. `observers`: the
 * registry of the client that owns the observation (a fresh one by default).
 */
function consumeResuming(
  rpc: Rpc,
  name: string,
  signal: AbortSignal,
  settings: ReturnType<typeof observeSettings>,
  runtime?: ObserveRuntime,
  observers = new ElectionObservers(),
): Running {
  const request = { name: new TextEncoder().encode(name) };
  return consume({
    [Symbol.asyncIterator]: () =>
      observeResuming(rpc, observers, request, signal, settings, runtime),
  });
}

/** The system's clock and timers, with the timers and pauses still pending counted. */
function countingRuntime(): ObserveRuntime & { timersSet: number; timers: number; sleeps: number } {
  const runtime = {
    ...SYSTEM_RUNTIME,
    timersSet: 0,
    timers: 0,
    sleeps: 0,
    setTimer(callback: () => void, ms: number): unknown {
      runtime.timersSet++;
      runtime.timers++;
      return SYSTEM_RUNTIME.setTimer(() => {
        runtime.timers--;
        callback();
      }, ms);
    },
    clearTimer(timer: unknown): void {
      runtime.timers--;
      SYSTEM_RUNTIME.clearTimer(timer);
    },
    sleep(ms: number, signal: AbortSignal): Promise<void> {
      runtime.sleeps++;
      return SYSTEM_RUNTIME.sleep(ms, signal).finally(() => {
        runtime.sleeps--;
      });
    },
  };
  return runtime;
}

describeEachBackend('ElectionClient.observe reports its outages', ({ backend, prefix }) => {
  let writer: Etcd;
  const proxies: TcpProxy[] = [];
  const clients: Etcd[] = [];
  const controllers: AbortController[] = [];

  async function proxy(): Promise<TcpProxy> {
    const started = await startTcpProxy(backend().endpoints[0]!);
    proxies.push(started);
    return started;
  }

  function client(options: EtcdOptions): Etcd {
    const etcd = new Etcd({ dialTimeoutMs: 1_000, ...options });
    clients.push(etcd);
    return etcd;
  }

  function signal(): AbortSignal {
    const controller = new AbortController();
    controllers.push(controller);
    return controller.signal;
  }

  /** A leader for a fresh election, on a lease revoked after the test. */
  async function elect(name: string, value: string) {
    const lease = await writer.lease.grant(60);
    return writer.election.campaign(name, value, { lease });
  }

  beforeAll(() => {
    writer = new Etcd({ endpoints: [...backend().endpoints] });
  });
  afterAll(async () => {
    await writer?.close();
  });
  afterEach(async () => {
    for (const controller of controllers.splice(0)) controller.abort();
    for (const started of proxies) started.resume();
    await Promise.all(clients.splice(0).map((etcd) => etcd.close()));
    await Promise.all(proxies.splice(0).map((started) => started.close()));
  });

  it('each cut stream is reported once with its UnavailableError and endpoint, each return with the new endpoint', async () => {
    const name = `${prefix()}election`;
    const [a, b] = [await proxy(), await proxy()];
    const r = reports();
    const etcd = client({ endpoints: [a.endpoint, b.endpoint], hooks: r.hooks });
    const one = await elect(name, 'one');
    const running = consume(
      etcd.election.observe(name, {
        signal: signal(),
        minReconnectDelayMs: 20,
        maxReconnectDelayMs: 40,
        ...r.callbacks,
      }),
    );
    await waitFor(() => running.values.length === 1, 10_000, 'the first leader');

    a.cutAll();
    await waitFor(() => r.resumes.length === 1, 10_000, 'the first resumption');
    await writer.election.proclaim(one, 'one-b');
    await waitFor(() => running.values.length === 2, 10_000, 'the proclaim, through B');
    // A's backoff (100-200 ms after its failure) is over: B's failure sends the stream back to A.
    await new Promise((resolve) => setTimeout(resolve, 250));
    b.cutAll();
    await waitFor(() => r.resumes.length === 2, 10_000, 'the second resumption');
    await writer.election.proclaim(one, 'one-c');
    await waitFor(() => running.values.length === 3, 10_000, 'the proclaim, through A');

    expect(running.values).toEqual(['one', 'one-b', 'one-c']);
    expect(r.disconnects.map((d) => [text(d.name), d.endpoint, d.error.code])).toEqual([
      [name, targetOf(a), 'UNAVAILABLE'],
      [name, targetOf(b), 'UNAVAILABLE'],
    ]);
    for (const d of r.disconnects) expect(d.error).toBeInstanceOf(UnavailableError);
    expect(r.resumes.map((e) => [text(e.name), e.endpoint, e.attempts])).toEqual([
      [name, targetOf(b), 1],
      [name, targetOf(a), 1],
    ]);
    for (const e of r.resumes) expect(e.disconnectedMs).toBeGreaterThanOrEqual(0);
    // The observation's own callbacks heard the same, the watch's way: the error, the event.
    expect(r.errors).toEqual(r.disconnects.map((d) => d.error));
    expect(r.resumed).toEqual(r.resumes);
  }, 60_000);

  it('the reopen backoff is the configured one, and failed reopens are one outage', async () => {
    const name = `${prefix()}election`;
    const a = await proxy();
    const etcd = client({ endpoints: [a.endpoint] });
    const probe = new ObserveProbe(etcd.connection);
    const r = reports();
    // Virtual time: a pause only advances the clock; the jitter takes 3/4 of each delay.
    const delays: number[] = [];
    let clock = 1_000;
    const runtime: ObserveRuntime = {
      ...SYSTEM_RUNTIME,
      now: () => clock,
      random: () => 0.5,
      sleep: async (ms) => {
        delays.push(ms);
        clock += ms;
      },
    };
    const settings = observeSettings(
      { minReconnectDelayMs: 40, maxReconnectDelayMs: 100, ...r.callbacks },
      true,
      r.hooks,
    );
    await elect(name, 'one');
    const running = consumeResuming(probe, name, signal(), settings, runtime);
    await waitFor(() => running.values.length === 1, 10_000, 'the first leader');

    const refusals = [1, 2, 3, 4].map(
      (n) => new UnavailableError({ message: `reopen ${n} refused by the test` }),
    );
    probe.refuseNext(...refusals);
    a.cutAll();
    await waitFor(() => r.resumes.length === 1, 10_000, 'the resumption');

    // 40 ms after the stream that had answered, doubling per refused reopen, capped at 100 ms.
    expect(delays).toEqual([30, 60, 75, 75, 75]);
    expect(probe.refused).toBe(4);
    expect(probe.opened).toBe(2);
    expect(r.disconnects).toHaveLength(1);
    expect(r.disconnects[0]!.error).toBeInstanceOf(UnavailableError);
    expect(r.disconnects[0]!.error.code).toBe('UNAVAILABLE');
    expect(refusals).not.toContain(r.disconnects[0]!.error);
    expect(r.disconnects[0]!.endpoint).toBe(targetOf(a));
    expect(r.resumes).toEqual([
      {
        name: new TextEncoder().encode(name),
        endpoint: targetOf(a),
        disconnectedMs: 315,
        attempts: 5,
      },
    ]);
    expect(r.errors).toEqual([r.disconnects[0]!.error]);
    expect(r.resumed).toEqual(r.resumes);
    expect(running.values).toEqual(['one']);
  }, 60_000);

  it('with leaderCheckIntervalMs a silent stream that missed a change is replaced on another endpoint', async () => {
    const name = `${prefix()}election`;
    const [stuck, spare] = [await proxy(), await proxy()];
    const r = reports();
    const etcd = client({ endpoints: [stuck.endpoint, spare.endpoint], hooks: r.hooks });
    const one = await elect(name, 'one');
    const running = consume(
      etcd.election.observe(name, {
        signal: signal(),
        leaderCheckIntervalMs: 300,
        minReconnectDelayMs: 20,
        ...r.callbacks,
      }),
    );
    await waitFor(() => running.values.length === 1, 10_000, 'the first leader, through A');
    // Calls (the checks' Leader reads among them) move to B; the stream stays on A.
    etcd.connection.setEndpoints([spare.endpoint]);
    etcd.connection.setEndpoints([spare.endpoint, stuck.endpoint]);
    await etcd.get(`${prefix()}x`);
    expect(etcd.connection.currentEndpoint).toBe(targetOf(spare));

    // A half-open connection: the stream neither fails nor delivers.
    stuck.pause();
    const latest = await writer.election.proclaim(one, 'one-b');
    await waitFor(() => running.values.length === 2, 20_000, 'the proclaim, on a new stream');

    expect(running.values).toEqual(['one', 'one-b']);
    expect(r.disconnects).toHaveLength(1);
    const { error, endpoint } = r.disconnects[0]!;
    expect(error).toBeInstanceOf(UnavailableError);
    expect(error.message).toBe(
      `the Observe stream did not deliver the election's value of revision ${latest.header.revision} within 300 ms; replacing it`,
    );
    expect(endpoint).toBe(targetOf(stuck));
    expect(r.resumes.map((e) => [e.endpoint, e.attempts])).toEqual([[targetOf(spare), 1]]);
    expect(r.errors).toEqual([error]);
    expect(r.resumed).toEqual(r.resumes);
  }, 60_000);

  it('aborted while waiting to reopen, it leaves no timer, no listener, no registration; without the check it set no timer', async () => {
    const name = `${prefix()}election`;
    const a = await proxy();
    const etcd = client({ endpoints: [a.endpoint] });
    const probe = new ObserveProbe(etcd.connection);
    const runtime = countingRuntime();
    const caller = new AbortController();
    const before = abortRegistrations(caller.signal);
    await elect(name, 'one');
    const settings = observeSettings({ minReconnectDelayMs: 60_000 }, true, undefined);
    const observers = new ElectionObservers();
    const running = consumeResuming(probe, name, caller.signal, settings, runtime, observers);
    await waitFor(() => running.values.length === 1, 10_000, 'the first leader');
    expect(observers.running).toBe(1);
    a.cutAll();
    await waitFor(() => runtime.sleeps === 1, 10_000, 'the pause before the reopen');

    caller.abort();
    expect(await running.ended).toBeInstanceOf(AbortedError);
    expect(runtime.sleeps).toBe(0);
    expect(runtime.timersSet).toBe(0);
    expect(runtime.timers).toBe(0);
    expect(abortRegistrations(caller.signal)).toBe(before);
    expect(observers.running).toBe(0);
    expect(probe.opened).toBe(1);
  }, 60_000);

  it('with the check, closing the client ends it with ClientClosedError and leaves no timer, no listener, no registration', async () => {
    const name = `${prefix()}election`;
    const a = await proxy();
    const etcd = client({ endpoints: [a.endpoint] });
    const runtime = countingRuntime();
    const caller = new AbortController();
    const before = abortRegistrations(caller.signal);
    await elect(name, 'one');
    const settings = observeSettings({ leaderCheckIntervalMs: 60_000 }, true, undefined);
    const { observers } = etcd.election;
    const running = consumeResuming(
      etcd.connection,
      name,
      caller.signal,
      settings,
      runtime,
      observers,
    );
    await waitFor(() => running.values.length === 1, 10_000, 'the first leader');
    expect(runtime.timers).toBe(1);
    expect(observers.running).toBe(1);

    await etcd.close();
    expect(await running.ended).toBeInstanceOf(ClientClosedError);
    expect(runtime.timers).toBe(0);
    expect(runtime.sleeps).toBe(0);
    expect(abortRegistrations(caller.signal)).toBe(before);
    expect(observers.running).toBe(0);
  }, 60_000);
});

describe('ElectionClient.observe with leaderCheckIntervalMs when its member is cut off (simulated cluster)', () => {
  // The testkit's real cluster cannot cut a member off (it kills or freezes one); the proxy test
  // above covers a silent stream on etcd.
  it('without requireLeader, the failed check read replaces the stream, which goes on on another member', async () => {
    const name = 'observe-check/partition';
    const cluster = await EmbeddedCluster.start({ members: 3 });
    const [cut, ...others] = cluster.members;
    const host = (endpoint: string) => new URL(endpoint).host;
    const r = reports();
    const observing = new Etcd({ endpoints: [...cluster.endpoints], hooks: r.hooks });
    const writer = new Etcd({ endpoints: others.map((member) => member.endpoint) });
    const controller = new AbortController();
    try {
      const one = await writer.election.campaign(name, 'one', {
        lease: await writer.lease.grant(60),
      });
      const running = consume(
        observing.election.observe(name, {
          signal: controller.signal,
          leaderCheckIntervalMs: 500,
          minReconnectDelayMs: 20,
        }),
      );
      await waitFor(() => running.values.length === 1, 10_000, 'the first leader');
      expect(observing.connection.currentEndpoint).toBe(host(cut!.endpoint));

      // The stream and the calls are on the cut-off member: its stream says nothing more, and it
      // holds a Leader read (linearizable) past the read's deadline, the check interval.
      cut!.partition();
      await writer.election.proclaim(one, 'one-b');
      await waitFor(() => running.values.length === 2, 20_000, 'the proclaim, from another member');

      expect(running.values).toEqual(['one', 'one-b']);
      expect(r.disconnects).toHaveLength(1);
      const { error, endpoint } = r.disconnects[0]!;
      expect(endpoint).toBe(host(cut!.endpoint));
      expect(error).toBeInstanceOf(UnavailableError);
      expect(error.message).toMatch(
        `the election could not be read through ${host(cut!.endpoint)}, the Observe stream's endpoint (`,
      );
      expect(error.cause).toBeInstanceOf(DeadlineExceededError);
      expect(r.resumes).toHaveLength(1);
      expect(r.resumes[0]!.attempts).toBe(1);
      expect(others.map((member) => host(member.endpoint))).toContain(r.resumes[0]!.endpoint);
      controller.abort();
      expect(await running.ended).toBeInstanceOf(AbortedError);
    } finally {
      controller.abort();
      await observing.close();
      await writer.close();
      await cluster.stop();
    }
  }, 60_000);
});

describe('the leader check when its read fails (scripted connection)', () => {
  const enc = (value: string) => new TextEncoder().encode(value);

  /**
   * An Rpc whose Observe streams answer the leader 'one' and then wait until cancelled, whose
   * Leader reads fail with `readError`, and whose calls go to `calls.endpoint`. With `streamsOn`,
   * its streams tell that endpoint as a Connection's do; without it they tell none.
   */
  function scripted(readError: () => EtcdError, streamsOn?: string) {
    const calls = { endpoint: 'a:2379', opened: 0, reads: 0, redialled: [] as string[] };
    const rpc: Rpc & { readonly currentEndpoint: string } = {
      get currentEndpoint() {
        return calls.endpoint;
      },
      unary: () => {
        calls.reads++;
        return Promise.reject(readError());
      },
      serverStream: <Req, Res>(
        _method: unknown,
        _request: Req,
        _retry: unknown,
        options?: { readonly signal?: AbortSignal },
      ): ServerStream<Res> => {
        calls.opened++;
        // Ends when cancelled or when the caller's signal aborts, as a connection's stream does.
        const ended = new AbortController();
        const end = () => ended.abort();
        options?.signal?.addEventListener('abort', end, { once: true });
        const leader = {
          kv: { key: enc('e/1'), value: enc('one'), createRevision: 5n, modRevision: 5n },
        };
        return {
          endpoint: streamsOn,
          cancel: end,
          async *[Symbol.asyncIterator]() {
            try {
              yield leader as Res;
              await new Promise((_, reject) => {
                const fail = () => reject(new AbortedError());
                if (ended.signal.aborted || options?.signal?.aborted) fail();
                ended.signal.addEventListener('abort', fail, { once: true });
              });
            } finally {
              options?.signal?.removeEventListener('abort', end);
            }
          },
        };
      },
      bidiStream: () => Promise.reject(new Error('no bidi stream expected')),
      redial: (endpoint?: string) => {
        calls.redialled.push(endpoint ?? 'current');
      },
    };
    return { rpc, calls };
  }

  function observe(rpc: Rpc, r: Reports, controller: AbortController): Running {
    const settings = observeSettings(
      { leaderCheckIntervalMs: 20, minReconnectDelayMs: 1, ...r.callbacks },
      true,
      r.hooks,
    );
    return consumeResuming(rpc, 'e', controller.signal, settings);
  }

  it('a failed read judges only a stream on the endpoint calls go to', async () => {
    const { rpc, calls } = scripted(() => new DeadlineExceededError(), 'a:2379');
    // The stream is on A, calls go to B from the start: B's failed reads say nothing about A.
    // (Moving calls to B only once the stream answered raced the first check, 20 ms later: a
    // loaded run could fail a read through A before the move.)
    calls.endpoint = 'b:2379';
    const r = reports();
    const controller = new AbortController();
    const running = observe(rpc, r, controller);
    try {
      await waitFor(() => running.values.length === 1, 10_000, 'the leader, through A');
      const reads = calls.reads;
      await waitFor(() => calls.reads >= reads + 3, 10_000, 'three reads through B');
      expect(calls.opened).toBe(1);
      expect(r.disconnects).toEqual([]);

      // Calls back on A: the next failed read replaces the stream, and A is redialled. As a
      // Connection's redial does, that moves calls off A (to B): the new stream, on A again, is
      // then replaced once, not at every check (reads through A failing every 20 ms replaced it
      // again before a loaded run's checks below).
      const redial = rpc.redial!.bind(rpc);
      rpc.redial = (endpoint) => {
        redial(endpoint);
        calls.endpoint = 'b:2379';
      };
      calls.endpoint = 'a:2379';
      await waitFor(() => r.resumes.length === 1, 10_000, 'the replaced stream');
      expect(calls.opened).toBe(2);
      expect(calls.redialled).toEqual(['a:2379']);
      expect(r.disconnects).toHaveLength(1);
      const { error, endpoint } = r.disconnects[0]!;
      expect(endpoint).toBe('a:2379');
      expect(error).toBeInstanceOf(UnavailableError);
      expect(error.message).toBe(
        "the election could not be read through a:2379, the Observe stream's endpoint (deadline exceeded); replacing the stream",
      );
      expect(error.cause).toBeInstanceOf(DeadlineExceededError);
      expect(running.values).toEqual(['one']);
    } finally {
      controller.abort();
      await running.ended;
    }
  });

  it('a read that finds no candidate, or is refused, replaces nothing', async () => {
    for (const readError of [
      () => new ElectionNoLeaderError(),
      () => new PermissionDeniedError(),
    ]) {
      const { rpc, calls } = scripted(readError);
      const r = reports();
      const controller = new AbortController();
      const running = observe(rpc, r, controller);
      try {
        await waitFor(() => running.values.length === 1, 5_000, 'the leader');
        await waitFor(() => calls.reads >= 3, 5_000, 'three reads');
        expect(calls.opened).toBe(1);
        expect(calls.redialled).toEqual([]);
        expect(r.disconnects).toEqual([]);
      } finally {
        controller.abort();
        expect(await running.ended).toBeInstanceOf(AbortedError);
      }
    }
  });
});

describe('ElectionClient.observe options', () => {
  const refused: Rpc = {
    unary: () => Promise.reject(new Error('no call expected')),
    serverStream: () => {
      throw new Error('no stream expected');
    },
    bidiStream: () => Promise.reject(new Error('no stream expected')),
  };
  const election = new ElectionClient(refused);

  it.each([
    [
      { minReconnectDelayMs: 0 },
      'options.minReconnectDelayMs must be a positive number of ms, got 0',
    ],
    [
      { maxReconnectDelayMs: '5s' },
      'options.maxReconnectDelayMs must be a positive number of ms, got 5s',
    ],
    [
      { minReconnectDelayMs: 500, maxReconnectDelayMs: 100 },
      'options.minReconnectDelayMs (500) must not exceed options.maxReconnectDelayMs (100)',
    ],
    [
      { leaderCheckIntervalMs: -1 },
      'options.leaderCheckIntervalMs must be a positive number of ms, got -1',
    ],
    [{ onResumed: 'log' }, 'options.onResumed must be a function, got string'],
    [
      { resume: false, leaderCheckIntervalMs: 1_000 },
      'options.leaderCheckIntervalMs applies only to a resuming observation',
    ],
    [
      { resume: false, onDisconnected: 'a function' },
      'options.onDisconnected applies only to a resuming observation',
    ],
  ])('%j is refused before anything is sent', (options, message) => {
    expect(() => election.observe('e', options as never)).toThrow(
      new InvalidArgumentError(message),
    );
  });

  it('the defaults are the watch stream defaults: 100 ms doubling up to 5 s, no check, no callbacks', () => {
    expect(observeSettings({}, true, undefined)).toEqual(DEFAULT_OBSERVE_SETTINGS);
    expect(DEFAULT_OBSERVE_SETTINGS).toEqual({
      backoff: { baseMs: 100, maxMs: 5_000 },
      leaderCheckIntervalMs: undefined,
      onDisconnected: undefined,
      onResumed: undefined,
      hooks: undefined,
    });
    // One bound given: the other follows it when the default would contradict it.
    expect(observeSettings({ maxReconnectDelayMs: 50 }, true, undefined).backoff).toEqual({
      baseMs: 50,
      maxMs: 50,
    });
    expect(observeSettings({ minReconnectDelayMs: 9_000 }, true, undefined).backoff).toEqual({
      baseMs: 9_000,
      maxMs: 9_000,
    });
  });
});
