// Watch creation and cancellation on one stream: ids, created replies, refused creates, cancel.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { kv } from '../support/kv.js';
import {
  specBackend,
  startTestServer,
  type TestServer,
  versionAtLeast,
} from '../support/test-server.js';
import { put, WatchConnection, type WatchStreamClient } from './watch-client.js';

const DUPLICATE_ID = 'mvcc: duplicate watch ID provided on the WatchStream';
const EMPTY_RANGE = 'mvcc: watcher range is empty';
const COMPACTED = 'etcdserver: mvcc: required revision has been compacted';

describe(`Watch create and cancel [${specBackend}]`, () => {
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

  it('the first watch on a fresh store is created with id 0 at revision 1', async () => {
    stream.create({ key: b('a') });
    const [created] = await stream.take(1);
    expect(created!.created).toBe(true);
    expect(created!.watchId).toBe(0n);
    expect(created!.canceled).toBe(false);
    expect(created!.cancelReason).toBe('');
    // The header is a full one, with the cluster fields a Range response carries.
    const range = await api.range('a');
    expect(created!.header).toEqual({ ...range.header, revision: 1n });
  });

  it('auto ids count up from 0 and are not reused after a cancel', async () => {
    stream.create({ key: b('a') });
    stream.create({ key: b('a') });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 1, watchId: 0, created: true },
      { revision: 1, watchId: 1, created: true },
    ]);
    stream.cancel(1);
    expect(await stream.next()).toEqual({ revision: 1, watchId: 1, canceled: true });
    stream.create({ key: b('a') });
    expect(await stream.next()).toEqual({ revision: 1, watchId: 2, created: true });
  });

  it('a client-chosen id is used as given, and auto ids skip it', async () => {
    stream.create({ key: b('a'), watchId: 1n });
    stream.create({ key: b('a'), watchId: -5n });
    stream.create({ key: b('a') });
    stream.create({ key: b('a') });
    expect(await stream.nextMany(4)).toEqual([
      { revision: 1, watchId: 1, created: true },
      { revision: 1, watchId: -5, created: true },
      { revision: 1, watchId: 0, created: true },
      { revision: 1, watchId: 2, created: true },
    ]);
  });

  it('a duplicate id is refused: created and canceled, id -1, with the mvcc reason', async () => {
    stream.create({ key: b('a'), watchId: 7n });
    stream.create({ key: b('b'), watchId: 7n });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 1, watchId: 7, created: true },
      { revision: 1, watchId: -1, created: true, canceled: true, cancelReason: DUPLICATE_ID },
    ]);
    // The first watch 7 still works.
    await api.put('a', '1');
    expect(await stream.next()).toEqual({
      revision: 2,
      watchId: 7,
      events: [put('a', '1', 2, 2, 1)],
    });
  });

  it('ids are per stream: another stream starts again from 0', async () => {
    stream.create({ key: b('a') });
    await stream.take(1);
    const other = connection.open();
    other.create({ key: b('a') });
    expect(await other.next()).toEqual({ revision: 1, watchId: 0, created: true });
  });

  it('a range end at or below the key is refused with "watcher range is empty"', async () => {
    stream.create({ key: b('b'), rangeEnd: b('a') });
    stream.create({ key: b('b'), rangeEnd: b('b') });
    const refused = { revision: 1, watchId: -1, created: true, canceled: true };
    expect(await stream.nextMany(2)).toEqual([
      { ...refused, cancelReason: EMPTY_RANGE },
      { ...refused, cancelReason: EMPTY_RANGE },
    ]);
    // A refused create takes no id.
    stream.create({ key: b('a') });
    expect(await stream.next()).toEqual({ revision: 1, watchId: 0, created: true });
  });

  it('a negative start revision is refused with the compacted reason (etcd 3.5.24+, 3.6.6+)', async (context) => {
    if (!versionAtLeast(server.version, 3, 5)) {
      context.skip(`etcd ${server.version} treats a negative start revision as 0`);
    }
    stream.create({ key: b('a'), startRevision: -1n });
    expect(await stream.next()).toEqual({
      revision: 1,
      watchId: -1,
      created: true,
      canceled: true,
      cancelReason: COMPACTED,
    });
  });

  it('created replies come in request order, each with the current revision', async () => {
    await api.put('x', '1');
    for (let i = 0; i < 50; i++) stream.create({ key: b(`k${i}`), watchId: BigInt(100 + i) });
    const replies = await stream.nextMany(50);
    expect(replies).toEqual(
      Array.from({ length: 50 }, (_, i) => ({ revision: 2, watchId: 100 + i, created: true })),
    );
  });

  it('an empty key means "\\0": with range end "\\0" it watches every key', async () => {
    stream.create({ key: new Uint8Array(0), rangeEnd: b('\0') });
    await stream.take(1);
    await api.put('\0', 'nul');
    await api.put('zzz', 'z');
    expect(await stream.nextMany(2)).toEqual([
      { revision: 2, watchId: 0, events: [put('\0', 'nul', 2, 2, 1)] },
      { revision: 3, watchId: 0, events: [put('zzz', 'z', 3, 3, 1)] },
    ]);
  });

  it('an empty key without range end watches the single key "\\0"', async () => {
    stream.create({ key: new Uint8Array(0) });
    await stream.take(1);
    await api.put('a', '1');
    await api.put('\0', 'nul');
    expect(await stream.next()).toEqual({
      revision: 3,
      watchId: 0,
      events: [put('\0', 'nul', 3, 3, 1)],
    });
  });

  it('cancel replies {watch_id, canceled} with the current revision and ends the events', async () => {
    stream.create({ key: b('a') });
    stream.create({ key: b('a'), watchId: 9n });
    await stream.take(2);
    await api.put('a', '1');
    await stream.take(2);
    stream.cancel(0);
    const [canceled] = await stream.take(1);
    expect(canceled!.canceled).toBe(true);
    expect(canceled!.created).toBe(false);
    expect(canceled!.cancelReason).toBe('');
    expect(canceled!.compactRevision).toBe(0n);
    expect(canceled!.events).toEqual([]);
    expect(canceled!.watchId).toBe(0n);
    expect(canceled!.header?.revision).toBe(2n);
    await api.put('a', '2');
    // Only watch 9 is left.
    expect(await stream.next()).toEqual({
      revision: 3,
      watchId: 9,
      events: [put('a', '2', 2, 3, 2)],
    });
  });

  it('canceling an unknown id gets no reply', async () => {
    stream.cancel(42);
    stream.create({ key: b('a') });
    // The next reply is the created one: the cancel was answered with nothing.
    expect(await stream.next()).toEqual({ revision: 1, watchId: 0, created: true });
    stream.cancel(0);
    stream.cancel(0);
    expect(await stream.next()).toEqual({ revision: 1, watchId: 0, canceled: true });
    expect(await stream.drain()).toEqual([]);
  });

  it('a canceled id can be chosen again', async () => {
    stream.create({ key: b('a'), watchId: 3n });
    stream.cancel(3);
    stream.create({ key: b('a'), watchId: 3n });
    expect(await stream.nextMany(3)).toEqual([
      { revision: 1, watchId: 3, created: true },
      { revision: 1, watchId: 3, canceled: true },
      { revision: 1, watchId: 3, created: true },
    ]);
  });

  it('an empty request is ignored and the stream goes on', async () => {
    stream.call.write({});
    stream.create({ key: b('a') });
    expect(await stream.next()).toEqual({ revision: 1, watchId: 0, created: true });
  });
});
