// ServiceRegistry: registration under a lease in Go's naming layout, discovery of the live set,
// re-registration after a lease loss, deregistration in one revision.
import { Etcd, InvalidArgumentError, type WatchBatch } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { ServiceDiscovery } from '../../src/discovery/discovery.js';
import type { ServiceInstance } from '../../src/discovery/endpoint.js';
import { ServiceRegistry, ServiceRegistryClosedError } from '../../src/discovery/registry.js';
import { ResilientSession } from '../../src/session/resilient-session.js';
import { eventually, Fixture, rejection } from '../recipes-support.js';

const RETRY = { minDelayMs: 50, maxDelayMs: 200 };

/** The addresses of a set of instances, in key order. */
const addrs = (instances: readonly ServiceInstance[]) => instances.map((i) => i.addr);

/** Every change of `discovery` as the list of addresses it announced. */
function recordChanges(discovery: ServiceDiscovery): string[][] {
  const changes: string[][] = [];
  discovery.on('change', (instances) => changes.push(addrs(instances)));
  return changes;
}

/** The next watch batch of `prefix` after `revision`. */
async function nextBatch(admin: Etcd, prefix: string, revision: bigint): Promise<WatchBatch> {
  const watcher = admin.watch({ prefix, startRevision: revision + 1n });
  try {
    for await (const batch of watcher) return batch;
    throw new Error('the watch ended');
  } finally {
    await watcher.close();
  }
}

describeEachBackend('ServiceRegistry', ({ backend, prefix }) => {
  const fixture = new Fixture(() => backend().endpoints);
  const owned: Array<{ close(): Promise<void> }> = [];
  let admin: Etcd;
  beforeAll(() => {
    admin = new Etcd({ endpoints: backend().endpoints });
  });
  afterEach(async () => {
    for (const thing of owned.splice(0).reverse()) await thing.close().catch(() => {});
    await fixture.close();
  });
  afterAll(() => admin?.close());

  function registry(ttl = 3): ServiceRegistry {
    const created = new ServiceRegistry(fixture.client(), { ttl, retry: RETRY });
    owned.push(created);
    return created;
  }

  it("writes <service>/<addr> with Go's endpoint JSON, attached to its lease", async () => {
    const service = `${prefix()}api`;
    const registration = await registry().register(service, {
      addr: '127.0.0.1:8080',
      metadata: { zone: 'a', weight: 2 },
    });
    const stored = await admin.get(`${service}/127.0.0.1:8080`);
    expect(stored?.text()).toBe(
      '{"Op":0,"Addr":"127.0.0.1:8080","Metadata":{"zone":"a","weight":2}}',
    );
    expect(stored?.lease).toBe(registration.leaseId);
    expect(registration.key).toBe(`${service}/127.0.0.1:8080`);
    expect(registration.revision).toBe(stored?.modRevision);
    expect(registration.registered).toBe(true);
    expect((await admin.lease.timeToLive(registration.leaseId!)).grantedTtl).toBe(3n);

    const named = await registry().register(service, { addr: '127.0.0.1:8081' }, { key: 'b' });
    expect((await admin.get(`${service}/b`))?.text()).toBe(
      '{"Op":0,"Addr":"127.0.0.1:8081","Metadata":null}',
    );
    expect(named.metadata).toBeNull();
  });

  it('discovers the live set: a first snapshot, then one change per revision', async () => {
    const service = `${prefix()}api`;
    const a = registry();
    await a.register(service, { addr: '10.0.0.1:80', metadata: 'one' });
    const discovery = a.discover(service);
    owned.push(discovery);
    const changes = recordChanges(discovery);
    const first = await discovery.synced;
    expect(first.map((i) => [i.key, i.id, i.addr, i.metadata])).toEqual([
      [`${service}/10.0.0.1:80`, '10.0.0.1:80', '10.0.0.1:80', 'one'],
    ]);
    const b = registry();
    const second = await b.register(service, { addr: '10.0.0.2:80' });
    await eventually(() => discovery.instances.length === 2);
    expect(discovery.get('10.0.0.2:80')).toEqual({
      key: `${service}/10.0.0.2:80`,
      id: '10.0.0.2:80',
      addr: '10.0.0.2:80',
      metadata: null,
      leaseId: second.leaseId,
      createRevision: second.revision,
      modRevision: second.revision,
    });
    // A key under the prefix that holds no endpoint is left out, and reported.
    const invalid: string[] = [];
    discovery.on('invalid', (kv) => invalid.push(kv.keyText()));
    await admin.put(`${service}/junk`, 'not json');
    await eventually(() => invalid.length === 1);
    await b.close();
    await eventually(() => discovery.instances.length === 1);
    expect(changes).toEqual([['10.0.0.1:80'], ['10.0.0.1:80', '10.0.0.2:80'], ['10.0.0.1:80']]);
    expect(invalid).toEqual([`${service}/junk`]);
  });

  it('iterates whole snapshots; leaving the loop closes the discovery', async () => {
    const service = `${prefix()}api`;
    const r = registry();
    const discovery = r.discover(service);
    const seen: string[][] = [];
    for await (const instances of discovery) {
      seen.push(addrs(instances));
      if (instances.length === 0) await r.register(service, { addr: '10.0.0.1:80' });
      else break;
    }
    expect(seen).toEqual([[], ['10.0.0.1:80']]);
    expect(discovery.closed).toBe(true);
  });

  it('re-registers under a new lease after a lease loss, reporting the loss and the recovery', async () => {
    const service = `${prefix()}api`;
    const registration = await registry().register(service, { addr: '10.0.0.1:80' });
    const discovery = registry().discover(service);
    owned.push(discovery);
    await discovery.synced;
    const changes = recordChanges(discovery);
    const events: string[] = [];
    registration.on('lost', (error) => events.push(`lost:${error.reason}`));
    registration.on('registered', (leaseId) => events.push(`registered:${leaseId}`));
    const oldLease = registration.leaseId!;
    await admin.lease.revoke(oldLease);
    await eventually(() => events.length === 2);
    const newLease = registration.leaseId!;
    expect(newLease).not.toBe(oldLease);
    expect(events).toEqual(['lost:expired', `registered:${newLease}`]);
    expect(registration.registered).toBe(true);
    await eventually(() => changes.length === 2);
    expect(changes).toEqual([[], ['10.0.0.1:80']]);
    expect(discovery.get('10.0.0.1:80')?.leaseId).toBe(newLease);
  });

  it('close deregisters every instance of the registry in one revision', async () => {
    const service = `${prefix()}api`;
    const r = registry();
    await r.register(service, { addr: '10.0.0.1:80' });
    await r.register(service, { addr: '10.0.0.2:80' });
    const other = await r.register(`${service}-admin`, { addr: '10.0.0.3:80' });
    const watching = nextBatch(admin, prefix(), other.revision!);
    await r.close();
    const batch = await watching;
    expect(batch.events.map((e) => [e.type, e.kv.keyText()])).toEqual([
      ['delete', `${service}-admin/10.0.0.3:80`],
      ['delete', `${service}/10.0.0.1:80`],
      ['delete', `${service}/10.0.0.2:80`],
    ]);
    expect(await admin.count({ prefix: prefix() })).toBe(0n);
    expect(await rejection(r.register(service, { addr: '10.0.0.4:80' }))).toBeInstanceOf(
      ServiceRegistryClosedError,
    );
  });

  it('on a shared session, close deletes only its keys, in one revision, and leaves the session', async () => {
    const service = `${prefix()}api`;
    const session = await ResilientSession.create(fixture.client(), { ttl: 3, retry: RETRY });
    owned.push(session);
    const worker = `${prefix()}worker`;
    await session.register((s) => s.etcd.put(worker, 'w', { lease: s.leaseId }).then(() => {}));
    const r = new ServiceRegistry(session.etcd, { session });
    await r.register(service, { addr: '10.0.0.1:80' });
    const last = await r.register(service, { addr: '10.0.0.2:80' });
    const watching = nextBatch(admin, prefix(), last.revision!);
    await r.close();
    const batch = await watching;
    expect(batch.events.map((e) => [e.type, e.kv.keyText()])).toEqual([
      ['delete', `${service}/10.0.0.1:80`],
      ['delete', `${service}/10.0.0.2:80`],
    ]);
    expect(session.closed).toBe(false);
    expect((await admin.get(worker))?.lease).toBe(session.current?.leaseId);
  });

  it('a registration closed alone deletes its key only while it is still its own', async () => {
    const service = `${prefix()}api`;
    const mine = await registry().register(service, { addr: '10.0.0.1:80' });
    await mine.close();
    expect(await admin.get(mine.key)).toBeUndefined();
    expect(mine.registered).toBe(false);

    const old = await registry().register(service, { addr: '10.0.0.2:80' });
    // Another process registers the same address: the key moves to its lease.
    const newer = await registry().register(service, { addr: '10.0.0.2:80' });
    await old.close();
    expect((await admin.get(newer.key))?.lease).toBe(newer.leaseId);
  });

  it('refuses bad input with InvalidArgumentError and writes nothing', async () => {
    const r = registry();
    const service = `${prefix()}api`;
    const leasesBefore = new Set(await admin.lease.leases());
    const bad: Array<[string, unknown, unknown?]> = [
      ['', { addr: 'a:1' }],
      [`${service}/`, { addr: 'a:1' }],
      [service, { addr: '' }],
      [service, null],
      [service, { addr: 'a:1', metadata: 10n }],
      [service, { addr: 'a:1', metadata: () => 1 }],
      [service, { addr: 'a:1' }, { key: '' }],
    ];
    for (const [name, endpoint, options] of bad) {
      const error = await rejection(
        r.register(name, endpoint as { addr: string }, options as { key?: string }),
      );
      expect(error, JSON.stringify([name, String(endpoint), options])).toBeInstanceOf(
        InvalidArgumentError,
      );
    }
    expect(() => r.discover('')).toThrow(InvalidArgumentError);
    expect(await admin.count({ prefix: prefix() })).toBe(0n);
    // Nothing was granted either: the registry's lease comes with its first registration.
    expect((await admin.lease.leases()).filter((id) => !leasesBefore.has(id))).toEqual([]);
  });
});
