// A lock workload worker: its own OS process, so it can be SIGSTOPped in its critical section.
// Started by lockWorkload with fork(); talks to it over the IPC channel.
import { Etcd, op } from '@etcdkit/client';
import { LockLostError, Mutex, Session, SessionExpiredError } from '@etcdkit/recipes';
import { historyToJson } from '../history.js';
import type { CounterInput, CounterOutput } from '../models/counter.js';
import { classifyFailure, Recorder, systemMonotonicMs } from '../recorder.js';
import { sleep } from './runner.js';

/** The parent's instructions. */
export interface LockWorkerStart {
  readonly type: 'start';
  readonly endpoints: readonly string[];
  readonly prefix: string;
  readonly fenced: boolean;
  readonly ttlSeconds: number;
  /** How long a critical section lasts between its read and its write, in ms. */
  readonly criticalSectionMs: number;
  /** First process number; the worker takes the next ones after unknown outcomes. */
  readonly processBase: number;
  /**
   * Wait for the parent's {@link LockWorkerProceed} after announcing each critical section (it
   * may expire the leases first and make this one slow).
   */
  readonly awaitProceed: boolean;
}

/**
 * The parent's go-ahead to a critical section, when the worker waits for one: it may first have
 * expired the leases and waited until another worker wrote the counter.
 */
export interface LockWorkerProceed {
  readonly type: 'proceed';
}

/** Messages a worker sends. */
export type LockWorkerMessage =
  /** A critical section began; it read `from` and will write `from + 1`. */
  | { readonly type: 'critical-section'; readonly from: number }
  | { readonly type: 'done'; readonly history: unknown[]; readonly error?: string };

const send = (message: LockWorkerMessage, then?: () => void) =>
  process.send?.(message, undefined, undefined, () => then?.());

async function work(
  start: LockWorkerStart,
  stopped: AbortSignal,
): Promise<Recorder<CounterInput, CounterOutput>> {
  const recorder = new Recorder<CounterInput, CounterOutput>({ now: systemMonotonicMs });
  const etcd = new Etcd({
    endpoints: [...start.endpoints],
    callTimeoutMs: 2_000,
    dialTimeoutMs: 1_000,
  });
  const counter = `${start.prefix}counter`;
  let proc = start.processBase;
  let session: Session | undefined;
  try {
    while (!stopped.aborted) {
      try {
        if (session === undefined || session.isDone)
          session = await Session.create(etcd, { ttl: start.ttlSeconds });
        const lock = await new Mutex(session, `${start.prefix}lock`).lock({
          signal: AbortSignal.any([stopped, AbortSignal.timeout(10_000)]),
        });
        try {
          const began = systemMonotonicMs();
          const kv = await etcd.get(counter);
          const from = kv === undefined ? 0 : Number(kv.text());
          const pending = recorder.invoke(proc, { type: 'increment', from }, began);
          const proceed = start.awaitProceed ? nextProceed() : undefined;
          send({ type: 'critical-section', from });
          await proceed;
          await sleep(start.criticalSectionMs);
          try {
            if (start.fenced)
              await lock
                .txn()
                .then(op.put(counter, String(from + 1)))
                .commit();
            else await etcd.put(counter, String(from + 1));
            pending.ok({ type: 'increment', wrote: true });
          } catch (error) {
            if (error instanceof LockLostError || classifyFailure(error, 'write') === 'fail') {
              pending.ok({ type: 'increment', wrote: false });
            } else {
              pending.unknown(error);
              proc++;
            }
          }
        } finally {
          // Until the hold is over: a failed unlock leaves the key in etcd and this session's next
          // lock() waiting behind it (a Mutex takes a session's key in call order), so nobody could
          // take the lock while this session lives. The compare makes a retry harmless.
          // (An unlock that succeeds, or finds the lock lost, aborts the signal.)
          while (!lock.signal.aborted && !stopped.aborted)
            await lock.unlock().catch(() => sleep(50));
        }
      } catch (error) {
        // Lock not acquired, read failed, session lost: no critical section ran; try again. An
        // ended session is dropped at once: its isDone lags behind (it learns from a keepalive),
        // and every retry on it fails again meanwhile.
        if (error instanceof SessionExpiredError) {
          void session?.close().catch(() => {});
          session = undefined;
        }
        await sleep(50);
      }
    }
  } finally {
    await session?.close().catch(() => {});
    await etcd.close();
  }
  return recorder;
}

let proceeding: ((message: LockWorkerProceed) => void) | undefined;
const nextProceed = () =>
  new Promise<LockWorkerProceed>((resolve) => {
    proceeding = resolve;
  });

const stop = new AbortController();
process.on('message', (message: LockWorkerStart | LockWorkerProceed | { type: 'stop' }) => {
  if (message.type === 'stop') stop.abort();
  else if (message.type === 'proceed') proceeding?.(message);
  else
    void work(message, stop.signal).then(
      (recorder) =>
        send({ type: 'done', history: historyToJson(recorder.history()) }, () =>
          process.disconnect(),
        ),
      (error: unknown) =>
        send({ type: 'done', history: [], error: String(error) }, () => process.disconnect()),
    );
});
