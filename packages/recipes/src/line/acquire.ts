// One acquisition of a key in a line, every queue recipe's (Mutex, Election, RWMutex, Semaphore):
// take a place (one txn), hold at once or wait for the turn (turn.ts), and withdraw the key after
// any failure.
import { AbortedError } from '@etcdkit/client';
import { linkSignals } from '@etcdkit/client/internal';
import { LockLostError, SessionExpiredError } from '../errors.js';
import type { Session } from '../session/session.js';
import { throwIfAborted } from '../wait.js';
import { deleteIfCreatedAt, type LineEntry, sessionEnded } from './entry.js';
import { Holding } from './holding.js';
import { useSessionKey } from './session-key.js';
import { watchForTurn } from './turn.js';

/** One acquisition of a held key, as {@link acquireHold} runs it. */
export interface HoldAcquisition<E extends LineEntry, R> {
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

/**
 * Runs one acquisition: start, take a key, hold at once or wait for the turn; on any failure the
 * key taken is withdrawn (deleted, guarded by its create revision, unless another local user of a
 * shared key remains; best effort: it goes with its lease at the latest).
 */
export async function acquireHold<E extends LineEntry, R>(
  acquisition: HoldAcquisition<E, R>,
): Promise<R> {
  const { session, signal, what } = acquisition;
  throwIfAborted(signal);
  if (session.isDone) throw sessionEnded(session);
  const release =
    acquisition.sharedKey === undefined ? () => 0 : useSessionKey(session, acquisition.sharedKey);
  let entry: E | undefined;
  try {
    // Not abortable: a txn cut off in flight could leave a stray key.
    entry = await acquisition.take();
    await acquisition.taken?.(entry);
    throwIfAborted(signal);
    if (acquisition.atHead?.(entry)) {
      return acquisition.wrap(new Holding(session, entry, what), release);
    }
    await acquisition.refuse?.(entry);
    const { blockers: prefix, slots } = acquisition;
    const holding = await waitToHold(session, { prefix, entry, slots, what, signal });
    return acquisition.wrap(holding, release);
  } catch (error) {
    const othersLeft = release();
    if (entry !== undefined && othersLeft === 0) {
      await deleteIfCreatedAt(session, entry.key, entry.createRevision).catch(() => undefined);
    }
    throw error;
  }
}

/** @internal What {@link waitToHold} waits for. */
export interface HoldWait {
  /** The queue the waiter's predecessors are in (for a reader of an RWMutex: only the writers). */
  readonly prefix: string;
  /** The waiter's own key. */
  readonly entry: LineEntry;
  /** Holders admitted at once; default 1. */
  readonly slots?: number;
  /** What is held, for messages: 'lock', 'permit', 'leadership'. */
  readonly what: string;
  /** The caller's signal. */
  readonly signal: AbortSignal | undefined;
}

/**
 * @internal Waits until the entry's turn comes and returns the Holding of its key. The Holding
 * watches the key from the moment it queued, so one watch serves both the wait (its loss ends the
 * wait at once: etcd issue 19597, Go waits on) and the hold that follows; the read that finds no
 * predecessor left also checks the key is still the incarnation that queued (etcd issues 11456 and
 * 11051: Go reported success without it).
 *
 * Fails with SessionExpiredError when the session ends or the key vanishes, with AbortedError when
 * the caller's signal aborts, or with the error of a read or of the key's watch.
 */
export async function waitToHold(session: Session, wait: HoldWait): Promise<Holding> {
  const { entry, signal } = wait;
  // One watch over the keys ahead and the own key serves the wait, then the hold (the loss watch).
  const holding = new Holding(session, entry, wait.what, false);
  // Linked by hand, and let go of at the end: the caller's signal outlives the wait. Without one,
  // the holding's own signal serves (a link would only follow it, with the same reason).
  const both =
    signal === undefined ? unlinked(holding.signal) : linkSignals(signal, holding.signal);
  const ownKey = {
    key: entry.key,
    createRevision: entry.createRevision,
    seenAt: entry.header.revision,
  };
  const slots = wait.slots ?? 1;
  const waiter = { prefix: wait.prefix, createRevision: entry.createRevision, slots, ownKey };
  try {
    // The creating txn's read of the line when there is one (a key found existing has none).
    const found = await watchForTurn(session.etcd, waiter, entry.ahead, both.signal);
    holding.established(found.header);
    if (found.watch === undefined) holding.watchKey();
    else holding.adopt(found.watch);
    return holding;
  } catch (error) {
    const failure = whyNotHeld(error, session, holding, signal);
    holding.lose();
    throw failure;
  } finally {
    both.release();
  }
}

const noRelease = (): void => {};

/** A signal used as it is, in the shape of a link. */
function unlinked(signal: AbortSignal): { readonly signal: AbortSignal; release(): void } {
  return { signal, release: noRelease };
}

/** The error a wait ended by the loss of its key (or session) reports. */
function whyNotHeld(
  error: unknown,
  session: Session,
  holding: Holding,
  signal: AbortSignal | undefined,
): unknown {
  if (!(error instanceof AbortedError) || signal?.aborted) return error;
  if (session.isDone) return sessionEnded(session, error);
  const lost: unknown = holding.signal.reason;
  const cause = lost instanceof LockLostError ? lost.cause : undefined;
  // The key's watch failed for good: that failure, not a guess about the key.
  if (cause !== undefined) return cause;
  return new SessionExpiredError(
    `${holding.key} was deleted while waiting (its lease expired or was revoked, or it was deleted)`,
    { key: holding.key },
  );
}
