// The Etcd facade: the KV API of the whole store plus the other services, over one connection.
import { describeEachBackend } from '@etcdkit/testkit';
import { expect, it } from 'vitest';
import { AuthClient } from '../../src/cluster/auth.js';
import { ClusterClient } from '../../src/cluster/cluster.js';
import { MaintenanceClient } from '../../src/cluster/maintenance.js';
import { ClientClosedError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import { KV } from '../../src/kv/kv.js';
import { LeaseClient } from '../../src/lease/lease.js';
import { rejection } from './kv-support.js';

describeEachBackend('Etcd facade', ({ backend, prefix }) => {
  it('is the KV API of the whole store, with every service on the same connection', async () => {
    const etcd = new Etcd({ endpoints: backend().endpoints });
    try {
      expect(etcd).toBeInstanceOf(KV);
      expect(etcd.prefix).toEqual(new Uint8Array(0));
      expect(etcd.lease).toBeInstanceOf(LeaseClient);
      expect(etcd.cluster).toBeInstanceOf(ClusterClient);
      expect(etcd.maintenance).toBeInstanceOf(MaintenanceClient);
      expect(etcd.auth).toBeInstanceOf(AuthClient);
      const lease = await etcd.lease.grant(30);
      await etcd.put(`${prefix()}k`, 'v', { lease });
      expect((await etcd.get(`${prefix()}k`))?.lease).toBe(lease.id);
      expect((await etcd.cluster.memberList()).members).toHaveLength(1);
      await lease.revoke();
      expect(await etcd.get(`${prefix()}k`)).toBeUndefined();
    } finally {
      await etcd.close();
    }
  });

  it('close() is idempotent, and calls after it fail with ClientClosedError', async () => {
    const etcd = new Etcd({ endpoints: backend().endpoints });
    await etcd.put(`${prefix()}k`, 'v');
    const closing = etcd.close();
    expect(etcd.close()).toBe(closing);
    await closing;
    await etcd.close();
    expect(await rejection(etcd.get(`${prefix()}k`))).toBeInstanceOf(ClientClosedError);
    expect(await rejection(etcd.namespace('x/').put('k', 'v'))).toBeInstanceOf(ClientClosedError);
  });

  it('Symbol.asyncDispose closes it, for `await using`', async () => {
    const etcd = new Etcd({ endpoints: backend().endpoints });
    await etcd.get(`${prefix()}k`);
    await etcd[Symbol.asyncDispose]();
    expect(etcd.connection.closed).toBe(true);
    expect(await rejection(etcd.txn().commit())).toBeInstanceOf(ClientClosedError);
  });
});
