// The queue-acquire algorithm over a minimal store, one holder at a time: the embedded server's
// Lock and Election services run it over their in-process client, whose reads and watches are
// synchronous (the recipes wait over the client's watches with turn.ts).

/** A key in a line of keys ordered by create revision: its place is its create revision. */
export interface LinePlace<K> {
  /** The full key. */
  readonly key: K;
  /** Its create revision. */
  readonly createRevision: bigint;
}

/** A read of the keys ahead of a waiter, at one revision. */
export interface AheadRead<P, H> {
  /** The keys created before the waiter, newest first (at least the newest). */
  readonly predecessors: readonly P[];
  /** The read's revision: every predecessor existed then. */
  readonly revision: bigint;
  /** The read's header, what a wait that ends at this read resolves with. */
  readonly header: H;
}

/**
 * What {@link waitForTurn} needs of a store, for one waiter: the client's KV and the embedded
 * server's local client each implement it.
 */
export interface QueueLine<K, P extends LinePlace<K>, H> {
  /**
   * Reads the keys ahead of the waiter, checking its own key is still the incarnation that
   * queued (rejecting when it is not).
   */
  readAhead(signal: AbortSignal): Promise<AheadRead<P, H>>;
  /**
   * Waits for `newest`, the newest key of `read`, to go. Resolves with the turn's header when its
   * delete proves the turn, or undefined to read the line again.
   */
  waitForPredecessor(newest: P, read: AheadRead<P, H>, signal: AbortSignal): Promise<H | undefined>;
}

/** Options of {@link waitForTurn}. */
export interface TurnOptions {
  /** Ends the wait; it then rejects with what the line's reads and watches reject with. */
  readonly signal: AbortSignal;
}

/**
 * Waits for the waiter's turn (one holder at a time): resolves with the header of the read that
 * found no predecessor. It waits on the newest predecessor only (a release wakes one waiter, not
 * the line), then reads again. A waiter whose own key goes meanwhile waits on, as on etcd (Go's
 * Mutex and Election): what its turn then gets is the caller's to decide.
 */
export async function waitForTurn<K, P extends LinePlace<K>, H>(
  line: QueueLine<K, P, H>,
  { signal }: TurnOptions,
): Promise<H> {
  let read = await line.readAhead(signal);
  for (;;) {
    const newest = read.predecessors[0];
    if (newest === undefined) return read.header;
    const turn = await line.waitForPredecessor(newest, read, signal);
    if (turn !== undefined) return turn;
    read = await line.readAhead(signal);
  }
}

/** The steps of one acquisition, run by {@link acquireInLine}. */
export interface Acquisition<E, R> {
  /** Refuses to start (an aborted signal, an ended session) by throwing. */
  start?(): void;
  /** Queues the key in one txn. Not abortable: a txn cut off in flight could leave a stray key. */
  take(): Promise<E>;
  /** Runs right after the take (a changed value proclaimed, the signal checked); may throw. */
  taken?(entry: E): Promise<void> | void;
  /** The result when the take found the entry at the head already; undefined to wait. */
  atHead(entry: E): R | undefined;
  /** Waits for the turn (or refuses to: a try-lock). */
  wait(entry: E): Promise<R>;
  /**
   * After a failure: the guarded delete of the key taken (undefined when the take failed), or
   * undefined to leave it (shared with another call, or the server stopping).
   */
  withdraw(entry: E | undefined): Promise<unknown> | undefined;
}

/**
 * The acquire skeleton of every queue recipe: start, take a key, hold at once or wait for the
 * turn; on any failure withdraw the key (best effort: it goes with its lease at the latest).
 */
export async function acquireInLine<E, R>(steps: Acquisition<E, R>): Promise<R> {
  steps.start?.();
  let entry: E | undefined;
  try {
    entry = await steps.take();
    await steps.taken?.(entry);
    return steps.atHead(entry) ?? (await steps.wait(entry));
  } catch (error) {
    await steps.withdraw(entry)?.catch(() => undefined);
    throw error;
  }
}
