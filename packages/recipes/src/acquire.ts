// The one acquire of Mutex, Election, Semaphore and RWMutex: the shared skeleton (queue-line.ts)
// on a session, with the wait of hold.ts and the guarded cleanup of queue-key.ts.
import { Holding, waitToHold } from './hold.js';
import { deleteIfCreatedAt, type QueueEntry, sessionEnded, useSessionKey } from './queue-key.js';
import { acquireInLine } from './queue-line.js';
import type { Session } from './session.js';
import { throwIfAborted } from './wait.js';

/** One acquisition of a held key, as {@link acquireHold} runs it. */
export interface HoldAcquisition<E extends QueueEntry, R> {
  readonly session: Session;
  readonly signal: AbortSignal | undefined;
  /** What is held, for messages: 'lock', 'permit', 'leadership'. */
  readonly what: string;
  /** The prefix the predecessors are under (for a reader of an RWMutex: only the writers). */
  readonly blockers: string;
  /** Holders admitted at once; default 1. */
  readonly slots?: number;
  /** A session key other calls of this process may share: only its last user withdraws it. */
  readonly sharedKey?: string;
  /** Queues the key (one txn). */
  take(): Promise<E>;
  /** Work between the take and the signal check (an Election proclaims a changed value). */
  taken?(entry: E): Promise<unknown>;
  /** True when the take's txn found the key at the head (it holds without waiting). */
  atHead?(entry: E): boolean;
  /** Throws to refuse waiting (a try-lock). */
  refuse?(entry: E): Promise<void> | void;
  /** The public handle; `release` tells how many other local users of a shared key remain. */
  wrap(holding: Holding, release: () => number): R;
}

/** Runs one acquisition; on failure its key is deleted (guarded by its create revision). */
export function acquireHold<E extends QueueEntry, R>(
  acquisition: HoldAcquisition<E, R>,
): Promise<R> {
  const { session, signal, what } = acquisition;
  let release = (): number => 0;
  return acquireInLine<E, R>({
    start: () => {
      throwIfAborted(signal);
      if (session.isDone) throw sessionEnded(session);
      if (acquisition.sharedKey !== undefined) {
        release = useSessionKey(session, acquisition.sharedKey);
      }
    },
    take: () => acquisition.take(),
    taken: async (entry) => {
      await acquisition.taken?.(entry);
      throwIfAborted(signal);
    },
    atHead: (entry) =>
      acquisition.atHead?.(entry)
        ? acquisition.wrap(new Holding(session, entry, what), release)
        : undefined,
    wait: async (entry) => {
      await acquisition.refuse?.(entry);
      const { blockers: prefix, slots } = acquisition;
      const holding = await waitToHold(session, { prefix, entry, slots, what, signal });
      return acquisition.wrap(holding, release);
    },
    withdraw: (entry) => {
      const othersLeft = release();
      if (entry === undefined || othersLeft > 0) return undefined;
      return deleteIfCreatedAt(session, entry.key, entry.createRevision);
    },
  });
}
