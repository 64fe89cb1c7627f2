import type { Connection } from '../../src/connection/connection.js';
import type { Rpc } from '../../src/connection/types.js';
import type { EtcdError } from '../../src/errors.js';
import type { etcdserverpb } from '../../src/generated/protocol.js';
import type { WatchBatch, WatchHooks, WatchStreamCloseReason } from '../../src/watch/types.js';

/** Resolves when `predicate` holds (polled every 10 ms); rejects after `timeoutMs`. */
export async function waitFor(
  predicate: () => boolean,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The next result of `iterator`, or a rejection after `timeoutMs`. */
export async function nextWithin<T>(
  iterator: AsyncIterator<T>,
  timeoutMs: number,
): Promise<IteratorResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      iterator.next(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no watch batch within ${timeoutMs} ms`)),
          timeoutMs,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads batches until they hold `events` events in total. */
export async function takeEvents(
  iterator: AsyncIterator<WatchBatch>,
  events: number,
  timeoutMs = 10_000,
): Promise<WatchBatch[]> {
  const batches: WatchBatch[] = [];
  let count = 0;
  while (count < events) {
    const result = await nextWithin(iterator, timeoutMs);
    if (result.done) throw new Error(`the watcher ended after ${count} of ${events} events`);
    batches.push(result.value);
    count += result.value.events.length;
  }
  return batches;
}

/** A compact, comparable view of events: `revision type key=value`. */
export function describeEvents(batches: readonly WatchBatch[]): string[] {
  return batches.flatMap((batch) =>
    batch.events.map(
      (event) => `${batch.revision} ${event.type} ${event.kv.keyText()}=${event.kv.text()}`,
    ),
  );
}

/** Counts stream openings and closings through watch hooks. */
export interface StreamLog {
  readonly hooks: WatchHooks;
  opened: number;
  closed: number;
  readonly reasons: WatchStreamCloseReason[];
  readonly errors: EtcdError[];
  resumes: number;
  /** Streams open now. */
  open(): number;
}

/** A {@link StreamLog} with hooks that feed it. */
export function streamLog(): StreamLog {
  const log: StreamLog = {
    opened: 0,
    closed: 0,
    reasons: [],
    errors: [],
    resumes: 0,
    open: () => log.opened - log.closed,
    hooks: {
      onStreamOpen: () => {
        log.opened++;
      },
      onStreamClose: (event) => {
        log.closed++;
        log.reasons.push(event.reason);
        if (event.error) log.errors.push(event.error);
      },
      onResume: () => {
        log.resumes++;
      },
    },
  };
  return log;
}

/** A positive integer from the environment, or `fallback`. */
export function envCount(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new Error(`${name} must be a positive integer, got ${raw}`);
  }
  return value;
}

/** What a {@link recordingRpc} saw on its Watch streams. */
export interface WatchWire {
  /** `create`, `cancel`, `progress` for requests; `response` for each response read. */
  readonly log: string[];
  /** Every response read. */
  readonly responses: etcdserverpb.WatchResponse[];
}

/**
 * An Rpc over `connection` whose bidi streams record the Watch requests written and responses
 * read, for tests of the wire behaviour (pipelining, fragments). Build a `new KV(rpc)` on it.
 */
export function recordingRpc(connection: Connection): { rpc: Rpc; wire: WatchWire } {
  const wire: WatchWire = { log: [], responses: [] };
  const rpc: Rpc = {
    unary: (method, request, retry, options) => connection.unary(method, request, retry, options),
    serverStream: (method, request, retry, options) =>
      connection.serverStream(method, request, retry, options),
    bidiStream: async (method, options) => {
      const stream = await connection.bidiStream(method, options);
      const inner = stream[Symbol.asyncIterator]();
      return {
        write: (request) => {
          const union = request as etcdserverpb.WatchRequest.$Properties;
          wire.log.push(
            union.createRequest ? 'create' : union.cancelRequest ? 'cancel' : 'progress',
          );
          stream.write(request);
        },
        end: () => stream.end(),
        cancel: () => stream.cancel(),
        [Symbol.asyncIterator]: () => ({
          next: async () => {
            const result = await inner.next();
            if (!result.done) {
              wire.log.push('response');
              wire.responses.push(result.value as etcdserverpb.WatchResponse);
            }
            return result;
          },
          return: () => inner.return?.() ?? Promise.resolve({ done: true, value: undefined }),
        }),
      };
    },
  };
  return { rpc, wire };
}
