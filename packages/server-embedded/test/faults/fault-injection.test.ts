// Fault injection as a raw gRPC client sees it: injected failures before or after the request is
// applied, delays, a pause that holds calls and responses in order, a leader change in headers.
import {
  etcdserverpb_KV as KV,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd, GrpcCode } from '../../src/index.js';
import { b } from '../support/bytes.js';
import { RawClient, status } from '../support/grpc-client.js';
import { WatchConnection } from '../watch/watch-client.js';

describe('fault injection', () => {
  let server: EmbeddedEtcd;
  let client: RawClient;

  beforeEach(async () => {
    server = await EmbeddedEtcd.start();
    client = new RawClient(server.endpoint);
  });
  afterEach(async () => {
    server.faults.clear();
    client.close();
    await server.stop();
  });

  const put = (key: string, value = 'v') => client.unary(KV.Put, { key: b(key), value: b(value) });

  it('failNext refuses the next calls of a method before the server sees them', async () => {
    server.faults.failNext('Put', { code: GrpcCode.UNAVAILABLE, count: 2 });
    await expect(put('a')).rejects.toMatchObject(
      status(GrpcCode.UNAVAILABLE, 'etcdserver: request timed out'),
    );
    await expect(put('a')).rejects.toMatchObject({ code: GrpcCode.UNAVAILABLE });
    expect(server.store.revision).toBe(1);
    // Other methods are not affected, and the third put goes through.
    expect((await client.unary(KV.Range, { key: b('a') })).count).toBe(0n);
    expect((await put('a')).header?.revision).toBe(2n);
  });

  it('failNext with afterApply applies the request and answers the failure instead', async () => {
    server.faults.failNext('KV/Put', {
      code: GrpcCode.UNAVAILABLE,
      message: 'etcdserver: leader changed',
      afterApply: true,
    });
    await expect(put('a', 'applied')).rejects.toMatchObject(
      status(GrpcCode.UNAVAILABLE, 'etcdserver: leader changed'),
    );
    const read = await client.unary(KV.Range, { key: b('a') });
    expect(new TextDecoder().decode(read.kvs[0]!.value ?? undefined)).toBe('applied');
  });

  it('names methods by name, service/name or full path, and refuses unknown names', () => {
    expect(() =>
      server.faults.failNext('/etcdserverpb.KV/Txn', { code: GrpcCode.INTERNAL }),
    ).not.toThrow();
    expect(() => server.faults.delay(5, ['Range', 'Lease/LeaseGrant'])).not.toThrow();
    expect(() => server.faults.failNext('Putt', { code: GrpcCode.INTERNAL })).toThrow(
      'no gRPC method is named "Putt"',
    );
  });

  it('a failing stream method ends the stream as it opens', async () => {
    server.faults.failNext('Watch', {
      code: GrpcCode.UNAVAILABLE,
      message: 'etcdserver: no leader',
    });
    const connection = new WatchConnection(server.endpoint);
    try {
      const stream = connection.open();
      stream.create({ key: b('a') });
      await expect(stream.next(5_000)).rejects.toThrow(
        'stream ended: 14 UNAVAILABLE: etcdserver: no leader',
      );
    } finally {
      connection.close();
    }
  });

  it('delay holds the calls of the methods named, and removing it ends it', async () => {
    // Told apart by the order of answers, not by a clock: the held Range answers last.
    const cancel = server.faults.delay(5_000, 'Range');
    const order: string[] = [];
    const started = performance.now();
    const held = client.unary(KV.Range, { key: b('a') }).then(() => {
      order.push('held range');
      return performance.now() - started;
    });
    await put('a');
    order.push('put');
    cancel();
    await client.unary(KV.Range, { key: b('a') });
    order.push('range after cancel');
    expect(await held).toBeGreaterThanOrEqual(4_990);
    expect(order).toEqual(['put', 'range after cancel', 'held range']);
  });

  it('pause answers nothing and applies nothing until resume, then everything in order', async () => {
    const connection = new WatchConnection(server.endpoint);
    try {
      const stream = connection.open();
      stream.create({ key: b('k') });
      expect((await stream.next()).created).toBe(true);
      server.faults.pause();
      expect(server.faults.paused).toBe(true);
      const answers: string[] = [];
      const first = put('k', '1').then((r) => answers.push(`put 1 at ${r.header?.revision}`));
      const second = put('k', '2').then((r) => answers.push(`put 2 at ${r.header?.revision}`));
      // A change the server makes on its own while paused: the watcher hears of it only later.
      const write = server.store.write();
      write.put(b('k'), b('0'), 0n);
      write.end();
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(answers).toEqual([]);
      expect(server.store.revision).toBe(2);
      expect(await stream.drain(100)).toEqual([]);
      server.faults.resume();
      await Promise.all([first, second]);
      expect(answers).toEqual(['put 1 at 3', 'put 2 at 4']);
      const events = await stream.nextMany(3);
      expect(events.map((e) => e.revision)).toEqual([2, 3, 4]);
    } finally {
      connection.close();
    }
  });

  it('changeLeader raises the raft term of every header from then on', async () => {
    expect((await put('a')).header?.raftTerm).toBe(2n);
    expect(server.faults.changeLeader()).toBe(3);
    expect((await put('a')).header?.raftTerm).toBe(3n);
    expect((await client.unary(Maintenance.Status, {})).raftTerm).toBe(3n);
  });
});
