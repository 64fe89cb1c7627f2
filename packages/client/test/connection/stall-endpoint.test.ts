// A stream that stalls on one endpoint while calls went on to another: the watch stream's and the
// lease keepalive stream's stall recovery redial the endpoint the stalled stream uses, not the one
// calls use now. Two TCP proxies give one server two endpoints; pausing one makes the connection
// through it half-open (it still looks ready to the transport).
import { describeEachBackend, startTcpProxy, type TcpProxy } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import { Etcd } from '../../src/etcd.js';
import type { LeaseKeepAliveEvent } from '../../src/lease/lease-events.js';
import type { LeaseLostError } from '../../src/lease/lease-lost.js';
import { selectTransport } from '../../src/transport/select.js';
import type { Channel, Transport } from '../../src/transport/types.js';
import { streamLog, waitFor } from '../watch/watch-support.js';

/** The transport tests use (http2, or ETCDKIT_TEST_TRANSPORT), recording channels by target. */
function recordingTransport(): Transport & { opened: string[]; closed: string[] } {
  const inner = selectTransport(undefined);
  const opened: string[] = [];
  const closed: string[] = [];
  return {
    name: `recording ${inner.name}`,
    opened,
    closed,
    open(options) {
      const channel = inner.open(options);
      opened.push(options.target);
      const wrapped: Channel = {
        target: channel.target,
        state: () => channel.state(),
        ready: (deadline, signal) => channel.ready(deadline, signal),
        unary: (method, request, callOptions) => channel.unary(method, request, callOptions),
        serverStream: (method, request, callOptions) =>
          channel.serverStream(method, request, callOptions),
        bidiStream: (method, callOptions) => channel.bidiStream(method, callOptions),
        close: () => {
          closed.push(options.target);
          channel.close();
        },
      };
      return wrapped;
    },
  };
}

const targetOf = (proxy: TcpProxy) => `127.0.0.1:${proxy.port}`;

/**
 * Moves `etcd`'s calls to `spare` while the streams already open stay on `stuck`: `spare` alone is
 * listed (calls go there, the streams keep `stuck`), then both are, `spare` still current.
 */
async function moveCallsTo(etcd: Etcd, spare: TcpProxy, stuck: TcpProxy, key: string) {
  etcd.connection.setEndpoints([spare.endpoint]);
  etcd.connection.setEndpoints([spare.endpoint, stuck.endpoint]);
  await etcd.get(key);
  expect(etcd.connection.currentEndpoint).toBe(targetOf(spare));
}

describeEachBackend('stall recovery redials the stalled stream endpoint', ({ backend, prefix }) => {
  it('a watch stalled on A while calls are on B: A is redialled, the watch resumes on B, B keeps its connection', async () => {
    const p = prefix();
    const stuck = await startTcpProxy(backend().endpoints[0]!);
    const spare = await startTcpProxy(backend().endpoints[0]!);
    const transport = recordingTransport();
    const log = streamLog();
    const etcd = new Etcd({
      endpoints: [stuck.endpoint, spare.endpoint],
      transport,
      dialTimeoutMs: 1_000,
      // 1 s, not less: the one stall asserted is the paused proxy's, and a loaded run could let a
      // live stream's progress answer miss a 300 ms bound.
      watch: { progressIntervalMs: 1_000, stallTimeoutMs: 1_000, hooks: log.hooks },
    });
    try {
      const watcher = etcd.watch({ prefix: p });
      const lines: string[] = [];
      let resumed = 0;
      watcher.on('batch', (batch) => {
        for (const e of batch.events)
          lines.push(`${batch.revision} ${e.kv.keyText()}=${e.kv.text()}`);
      });
      watcher.on('resumed', () => resumed++);
      await watcher.ready();
      await moveCallsTo(etcd, spare, stuck, `${p}x`);
      const before = (await etcd.put(`${p}a`, '1')).header.revision;
      await waitFor(() => lines.length === 1, 10_000, 'the first event, through A');
      stuck.pause();
      // Calls go on through B meanwhile.
      const during = (await etcd.put(`${p}a`, '2')).header.revision;
      await waitFor(() => log.reasons.includes('stall'), 20_000, 'stall detection');
      await waitFor(() => resumed === 1, 20_000, 'the watcher to resume');
      const after = (await etcd.put(`${p}a`, '3')).header.revision;
      await waitFor(() => lines.length === 3, 10_000, 'every event');
      expect(lines).toEqual([`${before} ${p}a=1`, `${during} ${p}a=2`, `${after} ${p}a=3`]);
      expect(log.reasons).toEqual(['stall']);
      // Only the stalled endpoint's channel was closed; B's first connection serves on.
      expect(transport.closed).toEqual([targetOf(stuck)]);
      expect(transport.opened).toEqual([targetOf(stuck), targetOf(spare)]);
      expect(spare.totalConnections).toBe(1);
      expect(spare.connectionCount).toBe(1);
      await watcher.close();
    } finally {
      stuck.resume();
      await etcd.close();
      await Promise.all([stuck.close(), spare.close()]);
    }
  }, 90_000);

  it('a lease keepalive stalled on A while calls are on B: A is redialled, the lease is refreshed through B', async () => {
    const p = prefix();
    const stuck = await startTcpProxy(backend().endpoints[0]!);
    const spare = await startTcpProxy(backend().endpoints[0]!);
    const transport = recordingTransport();
    const keepalives: LeaseKeepAliveEvent[] = [];
    const losses: LeaseLostError[] = [];
    const etcd = new Etcd({
      endpoints: [stuck.endpoint, spare.endpoint],
      transport,
      dialTimeoutMs: 1_000,
      hooks: {
        onLeaseKeepAlive: (event) => keepalives.push(event),
        onLeaseLost: (error) => losses.push(error),
      },
    });
    try {
      // TTL 6 s: a keepalive every 2 s, a stall noticed 2 s after one went unanswered.
      const lease = await etcd.lease.grant(6, { keepAlive: true });
      await waitFor(() => keepalives.length >= 1, 10_000, 'a keepalive through A');
      await moveCallsTo(etcd, spare, stuck, `${p}x`);
      stuck.pause();
      const heard = keepalives.length;
      await waitFor(() => transport.closed.length > 0, 20_000, 'the stalled endpoint redialled');
      await waitFor(() => keepalives.length > heard, 20_000, 'a keepalive through B');
      expect(transport.closed).toEqual([targetOf(stuck)]);
      expect(transport.opened).toEqual([targetOf(stuck), targetOf(spare)]);
      expect(spare.totalConnections).toBe(1);
      expect(losses).toEqual([]);
      expect(lease.keepingAlive).toBe(true);
      await lease.revoke();
    } finally {
      stuck.resume();
      await etcd.close();
      await Promise.all([stuck.close(), spare.close()]);
    }
  }, 90_000);
});
