// ServiceRegistry and ResilientSession through the faults that lose a lease: an etcd restart
// (shorter and longer than the TTL), a partition (a half-open connection), and, on the embedded
// server's virtual clock, an expiry the client does not see coming. Each suite runs on the
// embedded server and on real etcd, with servers of its own so it can restart them.
import { Etcd } from '@etcdkit/client';
import { EmbeddedEtcd, type VirtualClock } from '@etcdkit/server-embedded';
import {
  describeRealEtcd,
  type EtcdProcess,
  startEtcd,
  startTcpProxy,
  type TcpProxy,
} from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceDiscovery } from '../../src/discovery/discovery.js';
import { type ServiceRegistration, ServiceRegistry } from '../../src/discovery/registry.js';
import { Mutex } from '../../src/lock/mutex.js';
import { ResilientSession } from '../../src/session/resilient-session.js';
import { eventually, sleep } from '../recipes-support.js';

/** Polls `read` until it returns a value (see eventually). */
async function eventuallyValue<T>(read: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  let value: T | undefined;
  await eventually(() => {
    value = read();
    return value !== undefined;
  }, timeoutMs);
  return value as T;
}

/** A server the suite can take down and bring back, data kept. */
interface RestartableServer {
  readonly endpoints: readonly string[];
  /** Down for `downtimeMs` (not listening), then back with its data and leases. */
  restart(downtimeMs: number): Promise<void>;
  stop(): Promise<void>;
}

const RETRY = { minDelayMs: 50, maxDelayMs: 300 };

/** The registration's losses and recoveries, as `lost:<reason>` and `registered`. */
function recordEvents(registration: ServiceRegistration): string[] {
  const events: string[] = [];
  registration.on('lost', (error) => events.push(`lost:${error.reason}`));
  registration.on('registered', () => events.push('registered'));
  return events;
}

/**
 * The discovery went from the old registration to the new one, through nothing else: the old
 * lease's delete and the new put are one change or two, depending on whether the watch delivered
 * them in one response (it does when it catches up after a reconnect).
 */
function expectRecovered(changes: readonly string[], renewed: bigint): void {
  const recovered = `10.0.0.1:80@${renewed.toString(16)}`;
  expect(changes.at(-1)).toBe(recovered);
  expect(changes.length === 1 ? changes : changes.slice(0, -1)).toEqual(
    changes.length === 1 ? [recovered] : [''],
  );
}

function faultSuite(start: () => Promise<RestartableServer>): void {
  let server: RestartableServer;
  let admin: Etcd;
  const closing: Array<{ close(): Promise<void> }> = [];
  let serial = 0;
  const service = () => `faults/${++serial}/api`;

  beforeAll(async () => {
    server = await start();
    admin = new Etcd({ endpoints: [...server.endpoints] });
  });
  afterEach(async () => {
    for (const thing of closing.splice(0).reverse()) await thing.close().catch(() => {});
  });
  afterAll(async () => {
    await admin?.close();
    await server?.stop();
  });

  function client(endpoints = server.endpoints): Etcd {
    const etcd = new Etcd({ endpoints: [...endpoints], dialTimeoutMs: 500 });
    closing.push(etcd);
    return etcd;
  }

  function registry(ttl: number, etcd = client()): ServiceRegistry {
    const created = new ServiceRegistry(etcd, { ttl, retry: RETRY });
    closing.push(created);
    return created;
  }

  /**
   * An instance of a new service registered with `ttl` through `etcd`, the record of its losses
   * and recoveries, and a discovery of the service (on a direct connection) with its changes.
   */
  async function registered(ttl: number, etcd = client()) {
    const name = service();
    const registration = await registry(ttl, etcd).register(name, { addr: '10.0.0.1:80' });
    const events = recordEvents(registration);
    const discovery: ServiceDiscovery = registry(60).discover(name);
    closing.push(discovery);
    await discovery.synced;
    const changes: string[] = [];
    discovery.on('change', (instances) =>
      changes.push(instances.map((i) => `${i.addr}@${i.leaseId.toString(16)}`).join(',')),
    );
    return { registration, events, discovery, changes, lease: registration.leaseId! };
  }

  it('an etcd restart shorter than the TTL: same lease, no loss, discovery sees no change', async () => {
    const { registration, events, discovery, changes, lease } = await registered(4);
    await server.restart(0);
    // Past the whole TTL: the lease lived on only if it was kept alive after the restart.
    await sleep(4_500);
    expect((await admin.lease.timeToLive(lease)).ttl).toBeGreaterThan(0n);
    expect(events).toEqual([]);
    expect(registration.leaseId).toBe(lease);
    expect(changes).toEqual([]);
    expect(discovery.instances.map((i) => i.leaseId)).toEqual([lease]);
  });

  it('etcd down longer than the TTL: lost (timeout), registered again under a new lease, the old lease revoked', async () => {
    const { registration, events, discovery, changes, lease: old } = await registered(2);
    await server.restart(3_500);
    await eventually(() => events.length === 2, 15_000);
    expect(events).toEqual(['lost:timeout', 'registered']);
    const renewed = registration.leaseId!;
    expect(renewed).not.toBe(old);
    // The restart gave the old lease its full TTL again; it was revoked, not left to linger.
    expect((await admin.lease.timeToLive(old)).ttl).toBe(-1n);
    await eventually(() => discovery.instances[0]?.leaseId === renewed);
    expectRecovered(changes, renewed);
  });

  it('a lock held when etcd goes down longer than the TTL is lost, and the new lease holds nothing', async () => {
    const resilient = await ResilientSession.create(client(), { ttl: 2, retry: RETRY });
    closing.push(resilient);
    const old = resilient.current!;
    const lock = await new Mutex(old, `${service()}-lock`).lock();
    await server.restart(3_500);
    const renewed = await eventuallyValue(() =>
      resilient.renewals === 1 ? resilient.current : undefined,
    );
    expect(lock.signal.aborted).toBe(true);
    expect((await old.done).reason).toBe('timeout');
    // The old lease (given its TTL again by the restart) was revoked with the lock's key.
    expect((await admin.lease.timeToLive(old.leaseId)).ttl).toBe(-1n);
    expect(await admin.get(lock.key)).toBeUndefined();
    expect((await admin.lease.timeToLive(renewed.leaseId, { keys: true })).keys).toEqual([]);
  });

  describe('behind a partition', () => {
    let proxy: TcpProxy;
    beforeAll(async () => {
      proxy = await startTcpProxy(server.endpoints[0]!);
    });
    afterEach(() => proxy.resume());
    afterAll(() => proxy?.close());

    it('the lease expires on the server; after healing the instance registers again', async () => {
      const behind = client([proxy.endpoint]);
      const { registration, events, discovery, changes, lease: old } = await registered(2, behind);
      proxy.pause();
      // The server expires the lease: discovery, on a direct connection, sees the instance go.
      await eventually(() => discovery.instances.length === 0, 10_000);
      await eventually(() => events.length === 1, 10_000);
      expect(events).toEqual(['lost:timeout']);
      expect(registration.registered).toBe(false);
      proxy.resume();
      await eventually(() => events.length === 2, 15_000);
      const renewed = registration.leaseId!;
      expect(renewed).not.toBe(old);
      await eventually(() => discovery.instances[0]?.leaseId === renewed);
      expectRecovered(changes, renewed);
      expect((await admin.lease.timeToLive(old)).ttl).toBe(-1n);
    });
  });
}

describe('service registry faults [backend: embedded]', () => {
  faultSuite(async () => {
    const server = await EmbeddedEtcd.start();
    return {
      endpoints: server.endpoints,
      restart: (downtimeMs) => server.restart({ downtimeMs }),
      stop: () => server.stop(),
    };
  });
});

describeRealEtcd('service registry faults', () => {
  faultSuite(async () => {
    const etcd: EtcdProcess = await startEtcd();
    return {
      endpoints: etcd.endpoints,
      async restart(downtimeMs) {
        await etcd.kill();
        await sleep(downtimeMs);
        await etcd.restart();
      },
      stop: () => etcd.stop(),
    };
  });
});

describe('service registry on virtual time [backend: embedded]', () => {
  let server: EmbeddedEtcd & { readonly clock: VirtualClock };
  let admin: Etcd;
  let etcd: Etcd;
  beforeAll(async () => {
    server = await EmbeddedEtcd.start({ clock: 'virtual' });
    admin = new Etcd({ endpoints: [...server.endpoints] });
    etcd = new Etcd({ endpoints: [...server.endpoints] });
  });
  afterAll(async () => {
    await etcd?.close();
    await admin?.close();
    await server?.stop();
  });

  it('a lease the server expires before the client notices: registered again under a new one', async () => {
    const registry = new ServiceRegistry(etcd, { ttl: 5, retry: RETRY });
    try {
      const registration = await registry.register('vt/api', { addr: '10.0.0.1:80' });
      const events = recordEvents(registration);
      const old = registration.leaseId!;
      await server.clock.advance(6_000);
      expect(await admin.get(registration.key)).toBeUndefined();
      await eventually(() => events.length === 2);
      expect(events).toEqual(['lost:expired', 'registered']);
      const stored = await admin.get(registration.key);
      expect(stored?.lease).toBe(registration.leaseId);
      expect(stored?.lease).not.toBe(old);
    } finally {
      await registry.close();
    }
  });
});
