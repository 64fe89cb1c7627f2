// Etcd.close() ends what packages built on the client own (ownedByClient) before its connection
// closes, so their last calls still go through.
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ClientClosedError } from '../src/errors.js';
import { Etcd } from '../src/etcd.js';

describeEachBackend('Etcd.close and what the client owns', ({ backend, prefix }) => {
  let admin: Etcd;
  beforeAll(() => {
    admin = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(() => admin?.close());

  it('runs every owned end, whose calls still work, before the connection closes', async () => {
    const p = prefix();
    const etcd = new Etcd({ endpoints: backend().endpoints });
    const order: string[] = [];
    etcd.ownedByClient(async () => {
      await etcd.put(`${p}a`, 'ended');
      order.push('a');
    });
    etcd.ownedByClient(() => Promise.reject(new Error('its own failure')));
    const forgotten = etcd.ownedByClient(async () => {
      order.push('forgotten');
    });
    forgotten();
    const closing = etcd.close();
    expect(etcd.close()).toBe(closing);
    await closing;
    expect(order).toEqual(['a']);
    expect((await admin.get(`${p}a`))?.text()).toBe('ended');
    await expect(etcd.get(`${p}a`)).rejects.toBeInstanceOf(ClientClosedError);
  });

  it('keeps nothing registered once closing', async () => {
    const etcd = new Etcd({ endpoints: backend().endpoints });
    await etcd.close();
    let ran = false;
    etcd.ownedByClient(async () => {
      ran = true;
    });
    await etcd.close();
    expect(ran).toBe(false);
  });
});
