// Fragmented watch responses: split only when asked, only past max-request-bytes + 512 KiB, only
// between events.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { kv } from '../support/kv.js';
import { specBackend, startTestServer, type TestServer } from '../support/test-server.js';
import { WatchConnection, type WatchStreamClient } from './watch-client.js';

const MB = 1_000_000;

describe(`Watch fragments [${specBackend}] (limit 1.5 MiB + 512 KiB = 2 MiB)`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;
  let connection: WatchConnection;
  let stream: WatchStreamClient;

  beforeEach(async () => {
    server = await startTestServer();
    api = kv(server);
    connection = new WatchConnection(server.endpoint);
    stream = connection.open();
    // Revisions 2..6: three 1 MB values, then two small ones; one history batch holds all five.
    const big = 'x'.repeat(MB);
    for (const value of [big, big, big, 'small', 'small2']) await api.put('f', value);
  });
  afterEach(async () => {
    connection.close();
    await server.stop();
  });

  /** Each response as [fragment flag, mod revisions of its events, prev_kv value sizes]. */
  async function pieces(count: number) {
    const responses = await stream.take(count, 20_000);
    return responses.map((response) => ({
      watchId: Number(response.watchId),
      revision: Number(response.header?.revision),
      fragment: response.fragment,
      mods: response.events.map((event) => Number(event.kv?.modRevision)),
      prev: response.events.map((event) => event.prevKv?.value?.length ?? -1),
    }));
  }

  it('a response over the limit is split between events; all pieces but the last say fragment', async () => {
    stream.create({ key: b('f'), startRevision: 2n, fragment: true });
    expect(await pieces(3)).toEqual([
      { watchId: 0, revision: 6, fragment: false, mods: [], prev: [] },
      // Two 1 MB events stay under 2 MiB; a third would not.
      { watchId: 0, revision: 6, fragment: true, mods: [2, 3], prev: [-1, -1] },
      { watchId: 0, revision: 6, fragment: false, mods: [4, 5, 6], prev: [-1, -1, -1] },
    ]);
  });

  it('prev_kv counts toward the size: each big event then goes alone', async () => {
    stream.create({ key: b('f'), startRevision: 2n, fragment: true, prevKv: true });
    expect(await pieces(5)).toEqual([
      { watchId: 0, revision: 6, fragment: false, mods: [], prev: [] },
      { watchId: 0, revision: 6, fragment: true, mods: [2], prev: [-1] },
      { watchId: 0, revision: 6, fragment: true, mods: [3], prev: [MB] },
      { watchId: 0, revision: 6, fragment: true, mods: [4], prev: [MB] },
      { watchId: 0, revision: 6, fragment: false, mods: [5, 6], prev: [MB, 5] },
    ]);
  });

  it('without fragment the response goes whole, however large', async () => {
    stream.create({ key: b('f'), startRevision: 2n });
    expect(await pieces(2)).toEqual([
      { watchId: 0, revision: 6, fragment: false, mods: [], prev: [] },
      {
        watchId: 0,
        revision: 6,
        fragment: false,
        mods: [2, 3, 4, 5, 6],
        prev: [-1, -1, -1, -1, -1],
      },
    ]);
  });

  it('a response with a single event is never split, even over the limit', async () => {
    stream.create({ key: b('f'), startRevision: 6n, fragment: true, prevKv: true });
    await stream.take(2);
    await api.put('f', 'y'.repeat(MB + 200_000)); // 7, prev_kv 'small2'
    await api.put('f', 'z'.repeat(MB)); // 8, prev_kv of 1.2 MB: 2.2 MB in one event
    const [, last] = await pieces(2);
    expect(last).toEqual({
      watchId: 0,
      revision: 8,
      fragment: false,
      mods: [8],
      prev: [MB + 200_000],
    });
  });
});
