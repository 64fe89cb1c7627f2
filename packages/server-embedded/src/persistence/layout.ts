// The files of a data dir:
//
//   member.json                   the member and cluster ids, written once when the dir is created
//   wal-<first sequence>.log      log segments (see log-format.ts), named by their first record
//   snap-<last sequence>.snap     the latest snapshot (see snapshot-file.ts)
//   *.tmp                         a snapshot or member file being written; left over by a crash
//   lock                          the pid of the process using the dir
//
// Sequence numbers are zero-padded to 16 digits so that names sort in sequence order. Nothing
// else belongs in a data dir: any other entry is another program's data (see foreignEntries).
import type { Dirent } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { join } from 'node:path';

/** The file holding the member and cluster ids. */
export const MEMBER_FILE = 'member.json';
/** The lock file. */
export const LOCK_FILE = 'lock';
/** Suffix of files being written. */
export const TEMPORARY_SUFFIX = '.tmp';

const SEGMENT = /^wal-(\d{16})\.log$/;
const SNAPSHOT = /^snap-(\d{16})\.snap$/;

/** Name of the segment whose first record has `sequence`. */
export function segmentName(sequence: number): string {
  return `wal-${pad(sequence)}.log`;
}

/** Name of the snapshot covering the records up to `sequence`. */
export function snapshotName(sequence: number): string {
  return `snap-${pad(sequence)}.snap`;
}

/** The sequence number in a segment's name, or undefined for any other file. */
export function segmentSequence(name: string): number | undefined {
  const match = SEGMENT.exec(name);
  return match === null ? undefined : Number(match[1]);
}

/** The sequence number in a snapshot's name, or undefined for any other file. */
export function snapshotSequence(name: string): number | undefined {
  const match = SNAPSHOT.exec(name);
  return match === null ? undefined : Number(match[1]);
}

/** True for a name this server writes into a data dir (any file of the layout above). */
function isOwnFile(name: string): boolean {
  const base = name.endsWith(TEMPORARY_SUFFIX) ? name.slice(0, -TEMPORARY_SUFFIX.length) : name;
  return (
    base === MEMBER_FILE ||
    base === LOCK_FILE ||
    segmentSequence(base) !== undefined ||
    snapshotSequence(base) !== undefined
  );
}

/**
 * The entries of a data dir that this server did not write (directories with a trailing `/`),
 * sorted: a directory that has any holds someone else's data and must not be written to.
 */
export function foreignEntries(entries: readonly Dirent[]): string[] {
  return entries
    .filter((entry) => !(entry.isFile() && isOwnFile(entry.name)))
    .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
    .sort();
}

/**
 * Makes the directory's entries durable: a file just created or renamed is only sure to be found
 * after a crash once its directory was synced too.
 */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes `bytes` to `name` in `directory` atomically: a temporary file, synced, then renamed. */
export async function writeFileAtomically(
  directory: string,
  name: string,
  bytes: Uint8Array,
): Promise<void> {
  const temporary = join(directory, `${name}${TEMPORARY_SUFFIX}`);
  const handle = await open(temporary, 'w');
  try {
    await writeAll(handle, bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, join(directory, name));
  await syncDirectory(directory);
}

/** Writes every byte (a write may take fewer bytes than given). */
export async function writeAll(
  handle: { write(buffer: Uint8Array): Promise<{ bytesWritten: number }> },
  bytes: Uint8Array,
): Promise<void> {
  let written = 0;
  while (written < bytes.length) {
    const { bytesWritten } = await handle.write(bytes.subarray(written));
    written += bytesWritten;
  }
}

function pad(sequence: number): string {
  return String(sequence).padStart(16, '0');
}
