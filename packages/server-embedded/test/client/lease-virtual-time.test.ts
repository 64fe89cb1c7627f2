// The etcdkit client against an embedded server on virtual time: a lease's key is gone exactly when
// the test moves the clock past its TTL.
import { Etcd } from '@etcdkit/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd, type VirtualClock } from '../../src/index.js';

describe('the etcdkit client and lease expiry on virtual time', () => {
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

  it('a key on a 10-minute lease lives 10 minutes of virtual time, no longer', async () => {
    const lease = await etcd.lease.grant(600);
    await etcd.put('session/a', 'x', { lease: lease.id });
    expect((await lease.timeToLive()).ttl).toBe(599n);
    await server.clock.advance(599_999);
    expect((await etcd.get('session/a'))?.text()).toBe('x');
    await server.clock.advance(1);
    expect(await etcd.get('session/a')).toBeUndefined();
    expect((await lease.timeToLive()).ttl).toBe(-1n);
  });

  it('expireLease() ends a lease at once, as a fault', async () => {
    const lease = await etcd.lease.grant(60);
    await etcd.put('session/b', 'x', { lease: lease.id });
    expect(server.expireLease(lease.id)).toBe(true);
    expect(await etcd.get('session/b')).toBeUndefined();
    await expect(lease.revoke()).rejects.toMatchObject({ code: 'LEASE_NOT_FOUND' });
  });
});
