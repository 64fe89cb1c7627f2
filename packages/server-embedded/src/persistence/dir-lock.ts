// One server per data dir: two writers appending to the same log would interleave records and
// ruin it (etcd locks its WAL files for the same reason). Node.js has no file locks, so the lock
// is a file holding the owner's pid, created exclusively. A lock left behind by a process that
// is gone (killed) is taken over; within this process, the set of held directories also refuses a
// second server on the same dir.
import { open, readFile, realpath, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { LOCK_FILE } from './layout.js';

const heldHere = new Set<string>();

/** The data dir is used by another server. */
export class DataDirLockedError extends Error {
  constructor(directory: string, owner: string) {
    super(`data dir ${directory} is in use by ${owner}`);
    this.name = 'DataDirLockedError';
  }
}

/** A held lock on a data dir. */
export interface DirLock {
  /** Releases the lock (removes the lock file). */
  release(): Promise<void>;
}

/** Takes the lock of `directory`, which must exist. */
export async function lockDataDir(directory: string): Promise<DirLock> {
  const key = await realpath(directory);
  if (heldHere.has(key)) throw new DataDirLockedError(directory, 'another server of this process');
  const path = join(directory, LOCK_FILE);
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(path, 'wx');
      try {
        await handle.write(`${process.pid}\n`);
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
      const owner = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(owner) && owner !== process.pid && isAlive(owner)) {
        throw new DataDirLockedError(directory, `process ${owner}`);
      }
      // Left behind by a process that died without releasing it.
      await rm(path, { force: true });
    }
  }
  heldHere.add(key);
  return {
    release: async () => {
      heldHere.delete(key);
      await rm(path, { force: true });
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
