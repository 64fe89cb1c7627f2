// A data dir that holds another program's data is refused before anything is written into it: a
// real etcd's data dir (member/wal, member/snap) reused with etcd's flags must not come up empty,
// nor get our files mixed into its own.
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Etcd } from '@etcdkit/client';
import { startEtcd } from '@etcdkit/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataDirForeignError, EmbeddedEtcd } from '../../src/index.js';
import { removeDir, temporaryDir } from './support.js';

/** Every path under `dir`, relative, sorted (directories end with `/`). */
async function tree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .map((entry) => {
      const path = join(entry.parentPath, entry.name).slice(dir.length + 1);
      return entry.isDirectory() ? `${path}/` : path;
    })
    .sort();
}

describe('a data dir with files that are not ours', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await temporaryDir();
  });
  afterEach(async () => {
    await removeDir(dir);
  });

  it("refuses a real etcd's data dir, naming member/, and leaves it as etcd wrote it", async () => {
    const etcd = await startEtcd();
    try {
      const client = new Etcd({ endpoints: [...etcd.endpoints] });
      await client.put('written-by', 'etcd');
      await client.close();
      await etcd.kill();
      const before = await tree(etcd.dataDir);
      expect(before).toContain('member/wal/');
      expect(before).toContain('member/snap/');

      const start = EmbeddedEtcd.start({ dataDir: etcd.dataDir });
      await expect(start).rejects.toThrow(DataDirForeignError);
      await expect(start).rejects.toThrow(
        `data dir ${etcd.dataDir} holds files that are not etcdkit-server's (member/): it looks like a real etcd's data dir (member/); etcdkit-server cannot read etcd's files; refusing to start and writing nothing into it (give an empty or new directory)`,
      );
      expect(await tree(etcd.dataDir)).toEqual(before);

      // etcd still finds its data where it left it.
      await etcd.restart();
      const again = new Etcd({ endpoints: [...etcd.endpoints] });
      expect((await again.get('written-by'))?.text()).toBe('etcd');
      await again.close();
    } finally {
      await etcd.stop();
    }
  });

  it('refuses any other file or directory, listing what it found', async () => {
    await writeFile(join(dir, 'notes.txt'), 'mine');
    await mkdir(join(dir, 'cache'));
    const error = await EmbeddedEtcd.start({ dataDir: dir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataDirForeignError);
    expect((error as DataDirForeignError).entries).toEqual(['cache/', 'notes.txt']);
    expect((error as Error).message).toContain(
      "holds files that are not etcdkit-server's (cache/, notes.txt): it is not an etcdkit-server data dir",
    );
    expect(await tree(dir)).toEqual(['cache/', 'notes.txt']);
  });

  it('opens its own data dir again, and an empty one', async () => {
    const first = await EmbeddedEtcd.start({ dataDir: dir });
    const client = new Etcd({ endpoints: [...first.endpoints] });
    await client.put('k', 'v');
    await client.close();
    await first.stop();
    const second = await EmbeddedEtcd.start({ dataDir: dir });
    try {
      expect(second.store.range({ key: Buffer.from('k') }).kvs).toHaveLength(1);
    } finally {
      await second.stop();
    }
  });
});
