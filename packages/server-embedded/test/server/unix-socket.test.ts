// listenClientUrls with a unix socket: served like an http URL (the same connection handoff),
// advertised as given, its file removed on stop; a stale socket file is replaced, a live one or any
// other file is not.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd } from '@etcdkit/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClientUrlError, EmbeddedEtcd } from '../../src/index.js';

const text = (b: Uint8Array | null | undefined) => new TextDecoder().decode(b ?? new Uint8Array());

describe('unix socket client URLs', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'etcdkit-unix-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('serves a unix socket next to a TCP port, advertises it, and removes its file on stop', async () => {
    const socket = join(dir, 'etcd.sock');
    const server = await EmbeddedEtcd.start({
      listenClientUrls: [`unix://${socket}`, 'http://127.0.0.1:0'],
    });
    try {
      expect(server.endpoint).toBe(`unix://${socket}`);
      expect(server.port).toBe(0);
      expect(server.endpoints[1]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(existsSync(socket)).toBe(true);
      const overUnix = new Etcd({ endpoints: [server.endpoint] });
      const overTcp = new Etcd({ endpoints: [server.endpoints[1]!] });
      try {
        const put = await overUnix.put('k', 'over unix');
        const got = await overTcp.get('k');
        expect(text(got?.value)).toBe('over unix');
        expect(got?.modRevision).toBe(put.header.revision);
        const members = await overUnix.cluster.memberList();
        expect(members.members.map((m) => m.clientUrls)).toEqual([server.endpoints]);
      } finally {
        await overUnix.close();
        await overTcp.close();
      }
    } finally {
      await server.stop();
    }
    expect(existsSync(socket)).toBe(false);
  });

  it('replaces a stale socket file nothing answers on', async () => {
    const socket = join(dir, 'stale.sock');
    // A socket file left behind by a process that exited while listening.
    execFileSync(process.execPath, [
      '-e',
      "require('node:net').createServer().listen(process.argv[1], () => process.exit(0))",
      socket,
    ]);
    expect(existsSync(socket)).toBe(true);
    const server = await EmbeddedEtcd.start({ listenClientUrls: [`unix://${socket}`] });
    try {
      const client = new Etcd({ endpoints: [server.endpoint] });
      try {
        await client.put('k', 'v');
        expect(text((await client.get('k'))?.value)).toBe('v');
      } finally {
        await client.close();
      }
    } finally {
      await server.stop();
    }
  });

  it('refuses a socket another server listens on, and a path that is no socket', async () => {
    const live = join(dir, 'live.sock');
    const other = createServer();
    await new Promise<void>((resolve) => other.listen({ path: live }, resolve));
    try {
      await expect(EmbeddedEtcd.start({ listenClientUrls: [`unix://${live}`] })).rejects.toThrow(
        /EADDRINUSE/,
      );
      expect(existsSync(live)).toBe(true);
    } finally {
      await new Promise((resolve) => other.close(resolve));
    }
    const file = join(dir, 'plain-file');
    await writeFile(file, 'not a socket');
    await expect(EmbeddedEtcd.start({ listenClientUrls: [`unix://${file}`] })).rejects.toThrow(
      /EADDRINUSE/,
    );
    expect(existsSync(file)).toBe(true);
  });

  it.each([
    ['unix://', /expected unix:\/\/\/absolute\/path/],
    ['unix:///', /expected unix:\/\/\/absolute\/path/],
    ['unixs:///tmp/etcd.sock', /unixs .* is not served/],
  ])('refuses %s', async (url, message) => {
    const start = EmbeddedEtcd.start({ listenClientUrls: [url] });
    await expect(start).rejects.toThrow(ClientUrlError);
    await expect(EmbeddedEtcd.start({ listenClientUrls: [url] })).rejects.toThrow(message);
  });
});
