// restart(): the data stays (store, revision, leases, members), clients see a real disconnect and
// reconnect to the same port; watchers resume without losing an event; kept-alive leases survive.
import { createConnection } from 'node:net';
import { Etcd, type WatchBatch } from '@etcdkit/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';
import { waitFor } from '../support/wait-for.js';

describe('EmbeddedEtcd.restart()', () => {
  let server: EmbeddedEtcd;
  let etcd: Etcd;

  beforeEach(async () => {
    server = await EmbeddedEtcd.start();
    etcd = new Etcd({ endpoints: [...server.endpoints] });
  });
  afterEach(async () => {
    await etcd.close();
    await server.stop();
  });

  it('keeps keys, revision, compaction, leases and members, on the same port', async () => {
    await etcd.put('a', '1');
    await etcd.put('b', '2');
    await etcd.compact(2n);
    const lease = await etcd.lease.grant(60);
    await etcd.put('leased', 'x', { lease: lease.id });
    const membersBefore = await etcd.cluster.memberList();

    await server.restart();

    expect(server.endpoint).toBe(`http://127.0.0.1:${server.port}`);
    const page = await etcd.range({ prefix: '' });
    expect(page.header.revision).toBe(4n);
    expect(page.kvs.map((kv) => `${kv.keyText()}=${kv.text()}@${kv.modRevision}`)).toEqual([
      'a=1@2',
      'b=2@3',
      'leased=x@4',
    ]);
    await expect(etcd.get('a', { revision: 1n })).rejects.toThrow(/compacted/);
    const ttl = await etcd.lease.timeToLive(lease.id, { keys: true });
    expect(ttl.keys.map((key) => Buffer.from(key).toString())).toEqual(['leased']);
    const membersAfter = await etcd.cluster.memberList();
    expect(membersAfter.members).toEqual(membersBefore.members);
    expect(membersAfter.header.clusterId).toBe(membersBefore.header.clusterId);
  });

  it('closes every connection: the client sees the disconnect and reconnects', async () => {
    await etcd.put('a', '1');
    expect(server.connectionCount).toBe(1);
    const raw = createConnection({ host: '127.0.0.1', port: server.port });
    // Read what the server sends (its SETTINGS): an unread socket never reports its close.
    raw.resume();
    await new Promise((resolve) => raw.once('connect', resolve));
    const closed = new Promise((resolve) => raw.once('close', resolve));

    await server.restart();

    await closed;
    expect((await etcd.get('a'))?.text()).toBe('1');
    expect(server.connectionCount).toBe(1);
  });

  it('refuses connections while down', async () => {
    const restarted = server.restart({ downtimeMs: 300 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const refused = await new Promise<string>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port: server.port });
      socket.once('connect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    expect(refused).toBe('ECONNREFUSED');
    await restarted;
    expect((await etcd.put('a', '1')).header.revision).toBe(2n);
  });

  it('a watcher resumes across a restart without losing or repeating an event', async () => {
    const seen: string[] = [];
    const watcher = etcd.watch({ prefix: 'w/' });
    watcher.on('batch', (batch: WatchBatch) => {
      for (const event of batch.events) {
        seen.push(`${batch.revision} ${event.type} ${event.kv.keyText()}=${event.kv.text()}`);
      }
    });
    await watcher.ready();
    await etcd.put('w/1', 'before');
    await waitFor(() => seen.length === 1, 5_000, 'the first event');

    await server.restart({ downtimeMs: 50 });
    // Written by another client as soon as the server is back, likely before the watcher has
    // reconnected: the watcher must pick them up from its resume revision.
    const writer = new Etcd({ endpoints: [...server.endpoints] });
    try {
      await writer.put('w/2', 'after');
      await writer.delete('w/1');
      await writer.put('w/3', 'later');
    } finally {
      await writer.close();
    }

    await waitFor(() => seen.length === 4, 10_000, 'every event');
    expect(seen).toEqual([
      '2 put w/1=before',
      '3 put w/2=after',
      '4 delete w/1=',
      '5 put w/3=later',
    ]);
    await watcher.close();
  });

  it('a kept-alive lease survives a short restart, and so does its key', async () => {
    // TTL 6 s: a 500 ms restart plus the reconnect leave the keepalive margin on a loaded machine.
    const ttlMs = 6_000;
    const lease = await etcd.lease.grant(ttlMs / 1000, { keepAlive: true });
    const replies: number[] = [];
    lease.on('keepalive', () => replies.push(Date.now()));
    await etcd.put('session', 'alive', { lease: lease.id });

    const restarted = Date.now();
    await server.restart({ downtimeMs: 500 });
    // Until a keepalive answers more than the TTL after the restart began: only keep-alives over
    // the new connection can hold the lease that long. (A fixed wait raced a loaded CI run.)
    await waitFor(
      () => lease.signal.aborted || replies.some((at) => at > restarted + ttlMs),
      30_000,
      'a keepalive answered one TTL after the restart',
    );

    expect(lease.signal.aborted).toBe(false);
    expect((await etcd.get('session'))?.text()).toBe('alive');
    const ttl = await etcd.lease.timeToLive(lease.id);
    expect(ttl.ttl).toBeGreaterThan(0n);
    await lease.revoke();
  }, 60_000);

  it('gives every lease its full TTL again, as a restarted etcd leader does', async () => {
    const virtual = await EmbeddedEtcd.start({ clock: 'virtual' });
    const client = new Etcd({ endpoints: [...virtual.endpoints] });
    try {
      const lease = await client.lease.grant(10);
      await client.put('k', 'v', { lease: lease.id });
      await virtual.clock.advance(8_000);
      await virtual.restart();
      await virtual.clock.advance(8_000);
      expect((await client.get('k'))?.text()).toBe('v');
      await virtual.clock.advance(2_500);
      expect(await client.get('k')).toBeUndefined();
    } finally {
      await client.close();
      await virtual.stop();
    }
  });

  it('after stop() it rejects, and a stop during the downtime leaves the port closed', async () => {
    const restarted = server.restart({ downtimeMs: 200 });
    await server.stop();
    await restarted;
    await expect(server.restart()).rejects.toThrow('the server is stopped');
    expect(server.connectionCount).toBe(0);
    const code = await new Promise<string>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port: server.port });
      socket.once('connect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    expect(code).toBe('ECONNREFUSED');
  });
});
