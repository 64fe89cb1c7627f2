// What a damaged data dir does at start: a torn tail (the unfinished write of a crash) is cut and
// logged and the server starts with everything before it; damage anywhere else, or in the
// snapshot, refuses the start with an error that says where. And what is acknowledged is on disk.
import { appendFile, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Etcd } from '@etcdkit/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';
import { scanSegment } from '../../src/persistence/log-format.js';
import { captureLog, removeDir, temporaryDir } from './support.js';

describe('a damaged data dir', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await temporaryDir();
  });
  afterEach(async () => {
    await removeDir(dir);
  });

  /** Runs a server on the dir that puts k0..k(count-1) = v0.., then stops it. */
  async function writeKeys(count: number, snapshotCount?: number): Promise<void> {
    const server = await EmbeddedEtcd.start({ dataDir: dir, snapshotCount });
    const etcd = new Etcd({ endpoints: [...server.endpoints] });
    try {
      for (let i = 0; i < count; i++) await etcd.put(`k${i}`, `v${i}`);
    } finally {
      await etcd.close();
      await server.stop();
    }
  }

  async function files(prefix: string): Promise<string[]> {
    return (await readdir(dir)).filter((name) => name.startsWith(prefix)).sort();
  }

  async function keysAfterRestart(): Promise<string[]> {
    const server = await EmbeddedEtcd.start({ dataDir: dir });
    try {
      return server.store
        .range({ key: Buffer.from('k'), end: Buffer.from('l') })
        .kvs.map((kv) => Buffer.from(kv.key).toString());
    } finally {
      await server.stop();
    }
  }

  it('cuts a torn tail, says so in the log, and serves everything before it', async () => {
    await writeKeys(5);
    const segment = join(dir, (await files('wal-')).at(-1)!);
    const intact = (await readFile(segment)).length;
    // Half a record: a length that promises more bytes than there are.
    await appendFile(segment, Buffer.from([0, 0, 1, 0, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0]));
    const log = captureLog();
    const server = await EmbeddedEtcd.start({ dataDir: dir, logger: log.sink });
    try {
      const cut = log.lines.find((line) => line.message === 'cut a torn tail off the data dir log');
      expect(cut).toMatchObject({
        level: 'warn',
        fields: { offset: intact, 'cut-bytes': 11, reason: 'incomplete record' },
      });
      expect(server.store.revision).toBe(6);
      expect((await readFile(segment)).length).toBeGreaterThanOrEqual(intact);
    } finally {
      await server.stop();
    }
    // Cut for good: the next start finds nothing to cut.
    const again = captureLog();
    const next = await EmbeddedEtcd.start({ dataDir: dir, logger: again.sink });
    await next.stop();
    expect(again.lines.some((line) => line.message.startsWith('cut a torn tail'))).toBe(false);
  });

  it('cuts a last record whose checksum fails (written halfway), keeping the ones before', async () => {
    await writeKeys(4);
    const segment = join(dir, (await files('wal-')).at(-1)!);
    const bytes = Buffer.from(await readFile(segment));
    // The last record is the put of k3: as if the crash came while it was being written.
    bytes[bytes.length - 2]! ^= 0xff;
    await writeFile(segment, bytes);
    expect(await keysAfterRestart()).toEqual(['k0', 'k1', 'k2']);
  });

  it('refuses to start when a record in the middle is damaged, naming the file and offset', async () => {
    await writeKeys(6);
    const name = (await files('wal-')).at(-1)!;
    const segment = join(dir, name);
    const bytes = Buffer.from(await readFile(segment));
    // Inside the value of an early record: intact records follow it.
    const at = bytes.indexOf(Buffer.from('v2'));
    bytes[at]! ^= 0x01;
    await writeFile(segment, bytes);
    const failure = EmbeddedEtcd.start({ dataDir: dir });
    await expect(failure).rejects.toMatchObject({ name: 'DataDirCorruptError' });
    await expect(failure).rejects.toThrow(
      new RegExp(`${name}: record checksum mismatch at offset \\d+, followed by intact records`),
    );
    // The refused start released the directory: fixing it lets a server start.
    bytes[at]! ^= 0x01;
    await writeFile(segment, bytes);
    expect(await keysAfterRestart()).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5']);
  });

  it('refuses to start when the snapshot is damaged', async () => {
    await writeKeys(30, 10);
    const snapshot = (await files('snap-')).at(-1)!;
    const bytes = Buffer.from(await readFile(join(dir, snapshot)));
    bytes[bytes.length >> 1]! ^= 0x01;
    await writeFile(join(dir, snapshot), bytes);
    await expect(EmbeddedEtcd.start({ dataDir: dir })).rejects.toThrow(
      `${snapshot}: SHA-256 digest mismatch`,
    );
  });

  it('refuses to start when the snapshot the log continues from is missing', async () => {
    await writeKeys(30, 10);
    await rm(join(dir, (await files('snap-')).at(-1)!));
    await expect(EmbeddedEtcd.start({ dataDir: dir })).rejects.toThrow(
      /records 1 to \d+ are missing/,
    );
  });

  it('has every acknowledged write in the log on disk when its response arrives', async () => {
    const server = await EmbeddedEtcd.start({ dataDir: dir });
    const etcd = new Etcd({ endpoints: [...server.endpoints] });
    try {
      for (let i = 0; i < 20; i++) {
        await etcd.put(`k${i}`, `v${i}`);
        const segment = join(dir, (await files('wal-')).at(-1)!);
        const payloads = scanSegment(await readFile(segment), undefined).records.map((r) =>
          Buffer.from(r.payload).toString('latin1'),
        );
        expect(payloads.some((payload) => payload.includes(`k${i}`))).toBe(true);
      }
    } finally {
      await etcd.close();
      await server.stop();
    }
  });
});
