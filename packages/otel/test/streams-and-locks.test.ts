// The metrics of what outlives a call: lease keepalives and losses, watch lag, lock waits; on the
// embedded server and on real etcd.
import { Etcd } from '@etcdkit/client';
import { LockedError, Mutex, Session } from '@etcdkit/recipes';
import { describeEachBackend } from '@etcdkit/testkit';
import { SpanStatusCode } from '@opentelemetry/api';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { EtcdMetrics } from '../src/index.js';
import { hostPort, Recorder } from './otel-support.js';

describeEachBackend('OpenTelemetry: leases, watches and locks', ({ backend, prefix }) => {
  let recorder: Recorder;
  const closing: { close(): Promise<unknown> }[] = [];
  const client = () => {
    const t = recorder.telemetry;
    const etcd = t.instrument(new Etcd(t.withHooks({ endpoints: backend().endpoints })));
    closing.push(etcd);
    return etcd;
  };
  const admin = () => {
    const etcd = new Etcd({ endpoints: backend().endpoints });
    closing.push(etcd);
    return etcd;
  };

  beforeEach(() => {
    recorder = new Recorder();
  });
  afterEach(async () => {
    // Sessions before the clients they run on.
    for (const c of closing.splice(0).reverse()) await c.close();
    await recorder.shutdown();
  });

  it('records each keepalive round trip and counts a lease lost to a revoke elsewhere', async () => {
    const etcd = client();
    const lease = await etcd.lease.grant(3);
    let keepalives = 0;
    lease.on('keepalive', () => keepalives++);
    const first = new Promise((resolve) => lease.once('keepalive', resolve));
    lease.keepAlive();
    await first;
    await admin().lease.revoke(lease.id);
    expect((await lease.lost).reason).toBe('expired');

    expect(await recorder.counter(EtcdMetrics.LEASE_LOST)).toEqual([
      { attributes: { 'etcd.lease.lost_reason': 'expired' }, value: 1 },
    ]);
    const [roundTrips, ...others] = await recorder.histogram(EtcdMetrics.LEASE_KEEPALIVE_DURATION);
    expect(others).toEqual([]);
    expect(roundTrips!.attributes).toEqual({});
    expect(roundTrips!.value.count).toBe(keepalives);
    expect(keepalives).toBeGreaterThanOrEqual(1);
    expect(recorder.spansNamed('etcdserverpb.Lease/LeaseGrant')).toHaveLength(1);
  });

  it('measures watch lag: history replayed behind the head, then a live event at lag 0', async () => {
    const etcd = client();
    const key = `${prefix()}w`;
    const first = (await etcd.put(key, '1')).header.revision;
    await etcd.put(key, '2');
    const head = (await etcd.put(key, '3')).header.revision;
    const watcher = etcd.watch({ key, startRevision: first });
    const batches = watcher[Symbol.asyncIterator]();
    const replayed: bigint[] = [];
    while (replayed.at(-1) !== head) replayed.push((await batches.next()).value!.revision);
    expect(replayed).toEqual([first, first + 1n, head]);
    const live = (await etcd.put(key, '4')).header.revision;
    expect((await batches.next()).value!.revision).toBe(live);
    await watcher.close();

    const { host, port } = hostPort(backend().endpoints[0]!);
    const [lag, ...others] = await recorder.histogram(EtcdMetrics.WATCH_LAG);
    expect(others).toEqual([]);
    expect(lag!.attributes).toEqual({ 'server.address': host, 'server.port': port });
    // Replayed: head - first and head - (first + 1); then the replayed head and the live one, at 0.
    expect(lag!.value).toMatchObject({ count: 4, sum: Number(head - first) + 1, min: 0, max: 2 });
  });

  it('records the wait of a lock taken behind a holder, and of a tryLock that failed', async () => {
    const name = `${prefix()}lock`;
    const etcd = client();
    const holderSession = await Session.create(etcd, { ttl: 10 });
    const waiterSession = await Session.create(etcd, { ttl: 10 });
    closing.push(holderSession, waiterSession);
    const held = await new Mutex(holderSession, name).lock();

    const waiting = recorder.telemetry.lock(new Mutex(waiterSession, name));
    const waitStarted = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const released = performance.now();
    await held.unlock();
    const lock = await waiting;
    const refused = await recorder.telemetry
      .measureLockWait(name, () => new Mutex(holderSession, name).tryLock())
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LockedError);
    await lock.unlock();

    const waits = await recorder.histogram(EtcdMetrics.LOCK_WAIT_DURATION);
    expect(waits.map((p) => p.attributes)).toEqual([
      { 'etcd.lock.name': name },
      { 'etcd.lock.name': name, 'error.type': 'LOCKED' },
    ]);
    expect(waits.map((p) => p.value.count)).toEqual([1, 1]);
    // The waiter cannot have got the lock before the holder let it go.
    expect(waits[0]!.value.sum).toBeGreaterThan((released - waitStarted) / 1000);

    const spans = recorder.spansNamed('etcd.lock.wait');
    expect(spans.map((s) => [s.attributes, s.status.code])).toEqual([
      [{ 'etcd.lock.name': name }, SpanStatusCode.UNSET],
      [{ 'etcd.lock.name': name, 'error.type': 'LOCKED' }, SpanStatusCode.ERROR],
    ]);
  });
});
