// dropConnections(): every live connection is destroyed at once while the server keeps listening;
// clients reconnect, watchers resume from where they were.
import { createConnection } from 'node:net';
import { Etcd, type WatchBatch } from '@etcdkit/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';
import { waitFor } from '../support/wait-for.js';

describe('EmbeddedEtcd.dropConnections()', () => {
  let server: EmbeddedEtcd;

  beforeEach(async () => {
    server = await EmbeddedEtcd.start();
  });
  afterEach(async () => {
    await server.stop();
  });

  it('destroys every connection, counts them, and keeps listening', async () => {
    const first = new Etcd({ endpoints: [...server.endpoints] });
    const second = new Etcd({ endpoints: [...server.endpoints] });
    try {
      await first.put('a', '1');
      await second.get('a');
      expect(server.connectionCount).toBe(2);

      expect(server.dropConnections()).toBe(2);
      expect(server.connectionCount).toBe(0);

      // Reads are retried on the new connection.
      expect((await first.get('a'))?.text()).toBe('1');
      expect((await second.get('a'))?.text()).toBe('1');
      expect(server.connectionCount).toBe(2);
      expect(server.dropConnections()).toBe(2);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('ends a raw TCP connection that has not spoken HTTP/2 yet', async () => {
    const socket = createConnection({ host: '127.0.0.1', port: server.port });
    // Read what the server sends (its SETTINGS): an unread socket never reports its close.
    socket.resume();
    await new Promise((resolve) => socket.once('connect', resolve));
    await waitFor(() => server.connectionCount === 1, 2_000, 'the server to see the connection');
    const closed = new Promise((resolve) => socket.once('close', resolve));
    expect(server.dropConnections()).toBe(1);
    await closed;
  });

  it('a watcher resumes after its connection is dropped, without losing an event', async () => {
    const watching = new Etcd({ endpoints: [...server.endpoints] });
    let writer = new Etcd({ endpoints: [...server.endpoints] });
    try {
      const seen: string[] = [];
      let resumed = 0;
      const watcher = watching.watch({ prefix: 'w/' });
      watcher.on('batch', (batch: WatchBatch) => {
        for (const event of batch.events) seen.push(`${batch.revision} ${event.kv.keyText()}`);
      });
      watcher.on('resumed', () => resumed++);
      await watcher.ready();
      await writer.put('w/1', 'x');
      await waitFor(() => seen.length === 1, 5_000, 'the first event');

      server.dropConnections();
      // A fresh client: a put on a dropped connection may fail with an unknown outcome.
      await writer.close();
      writer = new Etcd({ endpoints: [...server.endpoints] });
      await writer.put('w/2', 'x');
      await writer.put('w/3', 'x');

      await waitFor(() => seen.length === 3, 10_000, 'the events written meanwhile');
      expect(seen).toEqual(['2 w/1', '3 w/2', '4 w/3']);
      expect(resumed).toBe(1);
      await watcher.close();
    } finally {
      await watching.close();
      await writer.close();
    }
  });
});
