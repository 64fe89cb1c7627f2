// Snapshot integrity and atomic snapshot files: the stream ends with the database SHA-256, checked
// here and passed on with the data, so written files restore with etcdctl (docs/operations.md).
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { EtcdError, type EtcdErrorInit } from '../errors.js';
import { GrpcStatus } from '../transport/types.js';

/** Length of the SHA-256 digest etcd appends to a snapshot. */
export const SNAPSHOT_DIGEST_BYTES = 32;

/**
 * The snapshot's bytes do not match the SHA-256 digest the server appended, or the stream ended
 * before the digest: the data was corrupted or truncated on the way. Nothing written from it can be
 * trusted.
 */
export class SnapshotIntegrityError extends EtcdError {
  constructor(message: string, init?: Omit<EtcdErrorInit, 'message'>) {
    super('SNAPSHOT_INTEGRITY', GrpcStatus.DataLoss, message, init);
  }
}

/**
 * Passes snapshot chunks through while hashing them, and checks the trailing digest when the
 * stream ends. Chunks are yielded as they arrive except those that may hold digest bytes, which are
 * held back and yielded only once the digest matched, together with the data chunk before them: a
 * consumer of a corrupt stream never receives the whole database.
 */
export async function* verifySnapshot(
  chunks: AsyncIterable<Uint8Array>,
): AsyncGenerator<Uint8Array, void, undefined> {
  const hash = createHash('sha256');
  // Keep back the chunks that may hold the digest's 32 bytes plus one byte of data, so a corrupt
  // stream never hands out a whole database file (without its digest it would look valid).
  const held: Uint8Array[] = [];
  let heldBytes = 0;
  for await (const chunk of chunks) {
    if (chunk.length === 0) continue;
    held.push(chunk);
    heldBytes += chunk.length;
    while (held.length > 1 && heldBytes - held[0]!.length > SNAPSHOT_DIGEST_BYTES) {
      const safe = held.shift()!;
      heldBytes -= safe.length;
      hash.update(safe);
      yield safe;
    }
  }
  if (heldBytes < SNAPSHOT_DIGEST_BYTES) {
    throw new SnapshotIntegrityError(
      `snapshot stream ended after ${heldBytes} trailing bytes, before its ${SNAPSHOT_DIGEST_BYTES}-byte SHA-256 digest`,
    );
  }
  const tail = Buffer.concat(held);
  const dataEnd = tail.length - SNAPSHOT_DIGEST_BYTES;
  hash.update(tail.subarray(0, dataEnd));
  const expected = tail.subarray(dataEnd);
  const actual = hash.digest();
  if (!timingSafeEqual(actual, expected)) {
    throw new SnapshotIntegrityError(
      `snapshot SHA-256 mismatch: the server sent ${expected.toString('hex')}, the data hashes to ${actual.toString('hex')}`,
    );
  }
  yield* held;
}

/** Where and how large a written snapshot file is. */
export interface SnapshotFile {
  /** The file's path, as given. */
  readonly path: string;
  /** Bytes written: the database followed by its 32-byte SHA-256 digest. */
  readonly size: number;
}

/**
 * Writes chunks to `path` atomically: to a temporary file in the same directory, flushed to disk,
 * then renamed over `path`. On any failure (including a failed integrity check) the temporary file
 * is removed and `path` is left untouched. The file is created readable by its owner only, since a
 * snapshot holds every key and the auth store.
 */
export async function writeSnapshotFile(
  path: string,
  chunks: AsyncIterable<Uint8Array>,
): Promise<SnapshotFile> {
  const directory = dirname(path);
  const temporary = join(directory, `.${basename(path)}.${randomUUID()}.part`);
  const file = await open(temporary, 'wx', 0o600);
  let size = 0;
  try {
    for await (const chunk of chunks) {
      let offset = 0;
      while (offset < chunk.length) {
        const { bytesWritten } = await file.write(chunk, offset, chunk.length - offset);
        offset += bytesWritten;
      }
      size += chunk.length;
    }
    await file.sync();
    await file.close();
    await rename(temporary, path);
  } catch (error) {
    await file.close().catch(() => {});
    await rm(temporary, { force: true });
    throw error;
  }
  await syncDirectory(directory);
  return { path, size };
}

// Makes the rename itself durable. Directories cannot be opened for fsync everywhere (Windows);
// there the rename is as durable as the platform makes it.
async function syncDirectory(directory: string): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(directory, 'r');
    await handle.sync();
  } catch {
    // Best effort only: the snapshot file itself is already flushed.
  } finally {
    await handle?.close().catch(() => {});
  }
}
