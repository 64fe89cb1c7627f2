// A member cut off from its cluster's leader answers every require-leader call and stream with
// Unavailable "etcdserver: no leader", and ends the require-leader streams it has open with that
// status. The client must then move to another endpoint instead of asking the same member again:
// unary reads through the retry policy, the watch stream and the lease keepalive stream through the
// connection, which puts the endpoint of a stream that failed with Unavailable in backoff.
//
// One embedded server listening on two URLs stands in for two members: the URL the client uses
// first refuses a stream or call once ("no leader" as it opens, server.faults.failNext), or the test
// transport ends a stream open on it with the status etcd sends (a member that loses its leader
// later). Everything else is served for real, so events and keepalives are the server's. Then the
// same on a simulated cluster (EmbeddedCluster), where partitioning the member the client uses is
// what refuses and ends its require-leader streams.
import { EmbeddedCluster, EmbeddedEtcd, GrpcCode } from '@etcdkit/server-embedded';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EtcdError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import type { LeaseKeepAliveEvent } from '../../src/lease/lease-events.js';
import { selectTransport } from '../../src/transport/select.js';
import {
  type BidiStream,
  type Channel,
  type ChannelOptions,
  GrpcStatus,
  type Transport,
  TransportError,
} from '../../src/transport/types.js';
import type { WatchBatch } from '../../src/watch/types.js';
import type { Watcher } from '../../src/watch/watcher.js';

const WATCH = '/etcdserverpb.Watch/Watch';
const KEEPALIVE = '/etcdserverpb.Lease/LeaseKeepAlive';
const RANGE = '/etcdserverpb.KV/Range';
const NO_LEADER = 'etcdserver: no leader';

/** One call or stream the transport carried. */
interface Carried {
  readonly target: string;
  readonly path: string;
}

/** A bidi stream the transport can end as a server would. */
interface OpenStream extends Carried {
  /** Ends the stream with `failure`, as if the server had sent that status. */
  fail(failure: TransportError): void;
}

/**
 * The default transport (or ETCDKIT_TEST_TRANSPORT's), recording which endpoint every unary call
 * and bidi stream went to, and able to end the open streams of one endpoint with a status.
 */
class RecordingTransport implements Transport {
  readonly name = 'recording';
  readonly carried: Carried[] = [];
  readonly #inner = selectTransport(undefined);
  readonly #open = new Set<OpenStream>();

  /** The endpoints (`host:port`) calls or streams of `path` went to, in order. */
  targets(path: string): string[] {
    return this.carried.filter((c) => c.path === path).map((c) => c.target);
  }

  /** Ends every open stream of `path` on `target` with `failure`; returns how many. */
  failStreams(path: string, target: string, failure: TransportError): number {
    const matching = [...this.#open].filter((s) => s.path === path && s.target === target);
    for (const stream of matching) stream.fail(failure);
    return matching.length;
  }

  open(options: ChannelOptions): Channel {
    const channel = this.#inner.open(options);
    const target = channel.target;
    return {
      target,
      state: () => channel.state(),
      ready: (deadline, signal) => channel.ready(deadline, signal),
      unary: (method, request, callOptions) => {
        this.carried.push({ target, path: method.path });
        return channel.unary(method, request, callOptions);
      },
      serverStream: (method, request, callOptions) =>
        channel.serverStream(method, request, callOptions),
      bidiStream: (method, callOptions) => {
        this.carried.push({ target, path: method.path });
        return this.#track(target, method.path, channel.bidiStream(method, callOptions));
      },
      close: () => channel.close(),
    };
  }

  #track<Req, Res>(
    target: string,
    path: string,
    stream: BidiStream<Req, Res>,
  ): BidiStream<Req, Res> {
    let failure: TransportError | undefined;
    let reject: (error: TransportError) => void = () => undefined;
    const failed = new Promise<never>((_, r) => {
      reject = r;
    });
    failed.catch(() => undefined);
    const record: OpenStream = {
      target,
      path,
      fail: (error) => {
        if (failure) return;
        failure = error;
        this.#open.delete(record);
        reject(error);
        stream.cancel();
      },
    };
    this.#open.add(record);
    const iterator = stream[Symbol.asyncIterator]();
    const forget = () => this.#open.delete(record);
    return {
      write: (request) => {
        if (failure) throw failure;
        stream.write(request);
      },
      end: () => stream.end(),
      cancel: () => {
        forget();
        stream.cancel();
      },
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          try {
            const result = await Promise.race([failed, iterator.next()]);
            if (result.done) forget();
            return result;
          } catch (error) {
            forget();
            throw error;
          }
        },
        return: async () => {
          forget();
          return (await iterator.return?.()) ?? { done: true, value: undefined };
        },
      }),
    };
  }
}

/** The status etcd ends require-leader streams with when its member loses the leader. */
function noLeader(): TransportError {
  return new TransportError({
    code: GrpcStatus.Unavailable,
    details: NO_LEADER,
    metadata: {},
    sent: true,
  });
}

/** Resolves once `condition` holds, polling; fails after `timeoutMs`. */
async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** What a watcher delivered, one `revision key=value` line per event, and why it disconnected. */
function record(watcher: Watcher): { lines: string[]; disconnects: EtcdError[] } {
  const lines: string[] = [];
  const disconnects: EtcdError[] = [];
  watcher.on('batch', (batch: WatchBatch) => {
    for (const event of batch.events) {
      lines.push(`${batch.revision} ${event.kv.keyText()}=${event.kv.text()}`);
    }
  });
  watcher.on('disconnected', (error) => disconnects.push(error));
  return { lines, disconnects };
}

/** `host:port` of an `http://host:port` URL, as the connection reports endpoints. */
function targetOf(url: string): string {
  return new URL(url).host;
}

describe('failover after "etcdserver: no leader" (one embedded server on two URLs)', () => {
  let server: EmbeddedEtcd;
  let transport: RecordingTransport;
  let etcd: Etcd;
  let first: string;
  let second: string;

  beforeEach(async () => {
    server = await EmbeddedEtcd.start({
      listenClientUrls: ['http://127.0.0.1:0', 'http://127.0.0.1:0'],
      minLeaseTtl: 1,
    });
    expect(server.endpoints).toHaveLength(2);
    first = targetOf(server.endpoints[0]!);
    second = targetOf(server.endpoints[1]!);
    transport = new RecordingTransport();
    etcd = new Etcd({
      endpoints: [...server.endpoints],
      requireLeader: true,
      transport,
      watch: { maxReconnectDelayMs: 100 },
    });
  });
  afterEach(async () => {
    server.faults.clear();
    await etcd.close();
    await server.stop();
  });

  it('a read answered "no leader" is retried on the other endpoint', async () => {
    const put = await etcd.put('k', 'v');
    server.faults.failNext('Range', { code: GrpcCode.UNAVAILABLE, message: NO_LEADER });
    const kv = await etcd.get('k');
    expect(kv?.text()).toBe('v');
    expect(kv?.modRevision).toBe(put.header.revision);
    expect(transport.targets(RANGE)).toEqual([first, second]);
    expect(etcd.connection.currentEndpoint).toBe(second);
  });

  it('a watch refused with "no leader" as it opens moves to the other endpoint; every event once', async () => {
    const r1 = (await etcd.put('w/a', '1')).header.revision;
    const r2 = (await etcd.put('w/b', '2')).header.revision;
    server.faults.failNext('Watch', { code: GrpcCode.UNAVAILABLE, message: NO_LEADER });
    const watcher = etcd.watch({ prefix: 'w/', startRevision: r1 });
    const seen = record(watcher);
    await watcher.ready();
    const r3 = (await etcd.put('w/a', '3')).header.revision;
    const r4 = (await etcd.put('w/end', '4')).header.revision;
    await until(() => seen.lines.length >= 4, 'four events');
    expect(seen.lines).toEqual([`${r1} w/a=1`, `${r2} w/b=2`, `${r3} w/a=3`, `${r4} w/end=4`]);
    expect(seen.disconnects.map((e) => [e.code, e.message])).toEqual([['NO_LEADER', NO_LEADER]]);
    expect(transport.targets(WATCH)).toEqual([first, second]);
    expect(etcd.connection.currentEndpoint).toBe(second);
    await watcher.close();
  });

  it('a watch stream ended with "no leader" resumes on the other endpoint from the last event seen', async () => {
    const watcher = etcd.watch({ prefix: 'w/' });
    const seen = record(watcher);
    await watcher.ready();
    const r1 = (await etcd.put('w/a', '1')).header.revision;
    await until(() => seen.lines.length === 1, 'the first event');
    // Written just before the stream ends: delivered on the first stream or replayed on the next,
    // never both.
    const r2 = (await etcd.put('w/b', '2')).header.revision;
    expect(transport.failStreams(WATCH, first, noLeader())).toBe(1);
    const r3 = (await etcd.put('w/a', '3')).header.revision;
    const r4 = (await etcd.put('w/end', '4')).header.revision;
    await until(() => seen.lines.length >= 4, 'four events');
    expect(seen.lines).toEqual([`${r1} w/a=1`, `${r2} w/b=2`, `${r3} w/a=3`, `${r4} w/end=4`]);
    expect(seen.disconnects.map((e) => e.code)).toEqual(['NO_LEADER']);
    expect(transport.targets(WATCH)).toEqual([first, second]);
    expect(etcd.connection.currentEndpoint).toBe(second);
    await watcher.close();
  });

  it('a lease keepalive stream refused with "no leader" as it opens moves to the other endpoint; the lease lives', async () => {
    const lease = await etcd.lease.grant(2);
    const replies: LeaseKeepAliveEvent[] = [];
    lease.on('keepalive', (event) => replies.push(event));
    server.faults.failNext('LeaseKeepAlive', { code: GrpcCode.UNAVAILABLE, message: NO_LEADER });
    lease.keepAlive();
    // A keepalive every TTL/3: four replies span more than the TTL.
    await until(() => replies.length >= 4, 'four keepalive replies');
    expect(replies.every((r) => r.leaseId === lease.id && r.ttl === 2n)).toBe(true);
    expect(lease.keepingAlive).toBe(true);
    expect((await lease.timeToLive()).ttl).toBeGreaterThan(0n);
    expect(transport.targets(KEEPALIVE)).toEqual([first, second]);
    expect(etcd.connection.currentEndpoint).toBe(second);
  });

  it('a lease keepalive stream ended with "no leader" moves to the other endpoint; the lease lives', async () => {
    const lease = await etcd.lease.grant(2);
    const replies: LeaseKeepAliveEvent[] = [];
    lease.on('keepalive', (event) => replies.push(event));
    lease.keepAlive();
    await until(() => replies.length >= 1, 'a keepalive reply');
    expect(transport.failStreams(KEEPALIVE, first, noLeader())).toBe(1);
    const before = replies.length;
    await until(() => replies.length >= before + 4, 'four more keepalive replies');
    expect(lease.keepingAlive).toBe(true);
    expect((await lease.timeToLive()).ttl).toBeGreaterThan(0n);
    expect(transport.targets(KEEPALIVE)).toEqual([first, second]);
    expect(etcd.connection.currentEndpoint).toBe(second);
  });
});

describe('failover after "etcdserver: no leader" (a simulated cluster, one member partitioned)', () => {
  let cluster: EmbeddedCluster;
  let transport: RecordingTransport;
  let etcd: Etcd;
  let writer: Etcd;

  beforeEach(async () => {
    cluster = await EmbeddedCluster.start({ members: 3, minLeaseTtl: 1 });
    transport = new RecordingTransport();
    etcd = new Etcd({
      endpoints: [...cluster.endpoints],
      requireLeader: true,
      transport,
      watch: { maxReconnectDelayMs: 100 },
    });
    // Writes go through a member that keeps its leader: a write sent to the partitioned member
    // would wait there for a leader until the request timeout.
    writer = new Etcd({ endpoints: [cluster.members[2]!.endpoint] });
  });
  afterEach(async () => {
    for (const member of cluster.members) member.heal();
    await etcd.close();
    await writer.close();
    await cluster.stop();
  });

  it('the watch and the lease keepalive on the partitioned member move to another; nothing is lost', async () => {
    const [m0, m1] = cluster.members.map((m) => targetOf(m.endpoint));
    const watcher = etcd.watch({ prefix: 'p/' });
    const seen = record(watcher);
    await watcher.ready();
    const lease = await etcd.lease.grant(2);
    const replies: LeaseKeepAliveEvent[] = [];
    lease.on('keepalive', (event) => replies.push(event));
    lease.keepAlive();
    const r1 = (await writer.put('p/a', '1', { lease: lease.id })).header.revision;
    await until(() => seen.lines.length === 1 && replies.length >= 1, 'an event and a keepalive');
    expect(etcd.connection.currentEndpoint).toBe(m0);

    cluster.members[0]!.partition();
    // The partitioned member's watchers see nothing new: these arrive only through the new stream.
    const r2 = (await writer.put('p/b', '2')).header.revision;
    const r3 = (await writer.put('p/a', '3', { lease: lease.id })).header.revision;
    const before = replies.length;
    await until(() => replies.length >= before + 4, 'four keepalive replies after the partition');
    const r4 = (await writer.put('p/end', '4')).header.revision;
    await until(() => seen.lines.length >= 4, 'four events');

    expect(seen.lines).toEqual([`${r1} p/a=1`, `${r2} p/b=2`, `${r3} p/a=3`, `${r4} p/end=4`]);
    expect(seen.disconnects.map((e) => [e.code, e.message])).toEqual([['NO_LEADER', NO_LEADER]]);
    expect(transport.targets(WATCH)).toEqual([m0, m1]);
    expect(transport.targets(KEEPALIVE)).toEqual([m0, m1]);
    expect(etcd.connection.currentEndpoint).toBe(m1);
    expect(lease.keepingAlive).toBe(true);
    expect((await writer.lease.timeToLive(lease.id)).ttl).toBeGreaterThan(0n);
    expect((await writer.get('p/a'))?.lease).toBe(lease.id);
    await watcher.close();
  });

  it('a plain write refused with "no leader" is sent again to another member and applied once', async () => {
    const [m0, m1] = cluster.members.map((m) => targetOf(m.endpoint));
    await etcd.put('w/warm', '0');
    expect(etcd.connection.currentEndpoint).toBe(m0);
    cluster.members[0]!.partition();
    // Refused before anything was done, so even a write without a guard is safe to send again.
    const written = await etcd.put('w/once', '1');
    expect(etcd.connection.currentEndpoint).toBe(m1);
    const kv = await writer.get('w/once');
    expect(kv?.version).toBe(1n);
    expect(kv?.modRevision).toBe(written.header.revision);
  });
});
