// A held key's loss watch (turn.ts watchLoss), the one a hold gets when its turn needed no watch:
// started at a compacted revision it reads the key, keeps watching while it is the incarnation
// held, and reports the loss of one that went (or was re-created) meanwhile.
import { Etcd } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type OwnKey, watchLoss } from '../../src/line/turn.js';
import { deferred, stillPending } from '../recipes-support.js';

interface Loss {
  readonly revision?: bigint;
  readonly error?: unknown;
}

describeEachBackend('loss watch of a held key', ({ backend, prefix }) => {
  let etcd: Etcd;
  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(() => etcd?.close());

  /** Puts `key`, moves the store on and compacts past the put: the key's own key, seen then. */
  async function compactedOwnKey(key: string): Promise<OwnKey> {
    const put = await etcd.put(key, '');
    for (let i = 0; i < 3; i++) await etcd.put(`${key}-noise`, String(i));
    const now = (await etcd.get(`${key}-noise`))?.modRevision ?? 0n;
    await etcd.compact(now);
    return { key, createRevision: put.header.revision, seenAt: put.header.revision };
  }

  function listen(own: OwnKey): { readonly loss: Promise<Loss>; close(): void } {
    const seen = deferred();
    let loss: Loss = {};
    const watch = watchLoss(etcd, own);
    watch.onLoss({
      lost: (revision) => {
        loss = { revision };
        seen.resolve();
      },
      failed: (error) => {
        loss = { error };
        seen.resolve();
      },
    });
    return { loss: seen.promise.then(() => loss), close: () => watch.close() };
  }

  it('from a compacted revision, keeps watching the key it holds and reports its delete', async () => {
    const key = `${prefix()}held`;
    const watch = listen(await compactedOwnKey(key));
    // Time for the compacted watch to fail and be started again after a read: no loss meanwhile.
    expect(await stillPending(watch.loss, 250)).toBe(true);
    const deleted = await etcd.delete(key);
    expect(await watch.loss).toEqual({ revision: deleted.header.revision });
    watch.close();
  });

  it('from a compacted revision, reports a key re-created meanwhile as lost at the read', async () => {
    const key = `${prefix()}recreated`;
    const own = await compactedOwnKey(key);
    await etcd.delete(key);
    const again = await etcd.put(key, '');
    const watch = listen(own);
    const loss = await watch.loss;
    expect(loss.error).toBeUndefined();
    expect(loss.revision).toBeGreaterThanOrEqual(again.header.revision);
    watch.close();
  });
});
