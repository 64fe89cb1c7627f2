// A client that stops reading its watch stream must not hold up writers or other watchers, and must
// get every event, once and in order, when it reads again.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { kv } from '../support/kv.js';
import { specBackend, startTestServer, type TestServer } from '../support/test-server.js';
import { WatchConnection, type WatchStreamClient } from './watch-client.js';

const WRITES = 600;
const VALUE = 'v'.repeat(16 * 1024);

describe(`Watch with a slow reader [${specBackend}]`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;
  let slowConnection: WatchConnection;
  let fastConnection: WatchConnection;

  beforeEach(async () => {
    server = await startTestServer();
    api = kv(server);
    slowConnection = new WatchConnection(server.endpoint);
    fastConnection = new WatchConnection(server.endpoint);
  });
  afterEach(async () => {
    slowConnection.close();
    fastConnection.close();
    await server.stop();
  });

  /** Mod revisions of the events received on `stream` until `count` have arrived. */
  async function revisions(stream: WatchStreamClient, count: number): Promise<number[]> {
    const seen: number[] = [];
    while (seen.length < count) {
      const [response] = await stream.take(1, 30_000);
      for (const event of response!.events) seen.push(Number(event.kv?.modRevision));
    }
    return seen;
  }

  it('writes and another watcher go on while one stream is not read; it catches up later', async () => {
    const slow = slowConnection.open();
    const fast = fastConnection.open();
    slow.create({ key: b('k'), rangeEnd: b('l') });
    fast.create({ key: b('k'), rangeEnd: b('l') });
    await slow.take(1);
    await fast.take(1);
    slow.call.pause();

    // ~10 MB of events: far beyond what HTTP/2 and the stream's queue hold for a reader that stops.
    for (let i = 0; i < WRITES; i++) await api.put(`k${i % 10}`, VALUE);
    const expected = Array.from({ length: WRITES }, (_, i) => i + 2);
    // The other watcher got every revision live, one response each.
    const fastResponses = await fast.take(WRITES, 30_000);
    expect(fastResponses.map((r) => Number(r.header?.revision))).toEqual(expected);
    if (server.embedded !== undefined) {
      // The slow watcher left the synced group: its events now wait in history, not in memory.
      expect(server.embedded.watchable.unsyncedSize).toBe(1);
    }

    slow.call.resume();
    expect(await revisions(slow, WRITES)).toEqual(expected);
    await api.put('k0', 'live');
    const [live] = await slow.take(1);
    expect(Number(live!.header?.revision)).toBe(WRITES + 2);
    if (server.embedded !== undefined) expect(server.embedded.watchable.unsyncedSize).toBe(0);
  });
});
