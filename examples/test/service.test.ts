// Testing a service with the embedded server: `npx vitest run examples/test/service.test.ts`.
//
// The service under test is examples/src/lib/instance-registry.ts (instances register with a lease).
// Each test starts its own in-process server on a free loopback port: no etcd, no Docker, and with
// `clock: 'virtual'` lease expiry happens exactly when the test moves the server's clock, not after
// real seconds. Faults are injected through `server.faults` and `server.dropConnections()`.
import { Etcd, OutcomeUnknownError } from '@etcdkit/client';
import { EmbeddedEtcd, GrpcCode, type VirtualClock } from '@etcdkit/server-embedded';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { discover, register } from '../src/lib/instance-registry.js';

describe('instance registry', () => {
  let server: EmbeddedEtcd & { readonly clock: VirtualClock };
  let etcd: Etcd;

  beforeEach(async () => {
    server = await EmbeddedEtcd.start({ clock: 'virtual' });
    etcd = new Etcd({ endpoints: [...server.endpoints] });
  });

  afterEach(async () => {
    await etcd.close();
    await server.stop();
  });

  test('a registered instance is discovered, and gone once deregistered', async () => {
    const registration = await register(etcd, { name: 'api-1', address: '10.0.0.1:80' }, 5);
    expect(await discover(etcd)).toEqual([{ name: 'api-1', address: '10.0.0.1:80' }]);
    await registration.close();
    expect(await discover(etcd)).toEqual([]);
  });

  test('a crashed instance disappears exactly when its TTL runs out on the server clock', async () => {
    const registration = await register(etcd, { name: 'api-1', address: '10.0.0.1:80' }, 5);
    registration.crash(); // no more keepalives
    await server.clock.advance(4_999);
    expect(await discover(etcd)).toHaveLength(1);
    await server.clock.advance(1); // 5 s after the grant: the expiry check revokes the lease
    expect(await discover(etcd)).toEqual([]);
  });

  test('a put whose outcome is unknown is sent again (it is idempotent)', async () => {
    // The server applies the put, then answers Unavailable: the client cannot know it was applied.
    server.faults.failNext('Put', { code: GrpcCode.UNAVAILABLE, afterApply: true });
    const registration = await register(etcd, { name: 'api-1', address: '10.0.0.1:80' }, 5);
    expect(await discover(etcd)).toEqual([{ name: 'api-1', address: '10.0.0.1:80' }]);
    await registration.close();
  });

  test('a registration that keeps failing is reported, and leaves no lease behind', async () => {
    server.faults.failNext('Put', { code: GrpcCode.UNAVAILABLE, count: 3 });
    await expect(
      register(etcd, { name: 'api-1', address: '10.0.0.1:80' }, 5),
    ).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(await etcd.lease.leases()).toEqual([]);
  });

  test('the registration survives dropped connections: the client reconnects', async () => {
    const registration = await register(etcd, { name: 'api-1', address: '10.0.0.1:80' }, 5);
    expect(server.dropConnections()).toBeGreaterThan(0);
    expect(await discover(etcd)).toEqual([{ name: 'api-1', address: '10.0.0.1:80' }]);
    await registration.close();
  });
});
