// Appends framed records to the current log segment and makes them durable. Appending is
// synchronous (it only queues the bytes, in order), so a state change and its record are never
// separated by another change; getting them to disk is asynchronous. With group commit, every
// record appended while a write and fsync are under way goes to disk in the next single write and
// fsync, so concurrent requests share the cost of one fsync; without it, each record gets its own
// (the baseline the benchmark compares against). A response waits on barrier() for everything
// appended before it, which is what "fsync before acknowledging" means here.
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { segmentName, syncDirectory, writeAll } from './layout.js';
import { segmentHeader } from './log-format.js';

/** How the writer makes records durable. */
export interface LogWriterOptions {
  readonly directory: string;
  /**
   * True (the default): records appended while a flush is under way are written and synced
   * together by the next one. False: one write and fsync per record, one after the other.
   */
  readonly groupCommit?: boolean;
  /** Told once when a write or fsync fails; nothing is made durable after that. */
  readonly onFailure?: (error: Error) => void;
}

type QueuedItem =
  | { readonly kind: 'record'; readonly sequence: number; readonly frame: Uint8Array }
  | { readonly kind: 'segment'; readonly firstSequence: number };

interface Waiter {
  readonly sequence: number;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/** Writes, counts and flushes of a writer (for benchmarks and tests). */
export interface LogWriterStats {
  readonly records: number;
  readonly flushes: number;
  readonly bytes: number;
}

/** The appending end of the log. */
export class LogWriter {
  readonly #directory: string;
  readonly #groupCommit: boolean;
  readonly #onFailure: ((error: Error) => void) | undefined;
  #file: FileHandle | undefined;
  /** The current segment was just created: its header and directory entry are not on disk yet. */
  #fresh = false;
  readonly #queue: QueuedItem[] = [];
  #appended: number;
  #durable: number;
  readonly #waiters: Waiter[] = [];
  #flushing: Promise<void> | undefined;
  #failure: Error | undefined;
  #closed = false;
  #counts = { records: 0, flushes: 0, bytes: 0 };

  private constructor(options: LogWriterOptions, lastSequence: number) {
    this.#directory = options.directory;
    this.#groupCommit = options.groupCommit ?? true;
    this.#onFailure = options.onFailure;
    this.#appended = lastSequence;
    this.#durable = lastSequence;
  }

  /**
   * Opens the writer after the records up to `lastSequence`, which are on disk: it appends to the
   * segment `existing` (a file name in the directory), or starts a new segment.
   */
  static async open(
    options: LogWriterOptions,
    lastSequence: number,
    existing: string | undefined,
  ): Promise<LogWriter> {
    const writer = new LogWriter(options, lastSequence);
    if (existing !== undefined) {
      writer.#file = await open(join(options.directory, existing), 'a');
    } else {
      await writer.#createSegment(lastSequence + 1);
    }
    return writer;
  }

  /** Sequence number of the last record appended. */
  get lastSequence(): number {
    return this.#appended;
  }

  /** What was written so far. */
  get stats(): LogWriterStats {
    return { ...this.#counts };
  }

  /** Queues a framed record; it must be the one after the last appended. */
  append(sequence: number, frame: Uint8Array): void {
    if (this.#closed) throw new Error('the data dir log is closed');
    if (sequence !== this.#appended + 1) {
      throw new Error(`log record ${sequence} appended after ${this.#appended}`);
    }
    this.#appended = sequence;
    // Once the disk failed nothing is written again, and nothing is acknowledged (barrier rejects):
    // keeping the bytes would only grow memory.
    if (this.#failure !== undefined) return;
    this.#queue.push({ kind: 'record', sequence, frame });
    this.#scheduleFlush();
  }

  /** Records appended from now on go to a new segment file (the log is being cut at a snapshot). */
  startSegment(): void {
    this.#queue.push({ kind: 'segment', firstSequence: this.#appended + 1 });
    this.#scheduleFlush();
  }

  /**
   * Resolves once every record appended so far is on disk; undefined when they all are already
   * (so that callers can go on synchronously). Rejects if the log failed.
   */
  barrier(): Promise<void> | undefined {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#durable >= this.#appended) return undefined;
    const sequence = this.#appended;
    return new Promise((resolve, reject) => this.#waiters.push({ sequence, resolve, reject }));
  }

  /** Flushes what is queued and closes the segment. */
  async close(): Promise<void> {
    this.#closed = true;
    while (this.#flushing !== undefined) await this.#flushing;
    await this.#file?.close();
    this.#file = undefined;
  }

  #scheduleFlush(): void {
    if (this.#flushing !== undefined || this.#failure !== undefined) return;
    // Started on the next turn of the event loop: requests that arrived together (one socket read
    // carries many) are all appended by then and share the first flush.
    this.#flushing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#flushQueued())
      .catch((error: unknown) =>
        this.#fail(error instanceof Error ? error : new Error(String(error))),
      )
      .finally(() => {
        this.#flushing = undefined;
        // Appended after the loop saw an empty queue, before this ran.
        if (this.#queue.length > 0) this.#scheduleFlush();
      });
  }

  async #flushQueued(): Promise<void> {
    while (this.#queue.length > 0 && this.#failure === undefined) {
      const head = this.#queue[0]!;
      if (head.kind === 'segment') {
        this.#queue.shift();
        await this.#file?.close();
        this.#file = undefined;
        await this.#createSegment(head.firstSequence);
        continue;
      }
      const frames: Uint8Array[] = [];
      let last = this.#durable;
      while (this.#queue[0]?.kind === 'record') {
        const item = this.#queue.shift() as Extract<QueuedItem, { kind: 'record' }>;
        frames.push(item.frame);
        last = item.sequence;
        if (!this.#groupCommit) break;
      }
      await this.#writeAndSync(frames);
      this.#durable = last;
      this.#release();
    }
  }

  async #writeAndSync(frames: Uint8Array[]): Promise<void> {
    const file = this.#file;
    if (file === undefined) throw new Error('no log segment is open');
    const records = frames.length;
    if (this.#fresh) frames.unshift(segmentHeader());
    const bytes = frames.length === 1 ? frames[0]! : Buffer.concat(frames);
    await writeAll(file, bytes);
    await file.datasync();
    if (this.#fresh) {
      // The segment's directory entry must survive a crash as surely as its records.
      await syncDirectory(this.#directory);
      this.#fresh = false;
    }
    this.#counts.flushes++;
    this.#counts.records += records;
    this.#counts.bytes += bytes.length;
  }

  async #createSegment(firstSequence: number): Promise<void> {
    this.#file = await open(join(this.#directory, segmentName(firstSequence)), 'w');
    this.#fresh = true;
  }

  #release(): void {
    while (this.#waiters.length > 0 && this.#waiters[0]!.sequence <= this.#durable) {
      this.#waiters.shift()!.resolve();
    }
  }

  #fail(error: Error): void {
    if (this.#failure !== undefined) return;
    this.#failure = error;
    for (const waiter of this.#waiters.splice(0)) waiter.reject(error);
    this.#onFailure?.(error);
  }
}
