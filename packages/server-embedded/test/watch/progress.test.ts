// Progress over gRPC: WatchProgressRequest and progress_notify (exact tick rules are in
// watch-stream.test.ts, on a clock moved by hand).
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';
import { b } from '../support/bytes.js';
import { kv } from '../support/kv.js';
import {
  specBackend,
  startTestServer,
  type TestServer,
  type TestServerOptions,
} from '../support/test-server.js';
import { put, WatchConnection, type WatchStreamClient } from './watch-client.js';

/** True when `version` is at least major.minor.patch. */
function atLeast(version: string, major: number, minor: number, patch: number): boolean {
  const [a = 0, b = 0, c = 0] = version.split('.').map((part) => Number.parseInt(part, 10));
  return a !== major ? a > major : b !== minor ? b > minor : c >= patch;
}

/** etcd answers progress requests in order with events, and only when synced, from 3.5.8 on. */
const ORDERED_PROGRESS = '3.5.8';

describe(`Watch progress [${specBackend}]`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;
  let connection: WatchConnection;
  let stream: WatchStreamClient;

  async function start(options: TestServerOptions = {}): Promise<void> {
    server = await startTestServer(options);
    api = kv(server);
    connection = new WatchConnection(server.endpoint);
    stream = connection.open();
  }
  afterEach(async () => {
    connection.close();
    await server.stop();
  });

  it('a progress request on a stream with synced watches gets one {watch_id: -1} at the current revision', async () => {
    await start();
    await api.put('x', '1');
    stream.create({ key: b('a') });
    stream.create({ key: b('b'), rangeEnd: b('c') });
    await stream.take(2);
    stream.progress();
    const [progress] = await stream.take(1);
    expect(progress!.watchId).toBe(-1n);
    expect(progress!.header?.revision).toBe(2n);
    expect(progress!.events).toEqual([]);
    expect(progress!.created).toBe(false);
    expect(progress!.canceled).toBe(false);
    expect(await stream.drain()).toEqual([]);
  });

  it(`a progress request on a stream without watches gets no reply from etcd ${ORDERED_PROGRESS} (3.4 answers at once)`, async () => {
    await start();
    stream.progress();
    if (atLeast(server.version, 3, 5, 8)) {
      expect(await stream.drain()).toEqual([]);
    } else {
      expect(await stream.nextMany(1)).toEqual([{ revision: 1, watchId: -1 }]);
    }
  });

  it('a progress reply comes after the events sent before it', async () => {
    await start();
    stream.create({ key: b('a') });
    await stream.take(1);
    for (let i = 1; i <= 20; i++) await api.put('a', `${i}`); // 2..21
    stream.progress();
    const responses = await stream.nextMany(21);
    expect(responses.slice(0, 20).map((r) => r.revision)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 2),
    );
    expect(responses[20]).toEqual({ revision: 21, watchId: -1 });
  });

  it('progress_notify: an idle watch gets {watch_id} with the current revision at each interval', async () => {
    await start({ watchProgressNotifyIntervalMs: 200 });
    await api.put('x', '1'); // 2
    stream.create({ key: b('a'), progressNotify: true, watchId: 5n });
    stream.create({ key: b('a') });
    await stream.take(2);
    expect(await stream.nextMany(2, 5_000)).toEqual([
      { revision: 2, watchId: 5 },
      { revision: 2, watchId: 5 },
    ]);
    await api.put('a', '1'); // 3
    const seen = [];
    while (seen.filter((response) => response.events).length < 2) seen.push(await stream.next());
    const events = seen.filter((response) => response.events).sort((x, y) => x.watchId - y.watchId);
    expect(events).toEqual([
      { revision: 3, watchId: 0, events: [put('a', '1', 3, 3, 1)] },
      { revision: 3, watchId: 5, events: [put('a', '1', 3, 3, 1)] },
    ]);
    // Notifications go on after the event (one tick is skipped), only for the watch that asked.
    const later = await stream.drain(1_000);
    expect(later.length).toBeGreaterThan(0);
    for (const response of later) expect(response).toEqual({ revision: 3, watchId: 5 });
    for (const response of seen.filter((r) => !r.events)) {
      expect(response.watchId).toBe(5);
    }
  });
});

describe('Watch progress on a virtual clock [embedded]', () => {
  it('server.clock.advance() drives progress notifications', async () => {
    const server = await EmbeddedEtcd.start({
      clock: 'virtual',
      watchProgressNotifyIntervalMs: 5_000,
    });
    const connection = new WatchConnection(server.endpoint);
    try {
      const stream = connection.open();
      stream.create({ key: b('a'), progressNotify: true });
      await stream.take(1);
      await server.clock.advance(4_999);
      expect(await stream.drain(100)).toEqual([]);
      await server.clock.advance(1);
      expect(await stream.next()).toEqual({ revision: 1, watchId: 0 });
      // Ten intervals at once: ten notifications, no real time spent.
      await server.clock.advance(50_000);
      expect(await stream.nextMany(10)).toEqual(
        Array.from({ length: 10 }, () => ({ revision: 1, watchId: 0 })),
      );
    } finally {
      connection.close();
      await server.stop();
    }
  });
});
