// Watches from a past revision: history replay in batches, then live delivery; compaction.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { kv, op } from '../support/kv.js';
import {
  specBackend,
  startTestServer,
  type TestServer,
  versionAtLeast,
} from '../support/test-server.js';
import { del, put, WatchConnection, type WatchStreamClient } from './watch-client.js';

describe(`Watch history [${specBackend}]`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;
  let connection: WatchConnection;
  let stream: WatchStreamClient;

  beforeEach(async () => {
    server = await startTestServer();
    api = kv(server);
    connection = new WatchConnection(server.endpoint);
    stream = connection.open();
  });
  afterEach(async () => {
    connection.close();
    await server.stop();
  });

  it('replays history in one response with the current revision, then goes live one revision per response', async () => {
    await api.put('k1', 'v1'); // 2
    await api.put('k1', 'v2'); // 3
    await api.txn({ success: [op.put('k2', 'x'), op.put('k3', 'y')] }); // 4
    await api.put('other', 'o'); // 5
    await api.del('k1'); // 6
    stream.create({ key: b('k'), rangeEnd: b('l'), startRevision: 3n });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 6, watchId: 0, created: true },
      {
        revision: 6,
        watchId: 0,
        events: [
          put('k1', 'v2', 2, 3, 2),
          put('k2', 'x', 4, 4, 1),
          put('k3', 'y', 4, 4, 1),
          del('k1', 6),
        ],
      },
    ]);
    await api.put('k2', 'z'); // 7
    await api.put('k3', 'w'); // 8
    expect(await stream.nextMany(2)).toEqual([
      { revision: 7, watchId: 0, events: [put('k2', 'z', 4, 7, 2)] },
      { revision: 8, watchId: 0, events: [put('k3', 'w', 4, 8, 2)] },
    ]);
  });

  it('a start revision equal to the current one replays that revision', async () => {
    await api.put('a', '1'); // 2
    stream.create({ key: b('a'), startRevision: 2n });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 2, watchId: 0, created: true },
      { revision: 2, watchId: 0, events: [put('a', '1', 2, 2, 1)] },
    ]);
  });

  it('a watch whose history holds no matching event sends nothing but the created reply, then goes live', async () => {
    await api.put('x', '1'); // 2
    await api.put('y', '1'); // 3
    stream.create({ key: b('a'), startRevision: 2n });
    expect(await stream.next()).toEqual({ revision: 3, watchId: 0, created: true });
    await api.put('a', '1'); // 4
    expect(await stream.next()).toEqual({
      revision: 4,
      watchId: 0,
      events: [put('a', '1', 4, 4, 1)],
    });
  });

  it('2,500 revisions replay in batches of 1000, 1000 and 500 revisions, then live', async () => {
    // 2,500 revisions (2..2501), 7 keys in turn; txns of several keys keep a revision together.
    for (let i = 0; i < 2500; i++) {
      if (i % 10 === 9)
        await api.txn({ success: [op.put(`k${i % 7}`, `${i}`), op.put('kz', `${i}`)] });
      else await api.put(`k${i % 7}`, `${i}`);
    }
    stream.create({ key: b('k'), rangeEnd: b('l'), startRevision: 2n });
    stream.create({ key: b('k0'), startRevision: 2n });
    const responses = await stream.take(2 + 3 + 1, 30_000);
    const shape = responses.map((response) => {
      const revisions = response.events.map((event) => Number(event.kv?.modRevision));
      return {
        watchId: Number(response.watchId),
        revision: Number(response.header?.revision),
        created: response.created,
        events: response.events.length,
        distinct: new Set(revisions).size,
        first: revisions[0],
        last: revisions.at(-1),
      };
    });
    const created = shape.filter((s) => s.created);
    expect(created).toEqual([
      {
        watchId: 0,
        revision: 2501,
        created: true,
        events: 0,
        distinct: 0,
        first: undefined,
        last: undefined,
      },
      {
        watchId: 1,
        revision: 2501,
        created: true,
        events: 0,
        distinct: 0,
        first: undefined,
        last: undefined,
      },
    ]);
    const batches = (watchId: number) =>
      shape
        .filter((s) => !s.created && s.watchId === watchId)
        .map(({ revision, events, distinct, first, last }) => ({
          revision,
          events,
          distinct,
          first,
          last,
        }));
    expect(batches(0)).toEqual([
      { revision: 2501, events: 1100, distinct: 1000, first: 2, last: 1001 },
      { revision: 2501, events: 1100, distinct: 1000, first: 1002, last: 2001 },
      { revision: 2501, events: 550, distinct: 500, first: 2002, last: 2501 },
    ]);
    // k0 changed at i = 0, 7, 14, ...: 358 revisions, one batch.
    expect(batches(1)).toEqual([
      { revision: 2501, events: 358, distinct: 358, first: 2, last: 2501 },
    ]);
    await api.put('k1', 'live'); // 2502
    expect(await stream.next()).toMatchObject({ revision: 2502, watchId: 0 });
  });

  it('a start below the compaction revision: created, then canceled with compact_revision and header revision 0', async () => {
    await api.put('a', '1'); // 2
    await api.put('a', '2'); // 3
    await api.put('a', '3'); // 4
    await api.compact(3);
    stream.create({ key: b('a'), startRevision: 2n });
    const [created, canceled] = await stream.take(2);
    expect(created!.created).toBe(true);
    expect(canceled!.header?.revision).toBe(0n);
    expect(canceled!.header?.clusterId).toBe(created!.header?.clusterId);
    expect(canceled!.cancelReason).toBe('');
    expect(canceled!.created).toBe(false);
    expect(canceled!.events).toEqual([]);
    expect(canceled!.watchId).toBe(0n);
    expect(canceled!.canceled).toBe(true);
    expect(canceled!.compactRevision).toBe(3n);
    await api.put('a', '4');
    expect(await stream.drain()).toEqual([]);
  });

  it('a start exactly at the compaction revision replays from it', async () => {
    await api.put('a', '1'); // 2
    await api.put('a', '2'); // 3
    await api.put('a', '3'); // 4
    await api.compact(3);
    stream.create({ key: b('a'), startRevision: 3n, prevKv: true });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 4, watchId: 0, created: true },
      {
        revision: 4,
        watchId: 0,
        events: [
          // prev_kv of revision 3 would be at 2, which is compacted: left out.
          put('a', '2', 2, 3, 2),
          put('a', '3', 2, 4, 3, {
            key: 'a',
            value: '2',
            create: 2,
            mod: 3,
            version: 2,
            lease: 0n,
          }),
        ],
      },
    ]);
  });

  it('a delete at the compaction revision: a watch from there sees it on etcd 3.5+, not on 3.4', async () => {
    await api.put('a', '1'); // 2
    await api.put('b', '1'); // 3
    await api.del('a'); // 4
    await api.put('b', '2'); // 5
    // etcd 3.4 drops the tombstone when the compaction is applied to its backend: wait for that.
    await api.compact(4, true);
    stream.create({ key: b('a'), rangeEnd: b('c'), startRevision: 4n });
    const later = put('b', '2', 3, 5, 2);
    expect(await stream.nextMany(2)).toEqual([
      { revision: 5, watchId: 0, created: true },
      {
        revision: 5,
        watchId: 0,
        events: versionAtLeast(server.version, 3, 5) ? [del('a', 4), later] : [later],
      },
    ]);
  });

  it('a watch canceled by compaction keeps its id until the client cancels it', async () => {
    await api.put('a', '1'); // 2
    await api.put('a', '2'); // 3
    await api.compact(3);
    stream.create({ key: b('a'), startRevision: 2n, watchId: 7n });
    await stream.take(2);
    stream.create({ key: b('a'), watchId: 7n });
    expect(await stream.next()).toMatchObject({ watchId: -1, created: true, canceled: true });
    stream.cancel(7);
    stream.create({ key: b('a'), watchId: 7n });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 3, watchId: 7, canceled: true },
      { revision: 3, watchId: 7, created: true },
    ]);
  });

  it('history and live events are never duplicated or missed across the switch', async () => {
    for (let i = 0; i < 50; i++) await api.put('a', `${i}`); // 2..51
    stream.create({ key: b('a'), startRevision: 2n });
    // Writes race with the catch-up.
    const writes = (async () => {
      for (let i = 50; i < 100; i++) await api.put('a', `${i}`); // 52..101
    })();
    await writes;
    const seen: number[] = [];
    await stream.take(1);
    while (seen.length < 100) {
      const [response] = await stream.take(1);
      for (const event of response!.events) seen.push(Number(event.kv?.modRevision));
    }
    expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => i + 2));
  });
});
