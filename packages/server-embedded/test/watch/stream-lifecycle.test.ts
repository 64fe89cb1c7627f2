// How watch streams end, and that nothing of them is left behind in the server.
import { startTcpProxy } from '@etcdkit/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';
import { b } from '../support/bytes.js';
import { kv } from '../support/kv.js';
import { specBackend, startTestServer, type TestServer } from '../support/test-server.js';
import { put, WatchConnection } from './watch-client.js';

/** Waits until `condition` holds (the server sees a client's cancel asynchronously). */
async function eventually(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe(`Watch stream lifecycle [${specBackend}]`, () => {
  let server: TestServer;
  let api: ReturnType<typeof kv>;
  let connection: WatchConnection;

  beforeEach(async () => {
    server = await startTestServer();
    api = kv(server);
    connection = new WatchConnection(server.endpoint);
  });
  afterEach(async () => {
    connection.close();
    await server.stop();
  });

  /** Watchers the embedded server holds; undefined on a real etcd. */
  const watchers = () => server.embedded?.watchable.size;

  it('a half-closed stream keeps delivering events', async () => {
    const stream = connection.open();
    stream.create({ key: b('a') });
    await stream.take(1);
    stream.end();
    await api.put('a', '1');
    expect(await stream.next()).toEqual({
      revision: 2,
      watchId: 0,
      events: [put('a', '1', 2, 2, 1)],
    });
  });

  it('a stream the client cancels leaves no watcher behind', async () => {
    const stream = connection.open();
    const other = connection.open();
    await api.put('a', '1');
    stream.create({ key: b('a') });
    stream.create({ key: b('a'), startRevision: 2n, progressNotify: true });
    stream.create({ key: b('a'), startRevision: 100n });
    other.create({ key: b('a') });
    await stream.take(3);
    await other.take(1);
    if (watchers() === undefined) return;
    expect(watchers()).toBe(4);
    stream.cancelStream();
    await eventually(() => watchers() === 1);
    await api.put('a', '2');
    expect(await other.next()).toMatchObject({ revision: 3, watchId: 0 });
  });

  it('a dropped connection leaves no watcher behind', async () => {
    const proxy = await startTcpProxy(server.endpoint);
    const proxied = new WatchConnection(proxy.endpoint);
    try {
      const stream = proxied.open();
      for (let i = 0; i < 100; i++) stream.create({ key: b(`k${i}`), rangeEnd: b(`k${i}z`) });
      await stream.take(100);
      expect(watchers() ?? 100).toBe(100);
      proxy.cutAll();
      await eventually(() => stream.error !== undefined);
      await eventually(() => (watchers() ?? 0) === 0);
    } finally {
      proxied.close();
      await proxy.close();
    }
  });

  it('10,000 watches on one stream: created in order, events to the right one, all removed at the end', async () => {
    const stream = connection.open();
    const count = 10_000;
    for (let i = 0; i < count; i++) stream.create({ key: b(`key/${i}`) });
    const created = await stream.take(count, 60_000);
    expect(created.map((response) => Number(response.watchId))).toEqual(
      Array.from({ length: count }, (_, i) => i),
    );
    await api.put('key/4242', 'x');
    expect(await stream.next()).toEqual({
      revision: 2,
      watchId: 4242,
      events: [put('key/4242', 'x', 2, 2, 1)],
    });
    if (watchers() === undefined) return;
    expect(watchers()).toBe(count);
    stream.cancelStream();
    await eventually(() => watchers() === 0);
  });
});

describe('Watch streams when the embedded server stops', () => {
  it('open streams end with an error and every watcher is removed', async () => {
    const server = await EmbeddedEtcd.start();
    const connection = new WatchConnection(server.endpoint);
    const stream = connection.open();
    stream.create({ key: b('a'), progressNotify: true });
    stream.create({ key: b('b'), startRevision: 1n });
    await stream.take(2);
    expect(server.watchable.size).toBe(2);
    await server.stop();
    expect(server.watchable.size).toBe(0);
    await eventually(() => stream.error !== undefined);
    connection.close();
  });
});
