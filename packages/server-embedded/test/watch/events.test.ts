// Live event delivery: shapes, one response per revision, ranges, filters, prev_kv, future starts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { grantLease, kv, op } from '../support/kv.js';
import { specBackend, startTestServer, type TestServer } from '../support/test-server.js';
import {
  del,
  NODELETE,
  NOPUT,
  put,
  type ResponseSummary,
  WatchConnection,
  type WatchStreamClient,
} from './watch-client.js';

describe(`Watch events [${specBackend}]`, () => {
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

  /** Responses of several watches in a stable order: etcd orders one revision's by map order. */
  const ordered = (responses: ResponseSummary[]) =>
    responses.sort((x, y) => x.revision - y.revision || x.watchId - y.watchId);

  /** Creates watches and consumes their created replies. */
  async function watch(...requests: Parameters<WatchStreamClient['create']>[0][]) {
    for (const request of requests) stream.create(request);
    await stream.take(requests.length);
  }

  it('put, update and delete events have etcd shapes; a delete kv has only key and mod revision', async () => {
    await watch({ key: b('a') });
    await api.put('a', '1');
    await api.put('a', '2');
    await api.del('a');
    expect(await stream.nextMany(3)).toEqual([
      { revision: 2, watchId: 0, events: [put('a', '1', 2, 2, 1)] },
      { revision: 3, watchId: 0, events: [put('a', '2', 2, 3, 2)] },
      { revision: 4, watchId: 0, events: [del('a', 4)] },
    ]);
  });

  it('the lease of a put is in its event', async () => {
    const lease = await grantLease(server, 0x1234n);
    await watch({ key: b('a') });
    await api.put('a', '1', { lease });
    const [response] = await stream.take(1);
    expect(response!.events[0]!.kv?.lease).toBe(lease);
  });

  it('a txn is one response holding all its matching events in op order', async () => {
    await watch({ key: b('k'), rangeEnd: b('l') });
    await api.put('k2', 'old');
    await stream.take(1);
    await api.txn({
      success: [op.put('k3', 'c'), op.put('x', 'ignored'), op.del('k2'), op.put('k1', 'a')],
    });
    expect(await stream.nextMany(1)).toEqual([
      {
        revision: 3,
        watchId: 0,
        events: [put('k3', 'c', 3, 3, 1), del('k2', 3), put('k1', 'a', 3, 3, 1)],
      },
    ]);
  });

  it('a delete of a range is one response with a delete per key, in key order', async () => {
    await api.put('p/b', '1');
    await api.put('p/a', '2');
    await watch({ key: b('p/'), rangeEnd: b('p0') });
    await api.del('p/', { rangeEnd: b('p0') });
    expect(await stream.next()).toEqual({
      revision: 4,
      watchId: 0,
      events: [del('p/a', 4), del('p/b', 4)],
    });
  });

  it('a range watch sees keys in [key, range_end) only; "\\0" as range end means every key from key', async () => {
    await watch({ key: b('b'), rangeEnd: b('d') }, { key: b('c'), rangeEnd: b('\0') });
    for (const key of ['a', 'b', 'c', 'd', 'e']) await api.put(key, key);
    expect(ordered(await stream.nextMany(5))).toEqual([
      { revision: 3, watchId: 0, events: [put('b', 'b', 3, 3, 1)] },
      { revision: 4, watchId: 0, events: [put('c', 'c', 4, 4, 1)] },
      { revision: 4, watchId: 1, events: [put('c', 'c', 4, 4, 1)] },
      { revision: 5, watchId: 1, events: [put('d', 'd', 5, 5, 1)] },
      { revision: 6, watchId: 1, events: [put('e', 'e', 6, 6, 1)] },
    ]);
  });

  it('every watch of the stream gets its own response for the same revision', async () => {
    await watch({ key: b('a') }, { key: b('a'), rangeEnd: b('b') }, { key: b('b') });
    await api.put('a', '1');
    const responses = await stream.nextMany(2);
    expect(responses.map((r) => r.watchId).sort()).toEqual([0, 1]);
    for (const response of responses) {
      expect(response).toMatchObject({ revision: 2, events: [put('a', '1', 2, 2, 1)] });
    }
    expect(await stream.drain()).toEqual([]);
  });

  it('a write that changes nothing (deleting a missing key) sends nothing', async () => {
    await watch({ key: b('a') });
    await api.del('a');
    await api.put('a', '1');
    expect(await stream.next()).toEqual({
      revision: 2,
      watchId: 0,
      events: [put('a', '1', 2, 2, 1)],
    });
  });

  it('NOPUT drops puts and NODELETE drops deletes; nothing is sent when all events are dropped', async () => {
    await watch(
      { key: b('k'), rangeEnd: b('l'), filters: [NOPUT] },
      { key: b('k'), rangeEnd: b('l'), filters: [NODELETE] },
      { key: b('k'), rangeEnd: b('l'), filters: [NOPUT, NODELETE] },
    );
    await api.put('k1', '1'); // 2
    await api.txn({ success: [op.put('k2', '2'), op.del('k1')] }); // 3
    await api.del('k2'); // 4
    expect(ordered(await stream.nextMany(4))).toEqual([
      { revision: 2, watchId: 1, events: [put('k1', '1', 2, 2, 1)] },
      { revision: 3, watchId: 0, events: [del('k1', 3)] },
      { revision: 3, watchId: 1, events: [put('k2', '2', 3, 3, 1)] },
      { revision: 4, watchId: 0, events: [del('k2', 4)] },
    ]);
    expect(await stream.drain()).toEqual([]);
  });

  it('prev_kv: a create has none; an update and a delete carry the value before them', async () => {
    await watch({ key: b('a'), prevKv: true });
    await api.put('a', '1');
    await api.put('a', '2');
    await api.del('a');
    await api.put('a', '3');
    const v1 = { key: 'a', value: '1', create: 2, mod: 2, version: 1, lease: 0n };
    const v2 = { key: 'a', value: '2', create: 2, mod: 3, version: 2, lease: 0n };
    expect(await stream.nextMany(4)).toEqual([
      { revision: 2, watchId: 0, events: [put('a', '1', 2, 2, 1)] },
      { revision: 3, watchId: 0, events: [put('a', '2', 2, 3, 2, v1)] },
      { revision: 4, watchId: 0, events: [del('a', 4, v2)] },
      { revision: 5, watchId: 0, events: [put('a', '3', 5, 5, 1)] },
    ]);
  });

  it('prev_kv in a txn reads each key as of the revision before the txn', async () => {
    await api.put('a', '1');
    await api.put('b', '1');
    await watch({ key: b('a'), rangeEnd: b('c'), prevKv: true });
    await api.txn({ success: [op.put('a', '2'), op.del('b')] });
    expect(await stream.next()).toEqual({
      revision: 4,
      watchId: 0,
      events: [
        put('a', '2', 2, 4, 2, { key: 'a', value: '1', create: 2, mod: 2, version: 1, lease: 0n }),
        del('b', 4, { key: 'b', value: '1', create: 3, mod: 3, version: 1, lease: 0n }),
      ],
    });
  });

  it('a future start revision delivers nothing until the store reaches it', async () => {
    await watch({ key: b('a'), startRevision: 4n });
    await api.put('a', '1'); // 2
    await api.put('a', '2'); // 3
    await api.put('a', '3'); // 4
    await api.put('a', '4'); // 5
    expect(await stream.nextMany(2)).toEqual([
      { revision: 4, watchId: 0, events: [put('a', '3', 2, 4, 3)] },
      { revision: 5, watchId: 0, events: [put('a', '4', 2, 5, 4)] },
    ]);
  });

  it('start revision current + 1 is live from the next revision', async () => {
    await api.put('a', '1'); // 2
    await watch({ key: b('a'), startRevision: 3n });
    await api.put('a', '2'); // 3
    expect(await stream.next()).toEqual({
      revision: 3,
      watchId: 0,
      events: [put('a', '2', 2, 3, 2)],
    });
  });
});
