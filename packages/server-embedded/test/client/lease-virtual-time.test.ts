// The etcdkit client against an embedded server on virtual time: a lease's key is gone exactly when
// the test moves the clock past its TTL. The client's keepalives run on real time, so an advance
// models the clients stalled that long: a kept-alive lease not refreshed within the jump expires;
// one refreshed between jumps shorter than its TTL lives on.
import { Etcd, type LeaseKeepAliveEvent } from '@etcdkit/client';
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

  it('a jump past the TTL expires a lease the client keeps alive, and the client learns it', async () => {
    const lease = await etcd.lease.grant(5, { keepAlive: true });
    await etcd.put('jobs/1', 'running', { lease });
    await server.clock.advance(5_500);
    expect(await etcd.get('jobs/1')).toBeUndefined();
    // The next keepalive is answered with TTL 0.
    const lost = await lease.lost;
    expect(lost.reason).toBe('expired');
  });

  it('jumps shorter than the TTL, with a keepalive landing between them, keep it alive', async () => {
    const lease = await etcd.lease.grant(5, { keepAlive: true });
    await etcd.put('jobs/2', 'running', { lease });
    for (let step = 0; step < 3; step++) {
      await server.clock.advance(4_000);
      // A refresh on real time: the lease lives 5 s from the virtual now again.
      await new Promise<LeaseKeepAliveEvent>((resolve) => lease.once('keepalive', resolve));
    }
    // 12 s of virtual time in all, more than twice the TTL.
    expect((await etcd.get('jobs/2'))?.text()).toBe('running');
    expect(lease.keepingAlive).toBe(true);
    await lease.revoke();
  });

  it('expireLease() ends one kept-alive lease now, whatever the clock', async () => {
    // TTL 6: the client's next keepalive, which learns the loss, goes out within 2 s.
    const [doomed, kept] = [
      await etcd.lease.grant(6, { keepAlive: true }),
      await etcd.lease.grant(6, { keepAlive: true }),
    ];
    await etcd.put('jobs/doomed', 'x', { lease: doomed });
    await etcd.put('jobs/kept', 'x', { lease: kept });
    expect(server.expireLease(doomed.id)).toBe(true);
    expect(await etcd.get('jobs/doomed')).toBeUndefined();
    expect((await doomed.lost).reason).toBe('expired');
    expect((await etcd.get('jobs/kept'))?.text()).toBe('x');
    await kept.revoke();
  });
});
