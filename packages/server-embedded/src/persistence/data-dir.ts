// A data dir: the journal of a server that keeps its state on disk (see journal.ts for the model,
// layout.ts for the files). Opening it reads everything back: the latest snapshot, then the log
// segments, checking every record; a torn tail (the unfinished last write of a crash) is cut and
// logged, anything else damaged refuses the start. recover() then hands the snapshot and records
// to the registered states, and from there on every change is appended to the log and made
// durable (group commit) before the server acknowledges it. Every `snapshotCount` records a
// snapshot of all states is written and the log before it removed.
import { mkdir, readdir, readFile, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServerLogger } from '../logger.js';
import { MalformedDataError } from './binary.js';
import { type DirLock, lockDataDir } from './dir-lock.js';
import type { AppendRecord, PersistentState, StateJournal } from './journal.js';
import {
  foreignEntries,
  MEMBER_FILE,
  segmentSequence,
  snapshotName,
  snapshotSequence,
  TEMPORARY_SUFFIX,
  writeFileAtomically,
} from './layout.js';
import { encodeRecord, type LogRecord, scanSegment } from './log-format.js';
import { LogWriter, type LogWriterStats } from './log-writer.js';
import { type DataSnapshot, decodeDataSnapshot, encodeDataSnapshot } from './snapshot-file.js';

/** Records between two snapshots by default. */
export const DEFAULT_SNAPSHOT_COUNT = 10_000;

/** The ids a data dir belongs to; a restarted member keeps them whatever its options say. */
export interface MemberIds {
  readonly clusterId: bigint;
  readonly memberId: bigint;
}

/** Options of {@link DataDir.open}. */
export interface DataDirOptions {
  /** The directory; created if missing. */
  readonly path: string;
  /** The ids to record when the directory holds no member yet. */
  readonly newMember: MemberIds;
  /** Records between two snapshots (etcd's --snapshot-count). Default {@link DEFAULT_SNAPSHOT_COUNT}. */
  readonly snapshotCount?: number;
  /** False: one fsync per record instead of group commit (for benchmarks). Default true. */
  readonly groupCommit?: boolean;
  readonly logger: ServerLogger;
}

/** The data dir cannot be loaded as it is: damaged, or written by something else. */
export class DataDirCorruptError extends Error {
  constructor(directory: string, detail: string, options?: { cause?: unknown }) {
    super(
      `data dir ${directory} is damaged: ${detail}; refusing to start (restore the directory from a backup, or remove it to start empty)`,
      options,
    );
    this.name = 'DataDirCorruptError';
  }
}

/**
 * The directory holds files this server did not write: another program's data (a real etcd's
 * `member/` tree, say). It is refused before anything is written into it.
 */
export class DataDirForeignError extends Error {
  /** What the directory holds that is not this server's (directories end with `/`). */
  readonly entries: readonly string[];

  constructor(directory: string, entries: readonly string[]) {
    const shown = entries.slice(0, 5).join(', ') + (entries.length > 5 ? ', ...' : '');
    // etcd keeps everything under member/ (member/wal, member/snap): name it when that is the case.
    const whose = entries.includes('member/')
      ? "it looks like a real etcd's data dir (member/); etcdkit-server cannot read etcd's files"
      : 'it is not an etcdkit-server data dir';
    super(
      `data dir ${directory} holds files that are not etcdkit-server's (${shown}): ${whose}; refusing to start and writing nothing into it (give an empty or new directory)`,
    );
    this.name = 'DataDirForeignError';
    this.entries = entries;
  }
}

/** A segment read back, in sequence order. */
interface ReadSegment {
  readonly name: string;
  readonly firstSequence: number;
  readonly records: LogRecord[];
}

/** The journal of a server with a data dir. */
export class DataDir implements StateJournal {
  readonly persistent = true;
  /** The directory. */
  readonly path: string;
  /** The member and cluster ids of the directory. */
  readonly ids: MemberIds;
  /** True when the directory held no state before this start. */
  readonly fresh: boolean;
  readonly #logger: ServerLogger;
  readonly #snapshotCount: number;
  readonly #lock: DirLock;
  readonly #writer: LogWriter;
  readonly #states = new Map<string, PersistentState>();
  #snapshot: DataSnapshot | undefined;
  #records: LogRecord[];
  #replayed = 0;
  #recovering = true;
  #sinceSnapshot: number;
  #snapshotting: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  private constructor(init: {
    options: DataDirOptions;
    ids: MemberIds;
    fresh: boolean;
    lock: DirLock;
    writer: LogWriter;
    snapshot: DataSnapshot | undefined;
    records: LogRecord[];
  }) {
    this.path = init.options.path;
    this.#logger = init.options.logger;
    this.#snapshotCount = Math.max(1, init.options.snapshotCount ?? DEFAULT_SNAPSHOT_COUNT);
    this.ids = init.ids;
    this.fresh = init.fresh;
    this.#lock = init.lock;
    this.#writer = init.writer;
    this.#snapshot = init.snapshot;
    this.#records = init.records;
    this.#sinceSnapshot = init.records.length;
  }

  /** Opens (or creates) a data dir and reads it back; see the file comment. */
  static async open(options: DataDirOptions): Promise<DataDir> {
    const directory = options.path;
    await mkdir(directory, { recursive: true });
    // Before the lock file: nothing may be written into a directory that is not ours.
    const foreign = foreignEntries(await readdir(directory, { withFileTypes: true }));
    if (foreign.length > 0) throw new DataDirForeignError(directory, foreign);
    const lock = await lockDataDir(directory);
    try {
      return await DataDir.#read(options, lock);
    } catch (error) {
      await lock.release();
      throw error;
    }
  }

  static async #read(options: DataDirOptions, lock: DirLock): Promise<DataDir> {
    const directory = options.path;
    const corrupt = (detail: string, cause?: unknown): DataDirCorruptError =>
      new DataDirCorruptError(directory, detail, cause === undefined ? undefined : { cause });
    const names = (await readdir(directory)).sort();
    // Files a crash left half-written; the complete ones were renamed into place.
    for (const name of names.filter((n) => n.endsWith(TEMPORARY_SUFFIX))) {
      await rm(join(directory, name), { force: true });
    }
    const segments = names.filter((n) => segmentSequence(n) !== undefined);
    const snapshots = names.filter((n) => snapshotSequence(n) !== undefined);
    let ids = await readMemberIds(directory).catch((error: unknown) => {
      throw corrupt(`${MEMBER_FILE} is unreadable`, error);
    });
    const fresh = ids === undefined && segments.length === 0 && snapshots.length === 0;
    if (ids === undefined) {
      if (!fresh) throw corrupt(`a log or snapshot but no ${MEMBER_FILE}`);
      ids = options.newMember;
      await writeFileAtomically(directory, MEMBER_FILE, encodeMemberIds(ids));
    }

    // The latest snapshot only: older ones are removed once a newer one is on disk.
    const latest = snapshots.at(-1);
    let snapshot: DataSnapshot | undefined;
    if (latest !== undefined) {
      try {
        snapshot = decodeDataSnapshot(await readFile(join(directory, latest)));
      } catch (error) {
        throw corrupt(`${latest}: ${(error as Error).message}`, error);
      }
      if (snapshot.sequence !== snapshotSequence(latest)) {
        throw corrupt(`${latest} holds sequence ${snapshot.sequence}`);
      }
    }
    const covered = snapshot?.sequence ?? 0;

    const read: ReadSegment[] = [];
    for (const [index, name] of segments.entries()) {
      const firstSequence = segmentSequence(name)!;
      const next = segments[index + 1];
      // Every record of a segment followed by one starting at or before covered + 1 is in the
      // snapshot: the segment is left over from before it and is not read.
      if (next !== undefined && segmentSequence(next)! <= covered + 1) continue;
      const path = join(directory, name);
      const scanned = scanSegment(await readFile(path), firstSequence);
      const last = index === segments.length - 1;
      if (scanned.damage !== undefined) {
        const { offset, reason, tail } = scanned.damage;
        if (!last || !tail) {
          const where = last ? 'followed by intact records' : 'in a segment that is not the last';
          throw corrupt(`${name}: ${reason} at offset ${offset}, ${where}`);
        }
        // A torn tail: the last write of a crash, never acknowledged. Cut it, and say so (a
        // segment created just before the crash, still empty, held nothing to cut).
        const size = (await readFile(path)).length;
        const log = size === 0 ? options.logger.debug : options.logger.warn;
        log(
          size === 0
            ? 'removed an empty data dir log segment'
            : 'cut a torn tail off the data dir log',
          {
            file: name,
            offset,
            'cut-bytes': size - offset,
            reason,
            'intact-records': scanned.records.length,
          },
        );
        if (scanned.intactBytes === 0) await rm(path);
        else await truncate(path, scanned.intactBytes);
      }
      read.push({
        name: scanned.intactBytes === 0 ? '' : name,
        firstSequence,
        records: scanned.records,
      });
    }

    // The segments must continue the snapshot and each other without a gap.
    let expected = covered + 1;
    const records: LogRecord[] = [];
    for (const segment of read) {
      if (segment.firstSequence > expected) {
        throw corrupt(`records ${expected} to ${segment.firstSequence - 1} are missing`);
      }
      if (segment.records.length === 0) {
        if (segment.firstSequence !== expected) {
          throw corrupt(`empty segment ${segment.name} does not continue the log`);
        }
        continue;
      }
      for (const record of segment.records) {
        if (record.sequence < expected) continue;
        records.push(record);
        expected = record.sequence + 1;
      }
    }
    const lastSequence = expected - 1;
    // Appending goes on in the last segment when it ends exactly there; otherwise a new one starts.
    const tail = read.at(-1);
    const tailEnd = tail === undefined ? undefined : tail.firstSequence + tail.records.length - 1;
    const appendTo =
      tail !== undefined && tail.name !== '' && tailEnd === lastSequence ? tail.name : undefined;
    let dataDir: DataDir | undefined;
    const writer = await LogWriter.open(
      {
        directory,
        groupCommit: options.groupCommit,
        onFailure: (error) => {
          if (dataDir !== undefined) dataDir.#failed(error);
        },
      },
      lastSequence,
      appendTo,
    );
    dataDir = new DataDir({ options, ids, fresh, lock, writer, snapshot, records });
    return dataDir;
  }

  /** Records read back and replayed at the last recovery. */
  get replayedRecords(): number {
    return this.#replayed;
  }

  /** What the log writer did so far. */
  get logStats(): LogWriterStats {
    return this.#writer.stats;
  }

  register(state: PersistentState): AppendRecord {
    if (!this.#recovering) throw new Error(`state ${state.name} registered after recovery`);
    if (this.#states.has(state.name)) throw new Error(`state ${state.name} registered twice`);
    this.#states.set(state.name, state);
    return (record) => this.#append(state.name, record);
  }

  /**
   * Restores every registered state from the snapshot, then replays the records after it, in
   * order. Throws DataDirCorruptError when the data holds a state nobody registered or a record
   * fails to apply. Appends made meanwhile are dropped (they are the replayed changes).
   */
  recover(): void {
    if (!this.#recovering) throw new Error('the data dir was already recovered');
    const fail = (detail: string, cause: unknown): DataDirCorruptError =>
      new DataDirCorruptError(
        this.path,
        `${detail}: ${cause instanceof Error ? cause.message : String(cause)}`,
        { cause },
      );
    const sections = this.#snapshot?.sections ?? new Map<string, Uint8Array>();
    for (const name of sections.keys()) {
      if (!this.#states.has(name)) throw fail(`state '${name}' in the snapshot`, 'unknown state');
    }
    for (const [name, state] of this.#states) {
      const section = sections.get(name);
      if (section === undefined) continue;
      try {
        state.restore(section);
      } catch (error) {
        throw fail(`restoring state '${name}' from the snapshot`, error);
      }
    }
    for (const record of this.#records) {
      const state = this.#states.get(record.state);
      if (state === undefined)
        throw fail(`record ${record.sequence}`, `unknown state '${record.state}'`);
      try {
        state.replay(record.payload);
      } catch (error) {
        const kind = error instanceof MalformedDataError ? 'undecodable' : 'not applicable';
        throw fail(`record ${record.sequence} of state '${record.state}' is ${kind}`, error);
      }
    }
    this.#replayed = this.#records.length;
    // Nothing read back is needed any more.
    this.#snapshot = undefined;
    this.#records = [];
    this.#recovering = false;
  }

  /**
   * Resolves once every record appended so far is on disk; undefined when all are already.
   * Rejects when the log failed (the server must not acknowledge anything then).
   */
  barrier(): Promise<void> | undefined {
    return this.#writer.barrier();
  }

  /** Writes a snapshot now (also done every `snapshotCount` records) and removes the log it covers. */
  async takeSnapshot(): Promise<void> {
    while (this.#snapshotting !== undefined) await this.#snapshotting;
    this.#snapshotting = this.#writeSnapshot().finally(() => {
      this.#snapshotting = undefined;
    });
    return this.#snapshotting;
  }

  /** Flushes the log, waits for a snapshot being written, and releases the directory. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        while (this.#snapshotting !== undefined) await this.#snapshotting.catch(() => {});
        await this.#writer.close();
      } finally {
        await this.#lock.release();
      }
    })();
    return this.#closing;
  }

  #append(state: string, record: Uint8Array): void {
    if (this.#recovering) return;
    if (this.#closing !== undefined) {
      // A change after stop (a late timer): the member is gone, as etcd's would be.
      this.#logger.warn('dropped a change made after the data dir was closed', { state });
      return;
    }
    const sequence = this.#writer.lastSequence + 1;
    this.#writer.append(sequence, encodeRecord(sequence, state, record));
    if (++this.#sinceSnapshot >= this.#snapshotCount && this.#snapshotting === undefined) {
      this.#sinceSnapshot = 0;
      // On the next turn: a snapshot must fall between two whole changes, and this append may be
      // one step of a larger one (the keys of a revoked lease, then the lease).
      this.#snapshotting = new Promise<void>((resolve) => setImmediate(resolve))
        .then(() => this.#writeSnapshot())
        .catch((error: unknown) => {
          this.#logger.error('failed to write a data dir snapshot', {
            error: error instanceof Error ? error.message : String(error),
          });
        })
        .finally(() => {
          this.#snapshotting = undefined;
        });
    }
  }

  async #writeSnapshot(): Promise<void> {
    if (this.#closing !== undefined) return;
    const sequence = this.#writer.lastSequence;
    const sections = new Map<string, Uint8Array>();
    for (const [name, state] of this.#states) sections.set(name, state.snapshot());
    this.#sinceSnapshot = 0;
    this.#writer.startSegment();
    const bytes = encodeDataSnapshot({ sequence, sections });
    // The records it covers reach the disk first: the log must never end before the snapshot.
    await this.#writer.barrier();
    await writeFileAtomically(this.path, snapshotName(sequence), bytes);
    await this.#removeCoveredBy(sequence);
    this.#logger.debug('wrote a data dir snapshot', { sequence, bytes: bytes.length });
  }

  /** Removes older snapshots and the segments whose records are all in the snapshot `sequence`. */
  async #removeCoveredBy(sequence: number): Promise<void> {
    const names = (await readdir(this.path)).sort();
    const segments = names.filter((n) => segmentSequence(n) !== undefined);
    for (const [index, name] of segments.entries()) {
      const next = segments[index + 1];
      if (next !== undefined && segmentSequence(next)! <= sequence + 1) {
        await rm(join(this.path, name), { force: true });
      }
    }
    for (const name of names) {
      const covered = snapshotSequence(name);
      if (covered !== undefined && covered < sequence)
        await rm(join(this.path, name), { force: true });
    }
  }

  #failed(error: Error): void {
    this.#logger.error('the data dir log failed; nothing more is acknowledged', {
      error: error.message,
    });
  }
}

function encodeMemberIds(ids: MemberIds): Uint8Array {
  const json = JSON.stringify({
    format: 1,
    clusterId: ids.clusterId.toString(),
    memberId: ids.memberId.toString(),
  });
  return new TextEncoder().encode(`${json}\n`);
}

async function readMemberIds(directory: string): Promise<MemberIds | undefined> {
  let text: string;
  try {
    text = await readFile(join(directory, MEMBER_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const parsed = JSON.parse(text) as { format?: unknown; clusterId?: unknown; memberId?: unknown };
  if (
    parsed.format !== 1 ||
    typeof parsed.clusterId !== 'string' ||
    typeof parsed.memberId !== 'string'
  ) {
    throw new MalformedDataError(`unexpected contents of ${MEMBER_FILE}`);
  }
  return { clusterId: BigInt(parsed.clusterId), memberId: BigInt(parsed.memberId) };
}
