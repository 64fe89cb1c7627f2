// A waiter in a long line whose own key's loss watch already saw the key go (a watch kept by the
// session reports a delete seen before the wait at once): the wait fails with the loss, and the
// turn watch it had opened is closed without an unhandled rejection (one crashed a lock worker).
import { Etcd } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SessionExpiredError } from '../../src/errors.js';
import { type LineRead, type LossWatch, watchForTurn } from '../../src/line/turn.js';

describeEachBackend(
  'a long line wait whose own key was lost before it began',
  ({ backend, prefix }) => {
    let etcd: Etcd;
    beforeAll(() => {
      etcd = new Etcd({ endpoints: backend().endpoints });
    });
    afterAll(() => etcd?.close());

    it('rejects with the loss, closes both watches, and leaves no unhandled rejection', async () => {
      const line = `${prefix()}line/`;
      await etcd.put(`${line}a`, '');
      const own = await etcd.put(`${line}b`, '');
      const ahead = await etcd.get(`${line}a`);
      if (ahead === undefined) throw new Error('the key ahead is missing');
      const read: LineRead = { predecessors: [ahead], complete: false, header: own.header };
      let closed = 0;
      const lostEarly: LossWatch = {
        onLoss: (listener) => listener.lost(own.header.revision + 1n),
        close: () => {
          closed++;
        },
      };
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      try {
        const waiting = watchForTurn(
          etcd,
          {
            prefix: line,
            createRevision: own.header.revision,
            slots: 1,
            ownKey: {
              key: `${line}b`,
              createRevision: own.header.revision,
              seenAt: own.header.revision,
            },
            lossWatch: () => lostEarly,
          },
          read,
          new AbortController().signal,
        );
        const error = await waiting.catch((e: unknown) => e);
        expect(error).toBeInstanceOf(SessionExpiredError);
        expect((error as Error).message).toBe(
          `${line}b was deleted at revision ${own.header.revision + 1n} while waiting (its lease expired or was revoked, or it was deleted)`,
        );
        expect(closed).toBe(1);
        // Rejections nobody handled are reported after the microtasks of the turn that made them.
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setImmediate(resolve));
        expect(unhandled).toEqual([]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
      }
    });
  },
);
