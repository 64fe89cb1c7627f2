// Conformance against etcd: the Watch service, one raw stream
// per test, every response compared whole (numbers and text, default fields left out).
import { afterEach, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { op } from '../support/kv.js';
import {
  del,
  NODELETE,
  NOPUT,
  put,
  WatchConnection,
  type WatchStreamClient,
} from '../watch/watch-client.js';
import { atLeast } from './fresh-server.js';
import { describeConformance } from './suite.js';

const DUPLICATE_ID = 'mvcc: duplicate watch ID provided on the WatchStream';
const EMPTY_RANGE = 'mvcc: watcher range is empty';
const COMPACTED = 'etcdserver: mvcc: required revision has been compacted';
const MB = 1_000_000;

describeConformance('Watch (34-44)', ({ fresh }) => {
  const connections: WatchConnection[] = [];
  afterEach(() => {
    for (const connection of connections.splice(0)) connection.close();
  });

  /** A fresh server and a watch stream on it. */
  async function watching() {
    const server = await fresh();
    const connection = new WatchConnection(server.endpoint);
    connections.push(connection);
    return { ...server, stream: connection.open(), connection };
  }

  /** A watch on every key. */
  const everything = (stream: WatchStreamClient, extra: object = {}) =>
    stream.create({ key: b('\0'), rangeEnd: b('\0'), ...extra });

  it('34 watch created on a fresh store (id 0, revision 1), with a full header', async () => {
    const { stream, api } = await watching();
    stream.create({ key: b('a') });
    const [created] = await stream.take(1);
    expect([created!.created, created!.watchId, created!.canceled, created!.cancelReason]).toEqual([
      true,
      0n,
      false,
      '',
    ]);
    const range = await api.range('a');
    expect(created!.header).toEqual({ ...range.header, revision: 1n });
  });

  it('34 watch ids: auto ids count up from 0 per stream, skip ids in use, and are not reused after a cancel', async () => {
    const { stream, connection } = await watching();
    stream.create({ key: b('a'), watchId: 1n });
    stream.create({ key: b('a') });
    stream.create({ key: b('a') });
    stream.cancel(0);
    stream.create({ key: b('a') });
    expect(await stream.nextMany(5)).toEqual([
      { revision: 1, watchId: 1, created: true },
      { revision: 1, watchId: 0, created: true },
      { revision: 1, watchId: 2, created: true },
      { revision: 1, watchId: 0, canceled: true },
      { revision: 1, watchId: 3, created: true },
    ]);
    const other = connection.open();
    other.create({ key: b('a') });
    expect(await other.next()).toEqual({ revision: 1, watchId: 0, created: true });
  });

  it('35 watch event shapes: a create PUT has no prev_kv; a DELETE kv holds only key and mod_revision', async () => {
    const { stream, api } = await watching();
    everything(stream, { prevKv: true });
    await stream.take(1);
    await api.put('a', '1'); // 2
    await api.put('a', '2'); // 3
    await api.del('a'); // 4
    const previous = { key: 'a', value: '2', create: 2, mod: 3, version: 2, lease: 0n };
    expect(await stream.nextMany(3)).toEqual([
      { revision: 2, watchId: 0, events: [put('a', '1', 2, 2, 1)] },
      {
        revision: 3,
        watchId: 0,
        events: [put('a', '2', 2, 3, 2, { ...previous, value: '1', mod: 2, version: 1 })],
      },
      { revision: 4, watchId: 0, events: [del('a', 4, previous)] },
    ]);
  });

  it('36 history replay then live: history in one response at the current revision, then one response per revision', async () => {
    const { stream, api } = await watching();
    await api.put('a', '1'); // 2
    await api.put('b', '1'); // 3
    await api.del('a'); // 4
    everything(stream, { startRevision: 2n });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 4, watchId: 0, created: true },
      {
        revision: 4,
        watchId: 0,
        events: [put('a', '1', 2, 2, 1), put('b', '1', 3, 3, 1), del('a', 4)],
      },
    ]);
    await api.put('c', '1'); // 5
    await api.txn({ success: [op.put('d', '1'), op.del('b')] }); // 6
    expect(await stream.nextMany(2)).toEqual([
      { revision: 5, watchId: 0, events: [put('c', '1', 5, 5, 1)] },
      { revision: 6, watchId: 0, events: [put('d', '1', 6, 6, 1), del('b', 6)] },
    ]);
  });

  it('36 history replay: batches of at most 1000 revisions, each at the current revision', async () => {
    const { stream, api } = await watching();
    for (let i = 0; i < 1001; i++) await api.put('a', `${i}`); // 2..1002
    stream.create({ key: b('a'), startRevision: 2n });
    const [created, first, second] = await stream.nextMany(3, 20_000);
    expect(created).toEqual({ revision: 1002, watchId: 0, created: true });
    expect(first?.revision).toBe(1002);
    expect(first?.events?.map((event) => event.kv?.mod)).toEqual(
      Array.from({ length: 1000 }, (_, i) => i + 2),
    );
    expect(second).toEqual({
      revision: 1002,
      watchId: 0,
      events: [put('a', '1000', 2, 1002, 1001)],
    });
  });

  it('37 future start: created at once, events only from the start revision on', async () => {
    const { stream, api } = await watching();
    stream.create({ key: b('a'), startRevision: 3n });
    expect(await stream.next()).toEqual({ revision: 1, watchId: 0, created: true });
    await api.put('a', '1'); // 2
    await api.put('a', '2'); // 3
    expect(await stream.next()).toEqual({
      revision: 3,
      watchId: 0,
      events: [put('a', '2', 2, 3, 2)],
    });
  });

  it('38 bad range / duplicate id: created and canceled with id -1 and the mvcc reason', async () => {
    const { stream, api } = await watching();
    stream.create({ key: b('b'), rangeEnd: b('a') });
    stream.create({ key: b('b'), rangeEnd: b('b') });
    stream.create({ key: b('a'), watchId: 7n });
    stream.create({ key: b('b'), watchId: 7n });
    const refused = { revision: 1, watchId: -1, created: true, canceled: true };
    expect(await stream.nextMany(4)).toEqual([
      { ...refused, cancelReason: EMPTY_RANGE },
      { ...refused, cancelReason: EMPTY_RANGE },
      { revision: 1, watchId: 7, created: true },
      { ...refused, cancelReason: DUPLICATE_ID },
    ]);
    // Refused creates take no id; the first watch 7 goes on.
    stream.create({ key: b('a') });
    expect(await stream.next()).toEqual({ revision: 1, watchId: 0, created: true });
    await api.put('a', '1');
    const events = await stream.nextMany(2);
    expect(events.map((response) => response.watchId).sort()).toEqual([0, 7]);
  });

  it('38 negative start: created and canceled with id -1 and the compacted reason (etcd 3.5.24+ and 3.6.6+; 3.4 takes it as 0)', async (context) => {
    const { stream, version } = await watching();
    const refused = atLeast(version, 3, 6) ? atLeast(version, 3, 6, 6) : atLeast(version, 3, 5, 24);
    if (!refused && atLeast(version, 3, 5)) context.skip(`etcd ${version} predates the refusal`);
    stream.create({ key: b('a'), startRevision: -1n });
    expect(await stream.next()).toEqual(
      refused
        ? { revision: 1, watchId: -1, created: true, canceled: true, cancelReason: COMPACTED }
        : { revision: 1, watchId: 0, created: true },
    );
  });

  it('39 compacted start: created, then {canceled, compact_revision} without a reason', async () => {
    const { stream, api } = await watching();
    await api.put('a', '1'); // 2
    await api.put('a', '2'); // 3
    await api.put('a', '3'); // 4
    await api.compact(3);
    stream.create({ key: b('a'), startRevision: 2n });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 4, watchId: 0, created: true },
      { revision: 0, watchId: 0, canceled: true, compactRevision: 3 },
    ]);
    // Starting exactly at the compaction revision is fine.
    stream.create({ key: b('a'), startRevision: 3n });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 4, watchId: 1, created: true },
      { revision: 4, watchId: 1, events: [put('a', '2', 2, 3, 2), put('a', '3', 2, 4, 3)] },
    ]);
  });

  it('39 compacted start at a delete: from the compaction revision, 3.5+ replays the delete recorded there, 3.4 does not', async () => {
    const { stream, api, version } = await watching();
    await api.put('a', '1'); // 2
    await api.put('b', '1'); // 3
    await api.del('a'); // 4
    // Physical: 3.4 drops the delete's record when its compaction runs in the background, and
    // replays it to a watch that comes first.
    await api.compact(4, true);
    await api.put('c', '1'); // 5
    everything(stream, { startRevision: 4n });
    const created = { revision: 5, watchId: 0, created: true };
    const later = put('c', '1', 5, 5, 1);
    expect(await stream.nextMany(2)).toEqual([
      created,
      { revision: 5, watchId: 0, events: atLeast(version, 3, 5) ? [del('a', 4), later] : [later] },
    ]);
  });

  it('40 cancel (and unknown id): {watch_id, canceled} at the current revision; an unknown id gets nothing', async () => {
    const { stream, api } = await watching();
    stream.cancel(42);
    stream.create({ key: b('a') });
    stream.create({ key: b('a'), watchId: 9n });
    expect(await stream.nextMany(2)).toEqual([
      { revision: 1, watchId: 0, created: true },
      { revision: 1, watchId: 9, created: true },
    ]);
    await api.put('a', '1'); // 2
    await stream.take(2);
    stream.cancel(0);
    expect(await stream.next()).toEqual({ revision: 2, watchId: 0, canceled: true });
    await api.put('a', '2'); // 3
    expect(await stream.next()).toEqual({
      revision: 3,
      watchId: 9,
      events: [put('a', '2', 2, 3, 2)],
    });
    stream.cancel(0);
    expect(await stream.drain(200)).toEqual([]);
  });

  it('41 filters: NOPUT and NODELETE drop those events; nothing is sent when all are dropped', async () => {
    const { stream, api } = await watching();
    everything(stream, { filters: [NOPUT], watchId: 1n });
    everything(stream, { filters: [NODELETE], watchId: 2n });
    await stream.take(2);
    await api.put('a', '1'); // 2
    expect(await stream.next()).toEqual({
      revision: 2,
      watchId: 2,
      events: [put('a', '1', 2, 2, 1)],
    });
    await api.del('a'); // 3
    expect(await stream.next()).toEqual({ revision: 3, watchId: 1, events: [del('a', 3)] });
    await api.txn({ success: [op.put('c', '1'), op.del('x')] }); // 4: a put only
    expect(await stream.next()).toEqual({
      revision: 4,
      watchId: 2,
      events: [put('c', '1', 4, 4, 1)],
    });
    expect(await stream.drain(200)).toEqual([]);
  });

  it('42 prev_kv: on DELETE and non-create PUT, read at mod_revision - 1; left out if compacted', async () => {
    const { stream, api } = await watching();
    await api.put('a', '1'); // 2
    await api.put('a', '2'); // 3
    await api.put('a', '3'); // 4
    await api.compact(3);
    stream.create({ key: b('a'), startRevision: 3n, prevKv: true });
    const atThree = { key: 'a', value: '2', create: 2, mod: 3, version: 2, lease: 0n };
    expect(await stream.nextMany(2)).toEqual([
      { revision: 4, watchId: 0, created: true },
      // Revision 2 is compacted: the event at 3 comes without prev_kv.
      {
        revision: 4,
        watchId: 0,
        events: [put('a', '2', 2, 3, 2), put('a', '3', 2, 4, 3, atThree)],
      },
    ]);
    await api.del('a'); // 5
    expect(await stream.next()).toEqual({
      revision: 5,
      watchId: 0,
      events: [del('a', 5, { ...atThree, value: '3', mod: 4, version: 3 })],
    });
  });

  it('43 progress request: with synced watches, one {watch_id: -1} at the current revision', async () => {
    const { stream, api } = await watching();
    await api.put('x', '1'); // 2
    stream.create({ key: b('a') });
    stream.create({ key: b('b'), rangeEnd: b('c') });
    await stream.take(2);
    stream.progress();
    expect(await stream.next()).toEqual({ revision: 2, watchId: -1 });
    expect(await stream.drain(200)).toEqual([]);
  });

  it('43 progress request: none without watches on etcd 3.5.8+ (3.4 answers at once), and after the events sent before it', async () => {
    const { stream, api, version } = await watching();
    stream.progress();
    if (atLeast(version, 3, 5, 8)) expect(await stream.drain(200)).toEqual([]);
    else expect(await stream.nextMany(1)).toEqual([{ revision: 1, watchId: -1 }]);
    stream.create({ key: b('a') });
    await stream.take(1);
    for (let i = 1; i <= 10; i++) await api.put('a', `${i}`); // 2..11
    stream.progress();
    const responses = await stream.nextMany(11);
    expect(responses.map((response) => [response.revision, response.watchId])).toEqual([
      ...Array.from({ length: 10 }, (_, i) => [i + 2, 0]),
      [11, -1],
    ]);
  });

  it('44 fragment: only when asked, past max-request-bytes + 512 KiB, never splitting an event', async () => {
    const { api, connection } = await watching();
    const big = 'x'.repeat(MB);
    for (const value of [big, big, big, 'small']) await api.put('f', value); // 2..5
    const pieces = async (stream: WatchStreamClient, count: number) =>
      (await stream.take(count, 20_000)).map((response) => ({
        revision: Number(response.header?.revision),
        fragment: response.fragment,
        mods: response.events.map((event) => Number(event.kv?.modRevision)),
      }));
    const fragmented = connection.open();
    fragmented.create({ key: b('f'), startRevision: 2n, fragment: true });
    expect(await pieces(fragmented, 3)).toEqual([
      { revision: 5, fragment: false, mods: [] },
      // Two 1 MB events stay under 2 MiB; a third would not.
      { revision: 5, fragment: true, mods: [2, 3] },
      { revision: 5, fragment: false, mods: [4, 5] },
    ]);
    const whole = connection.open();
    whole.create({ key: b('f'), startRevision: 2n });
    expect(await pieces(whole, 2)).toEqual([
      { revision: 5, fragment: false, mods: [] },
      { revision: 5, fragment: false, mods: [2, 3, 4, 5] },
    ]);
  });
});
