// Lock and Campaign calls waiting when the embedded server restarts or stops: like an etcd member
// going down, the server undoes nothing; the queued keys stay until their leases expire, and a
// client that locks again with the same lease finds its key and its place in the queue.
import { Etcd, OutcomeUnknownError, toText } from '@etcdkit/client';
import { describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';

/** Resolves once `check` is true (every 10 ms), failing after 5 s. */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('condition not met within 5 s');
}

describe('Lock and Election across restart and stop', () => {
  it('a restart fails the waiting calls but keeps their keys; locking again resumes the place', async () => {
    await using server = await EmbeddedEtcd.start();
    await using etcd = new Etcd({ endpoints: [...server.endpoints] });
    const keys = async (prefix: string) =>
      (await etcd.range({ prefix, sort: { target: 'create', order: 'ascend' } })).kvs.map((kv) =>
        kv.keyText(),
      );
    const holder = await etcd.lease.grant(60);
    const waiter = await etcd.lease.grant(60);
    const candidate = await etcd.lease.grant(60);
    const held = await etcd.lock.lock('l', { lease: holder });
    await etcd.election.campaign('e', 'lead', { lease: holder });
    const waiting = etcd.lock.lock('l', { lease: waiter });
    const campaigning = etcd.election.campaign('e', 'next', { lease: candidate });
    await eventually(
      async () => (await keys('l/')).length === 2 && (await keys('e/')).length === 2,
    );

    await server.restart();
    await expect(waiting).rejects.toBeInstanceOf(OutcomeUnknownError);
    await expect(campaigning).rejects.toBeInstanceOf(OutcomeUnknownError);
    const queuedLock = [toText(held.key), `l/${waiter.id.toString(16)}`];
    expect(await keys('l/')).toEqual(queuedLock);
    expect(await keys('e/')).toHaveLength(2);

    const again = etcd.lock.lock('l', { lease: waiter });
    await etcd.lock.unlock(held.key);
    expect(toText((await again).key)).toBe(queuedLock[1]);
  });

  it('stop ends waiting calls without deleting what they queued', async () => {
    const server = await EmbeddedEtcd.start();
    const etcd = new Etcd({ endpoints: [...server.endpoints] });
    try {
      const holder = await etcd.lease.grant(60);
      const waiter = await etcd.lease.grant(60);
      await etcd.lock.lock('l', { lease: holder });
      const waiting = etcd.lock.lock('l', { lease: waiter });
      waiting.catch(() => {});
      await eventually(async () => (await etcd.range({ prefix: 'l/' })).kvs.length === 2);
      const revision = server.store.revision;
      await server.stop();
      await expect(waiting).rejects.toBeInstanceOf(OutcomeUnknownError);
      expect(server.store.revision).toBe(revision);
      expect(
        server.store.range({
          key: new TextEncoder().encode('l/'),
          end: new TextEncoder().encode('l0'),
        }).kvs,
      ).toHaveLength(2);
    } finally {
      await etcd.close();
      await server.stop();
    }
  });
});
