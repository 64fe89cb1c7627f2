// The logger option: lines of the server's life at info, one per connection at debug.
import { Etcd } from '@etcdkit/client';
import { describe, expect, it } from 'vitest';
import { EmbeddedEtcd, type LogEntry } from '../../src/index.js';
import { formatLogLine } from '../../src/logger.js';
import { waitFor } from '../support/wait-for.js';

describe('logger', () => {
  it('a function receives start, listening, connections at debug, restart and stop', async () => {
    const entries: LogEntry[] = [];
    const server = await EmbeddedEtcd.start({
      name: 'logged',
      logger: (entry) => entries.push(entry),
    });
    const etcd = new Etcd({ endpoints: [...server.endpoints] });
    await etcd.put('k', 'v');
    await server.restart();
    await etcd.close();
    await waitFor(
      () => entries.filter((entry) => entry.message === 'closed client connection').length === 1,
      5_000,
      'the closed connection line',
    );
    await server.stop();

    const address = `127.0.0.1:${server.port}`;
    expect(entries.map((entry) => `${entry.level} ${entry.message}`)).toEqual([
      'info listening for client requests',
      'info started etcd server',
      'info ready to serve client requests',
      'debug accepted client connection',
      'info restarting etcd server',
      'debug closed client connection',
      'info listening for client requests',
      'info ready to serve client requests',
      'info stopping etcd server',
      'info stopped etcd server',
    ]);
    expect(entries[0]!.fields).toEqual({ address, tls: false });
    expect(entries[1]!.fields).toMatchObject({
      name: 'logged',
      'etcd-version': '3.5.30',
      'listen-client-urls': [server.endpoint],
      'advertise-client-urls': [server.endpoint],
    });
    expect(entries[3]!.fields).toMatchObject({ address });
    expect(entries[3]!.fields['remote-addr']).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it("'silent' (the default) and a level below the line's keep it out", async () => {
    const lines: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string) => {
      lines.push(chunk);
      return true;
    }) as typeof process.stderr.write;
    try {
      await (await EmbeddedEtcd.start()).stop();
      await (await EmbeddedEtcd.start({ logger: 'silent' })).stop();
      await (await EmbeddedEtcd.start({ logger: 'warn' })).stop();
    } finally {
      process.stderr.write = write;
    }
    expect(lines).toEqual([]);
  });

  it("a level writes JSON lines to stderr, shaped like etcd's", () => {
    const line = formatLogLine({
      level: 'info',
      time: new Date('2026-01-02T03:04:05.678Z'),
      message: 'ready to serve client requests',
      fields: { endpoints: ['http://127.0.0.1:2379'] },
    });
    expect(JSON.parse(line)).toEqual({
      level: 'info',
      ts: '2026-01-02T03:04:05.678Z',
      msg: 'ready to serve client requests',
      endpoints: ['http://127.0.0.1:2379'],
    });
  });
});
