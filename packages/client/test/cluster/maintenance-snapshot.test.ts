// Snapshot integrity and atomic files, against a scripted server stream (no etcd needed).
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MaintenanceClient } from '../../src/cluster/maintenance.js';
import { SnapshotIntegrityError, verifySnapshot } from '../../src/cluster/snapshot.js';
import type { Rpc } from '../../src/connection/types.js';
import { UnavailableError } from '../../src/errors.js';
import type { etcdserverpb } from '../../src/generated/protocol.js';
import type { ServerStream } from '../../src/transport/types.js';

type SnapshotResponse = etcdserverpb.SnapshotResponse;

/** An Rpc whose only working call is a server stream replaying `blobs`, then failing if asked. */
function scriptedRpc(blobs: Uint8Array[], failAfter?: Error) {
  const state = { cancelled: false, delivered: 0 };
  const rpc = {
    unary: () => Promise.reject(new Error('not scripted')),
    bidiStream: () => Promise.reject(new Error('not scripted')),
    serverStream: () => {
      const stream: ServerStream<SnapshotResponse> = {
        cancel: () => {
          state.cancelled = true;
        },
        async *[Symbol.asyncIterator]() {
          let remaining = blobs.reduce((n, b) => n + b.length, 0);
          for (const blob of blobs) {
            if (state.cancelled) return;
            remaining -= blob.length;
            state.delivered++;
            yield { blob, remainingBytes: BigInt(remaining) } as SnapshotResponse;
          }
          if (failAfter) throw failAfter;
        },
      };
      return stream;
    },
  } as unknown as Rpc;
  return { rpc, state };
}

const database = Uint8Array.from({ length: 3000 }, (_, i) => (i * 7) % 251);
const digest = new Uint8Array(createHash('sha256').update(database).digest());

/** The database in chunks of `size`, then the digest as its own message, as etcd sends it. */
function etcdChunks(size: number, tail = digest): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < database.length; i += size) chunks.push(database.subarray(i, i + size));
  return [...chunks, tail];
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk);
  return new Uint8Array(Buffer.concat(parts));
}

const whole = new Uint8Array(Buffer.concat([database, digest]));

describe('snapshot integrity', () => {
  it('yields the database followed by its digest when the digest matches', async () => {
    const { rpc } = scriptedRpc(etcdChunks(1024));
    expect(await collect(new MaintenanceClient(rpc).snapshot())).toEqual(whole);
  });

  it('verifies a digest wherever chunk boundaries fall', async () => {
    for (const size of [1, 5, 31, 32, 33, 1000, 3032]) {
      const pieces: Uint8Array[] = [];
      for (let i = 0; i < whole.length; i += size) pieces.push(whole.subarray(i, i + size));
      expect(await collect(verifySnapshot(toAsync(pieces)))).toEqual(whole);
    }
  });

  it('throws SnapshotIntegrityError and withholds the last chunks when a byte is corrupted', async () => {
    const corrupt = etcdChunks(1024);
    corrupt[1] = Uint8Array.from(corrupt[1]!, (b, i) => (i === 10 ? b ^ 1 : b));
    const received: Uint8Array[] = [];
    const consume = async () => {
      for await (const chunk of verifySnapshot(toAsync(corrupt))) received.push(chunk);
    };
    await expect(consume()).rejects.toBeInstanceOf(SnapshotIntegrityError);
    // The digest chunk (and the data chunk before it could complete the file) never reached us.
    expect(received.reduce((n, c) => n + c.length, 0)).toBeLessThan(database.length);
  });

  it('throws SnapshotIntegrityError when the stream ends before a whole digest', async () => {
    const truncated = [database.subarray(0, 20)];
    await expect(collect(verifySnapshot(toAsync(truncated)))).rejects.toThrow(
      /ended after 20 trailing bytes/,
    );
    await expect(collect(verifySnapshot(toAsync([])))).rejects.toBeInstanceOf(
      SnapshotIntegrityError,
    );
  });

  it('throws SnapshotIntegrityError when the stream is cut between data chunks', async () => {
    const cut = etcdChunks(1024).slice(0, 2);
    await expect(collect(verifySnapshot(toAsync(cut)))).rejects.toBeInstanceOf(
      SnapshotIntegrityError,
    );
  });

  it('cancels the server stream when the consumer stops early', async () => {
    const { rpc, state } = scriptedRpc(etcdChunks(100));
    for await (const _ of new MaintenanceClient(rpc).snapshot()) break;
    expect(state.cancelled).toBe(true);
    expect(state.delivered).toBeLessThan(5);
  });
});

describe('snapshotToFile', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'etcdkit-snapshot-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes the verified bytes and reports their size', async () => {
    const { rpc } = scriptedRpc(etcdChunks(700));
    const path = join(dir, 'backup.db');
    expect(await new MaintenanceClient(rpc).snapshotToFile(path)).toEqual({
      path,
      size: database.length + 32,
    });
    expect(new Uint8Array(await readFile(path))).toEqual(whole);
    expect(await readdir(dir)).toEqual(['backup.db']);
  });

  it('leaves an existing file untouched and no temporary file when the digest mismatches', async () => {
    const path = join(dir, 'backup.db');
    await writeFile(path, 'previous backup');
    const { rpc } = scriptedRpc(etcdChunks(700, new Uint8Array(32)));
    await expect(new MaintenanceClient(rpc).snapshotToFile(path)).rejects.toBeInstanceOf(
      SnapshotIntegrityError,
    );
    expect(await readFile(path, 'utf8')).toBe('previous backup');
    expect(await readdir(dir)).toEqual(['backup.db']);
  });

  it('removes the temporary file when the stream fails midway', async () => {
    const failure = new UnavailableError();
    const { rpc } = scriptedRpc(etcdChunks(700).slice(0, 3), failure);
    await expect(new MaintenanceClient(rpc).snapshotToFile(join(dir, 'x.db'))).rejects.toBe(
      failure,
    );
    expect(await readdir(dir)).toEqual([]);
  });
});

async function* toAsync(chunks: Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* chunks;
}
