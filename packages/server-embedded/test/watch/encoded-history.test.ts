// A watch's events are encoded straight to bytes when the watch wants them as they are (no prev_kv,
// no fragments): from history for a catch-up, from the commit's events live; otherwise through
// event objects and protobufjs. Both must put the same bytes on the wire: the same changes,
// watched with the same range and filters, once each way.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MvccStore } from '../../src/mvcc/store.js';
import { WatchStream } from '../../src/watch/watch-stream.js';
import { WatchableStore } from '../../src/watch/watchable-store.js';
import type { WireWatchCreateRequest } from '../../src/watch/wire.js';
import { b } from '../support/bytes.js';
import { FakeCall, ManualClock } from './stream-harness.js';

const change = fc.record({
  key: fc.constantFrom('a', 'b', 'c', 'ba', 'bb', 'd/1', 'd/2'),
  delete: fc.boolean(),
  value: fc.uint8Array({ maxLength: 120 }),
  lease: fc.constantFrom(0n, 7n, 2n ** 62n + 5n),
});

/** Writes `writes` (each a txn of its changes) to a fresh store. */
type Change = { key: string; delete: boolean; value: Uint8Array; lease: bigint };

function storeOf(writes: Change[][], store = new MvccStore()) {
  for (const changes of writes) {
    const write = store.write();
    for (const { key, delete: isDelete, value, lease } of changes) {
      if (isDelete) write.deleteRange({ key: b(key) });
      else write.put(b(key), value, lease);
    }
    write.end();
  }
  return store;
}

/**
 * A stream over a fake call with one watch of `request`; fragments (with a limit nothing reaches)
 * take the object path, without them the encoded one.
 */
function openWatch(watchable: WatchableStore, request: WireWatchCreateRequest): FakeCall {
  const call = new FakeCall();
  const stream = new WatchStream(call, {
    watchable,
    clock: new ManualClock(),
    progressNotifyIntervalMs: 1000,
    fragmentLimitBytes: 2 ** 30,
    header: (revision) => ({
      clusterId: 14841639068965178418n,
      memberId: 3n,
      revision: BigInt(revision),
      raftTerm: 2n,
    }),
  });
  stream.handle({ createRequest: request });
  return call;
}

async function settle(): Promise<void> {
  for (let i = 0; i < 40; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('catch-up encoded from history', () => {
  it('writes the bytes the event objects encode to, batches and filters included', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(change, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 30 }),
        fc.constantFrom(
          { key: 'b', rangeEnd: '' },
          { key: 'b', rangeEnd: 'c' },
          { key: 'a', rangeEnd: '\0' },
          { key: 'd/', rangeEnd: 'd0' },
        ),
        fc.nat({ max: 12 }),
        fc.subarray([0, 1]),
        fc.bigInt({ min: 0n, max: 2n ** 40n }),
        async (writes, range, start, filters, watchId) => {
          const store = storeOf(writes);
          const watchable = new WatchableStore(store, { maxBatchRevisions: 4 });
          const written = async (fragment: boolean): Promise<Uint8Array[]> => {
            const call = openWatch(watchable, {
              key: b(range.key),
              rangeEnd: b(range.rangeEnd),
              startRevision: BigInt(start),
              filters,
              fragment,
              watchId,
            });
            await settle();
            return call.raw;
          };
          const encoded = await written(false);
          const objects = await written(true);
          watchable.close();
          expect(encoded.length).toBeGreaterThan(0);
          expect(encoded.map((bytes) => [...bytes])).toEqual(objects.map((bytes) => [...bytes]));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('live: writes the bytes the event objects encode to', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(change, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 20 }),
        fc.constantFrom({ key: 'b', rangeEnd: '' }, { key: 'a', rangeEnd: '\0' }),
        fc.subarray([0, 1]),
        async (writes, range, filters) => {
          const store = new MvccStore();
          const watchable = new WatchableStore(store);
          const open = (fragment: boolean): FakeCall =>
            openWatch(watchable, {
              key: b(range.key),
              rangeEnd: b(range.rangeEnd),
              filters,
              fragment,
            });
          const encoded = open(false);
          const objects = open(true);
          await settle();
          storeOf(writes, store);
          await settle();
          watchable.close();
          expect(encoded.raw.map((bytes) => [...bytes])).toEqual(
            objects.raw.map((bytes) => [...bytes]),
          );
        },
      ),
      { numRuns: 100 },
    );
  });
  it('live: watchers of the same events, with and without filters, each get their own bytes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(change, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 12 }),
        async (writes) => {
          const store = new MvccStore();
          const watchable = new WatchableStore(store);
          // Every key: the encoded watchers of one commit follow each other in the store's order.
          const open = (fragment: boolean, filters: number[]): FakeCall =>
            openWatch(watchable, { key: b('a'), rangeEnd: b('\0'), filters, fragment });
          const all = [open(false, []), open(false, [0]), open(false, []), open(false, [1])];
          const objects = [open(true, []), open(true, [0]), open(true, []), open(true, [1])];
          await settle();
          storeOf(writes, store);
          await settle();
          watchable.close();
          for (let i = 0; i < all.length; i++) {
            expect(all[i]!.raw.map((bytes) => [...bytes])).toEqual(
              objects[i]!.raw.map((bytes) => [...bytes]),
            );
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
