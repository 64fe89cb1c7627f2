// A place in a line of keys ordered by create revision, every queue recipe's (Mutex, Election,
// RWMutex, Semaphore, DoubleBarrier): taking one in one txn that also reads the line (a session's
// key in Go's concurrency layout, or a new unique key in the layout of Go's experimental recipes),
// holding at once or after the turn (turn.ts), withdrawing the key after any failure, and the held
// key (Holding): its loss signal and its guarded release.
import {
  AbortedError,
  type Compare,
  cmp,
  type KeyValue,
  type KV,
  LeaseNotFoundError,
  op,
  type ResponseHeader,
} from '@etcdkit/client';
import { linkSignals, Slot } from '@etcdkit/client/internal';
import { LockLostError, LockNotHeldError, SessionExpiredError, throwIfAborted } from '../errors.js';
import type { Session } from '../session/session.js';
import { keptRangeLoss, keptRangeWatch } from './kept-ahead-watch.js';
import { keptLossWatch } from './kept-loss-watch.js';
import {
  closeNow,
  closeSoon,
  type LineRead,
  type LossWatch,
  type OwnKey,
  type WatchRange,
  watchForTurn,
  watchLoss,
} from './turn.js';

/** A key a recipe put (or found) in its queue. */
export interface LineEntry {
  /** The full key. */
  readonly key: string;
  /** Its create revision: the position in the queue, and the fencing token once it holds. */
  readonly createRevision: bigint;
  /** Header of the txn that created or found it; the key existed at `header.revision`. */
  readonly header: ResponseHeader;
  /**
   * The queue ahead of the key, read in the txn that created it (a key found existing has none):
   * lets the wait start without another read.
   */
  readonly ahead?: LineRead;
}

/** A session key after the acquire txn. */
export interface SessionEntry extends LineEntry {
  /** True when this call created the key; false when the session already had it. */
  readonly created: boolean;
  /** The oldest key under the prefix at the txn's revision (the current holder). */
  readonly oldest: KeyValue | undefined;
  /** The key as it was, when the session already had it (`created` false). */
  readonly existing: KeyValue | undefined;
}

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
  /**
   * The session queues with the same key every time (a Mutex): its loss watch is kept across
   * holds (line/kept-loss-watch.ts) instead of one created and cancelled per hold.
   */
  readonly keepLossWatch?: boolean;
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
  /** See {@link HoldAcquisition.keepLossWatch}. */
  readonly keepLossWatch?: boolean;
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
  // An ended hold's watch: its cancel goes out with the take's txn.
  closeNow(session.etcd);
  try {
    // Not abortable: a txn cut off in flight could leave a stray key.
    entry = await acquisition.take();
    await acquisition.taken?.(entry);
    throwIfAborted(signal);
    if (acquisition.atHead?.(entry)) {
      const holding = new Holding(session, entry, what);
      const keep = acquisition.keepLossWatch === true;
      const own = ownKeyOf(entry, entry.header);
      // A range the session's waits kept over its key, when one covers it: no watch of it alone.
      const kept = keep ? keptRangeLoss(session, own) : undefined;
      holding.adopt(kept ?? lossWatchOf(session, keep)(session.etcd, own));
      return acquisition.wrap(holding, release);
    }
    await acquisition.refuse?.(entry);
    const { blockers: prefix, slots, keepLossWatch } = acquisition;
    const wait = { prefix, entry, slots, what, signal, keepLossWatch };
    const holding = await waitToHold(session, wait);
    return acquisition.wrap(holding, release);
  } catch (error) {
    const othersLeft = release();
    if (entry !== undefined && othersLeft === 0) {
      await deleteIfCreatedAt(session, entry.key, entry.createRevision).catch(() => undefined);
    }
    throw error;
  }
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
  const holding = new Holding(session, entry, wait.what);
  // Linked by hand, and let go of at the end: the caller's signal outlives the wait. Without one,
  // the holding's own signal serves (a link would only follow it, with the same reason).
  const both =
    signal === undefined ? unlinked(holding.signal) : linkSignals(signal, holding.signal);
  const ownKey = ownKeyOf(entry, entry.header);
  const slots = wait.slots ?? 1;
  const keep = wait.keepLossWatch === true;
  const lossWatch = lossWatchOf(session, keep);
  // The same sessions queue again in the same order: the keys watched are usually the last wait's.
  const keptWatch: WatchRange | undefined = keep
    ? (_kv, range, after, listener) => keptRangeWatch(session, range, after, listener)
    : undefined;
  const { prefix } = wait;
  const waiter = {
    prefix,
    createRevision: entry.createRevision,
    slots,
    ownKey,
    lossWatch,
    aheadWatch: keptWatch,
    lineWatch: keptWatch,
  };
  try {
    // The creating txn's read of the line when there is one (a key found existing has none).
    const found = await watchForTurn(session.etcd, waiter, entry.ahead, both.signal);
    holding.established(found.header);
    // A read found the turn, and checked the key at its revision: watched from there.
    holding.adopt(found.watch ?? lossWatch(session.etcd, ownKeyOf(entry, found.header)));
    return holding;
  } catch (error) {
    const failure = whyNotHeld(error, session, holding, signal);
    holding.lose();
    throw failure;
  } finally {
    both.release();
  }
}

/** How a key held alone is watched for its loss: a kept share of the session's watch, or its own. */
function lossWatchOf(session: Session, keep: boolean): (kv: KV, own: OwnKey) => LossWatch {
  return keep ? (_kv, own) => keptLossWatch(session, own) : watchLoss;
}

/** The entry's key as a waiter's own key, seen to exist at `seen`'s revision. */
function ownKeyOf(entry: LineEntry, seen: ResponseHeader): OwnKey {
  return { key: entry.key, createRevision: entry.createRevision, seenAt: seen.revision };
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

/** The key of `session` under `prefix`: the lease id in lowercase hex, as Go's `%x` prints it. */
export function sessionKey(prefix: string, session: Session): string {
  return `${prefix}${session.leaseId.toString(16)}`;
}

/**
 * Puts the session's key under `prefix` (attached to its lease) unless it exists, and reads the
 * oldest key under the prefix (the holder) and the newest one before the new key (the one to wait
 * for), in ONE txn. The compare makes it safe to retry after an unknown outcome: a retry finds the
 * key the first attempt created and reports its create revision.
 */
export async function acquireSessionKey(
  session: Session,
  prefix: string,
  value: string,
): Promise<SessionEntry> {
  const key = sessionKey(prefix, session);
  const oldest = op.range({ prefix, sort: { target: 'create', order: 'ascend' }, limit: 1 });
  const result = await leased(
    session,
    session.etcd
      .txn()
      .if(cmp.createRevision(key, '==', 0n))
      .then(op.put(key, value, { lease: session.leaseId }), oldest, newestTwo(prefix))
      .else(op.get(key), oldest)
      .commit({ retry: 'guarded' }),
  );
  if (result.succeeded) {
    const [, owner, newest] = result.responses;
    return {
      key,
      createRevision: result.header.revision,
      header: result.header,
      ahead: aheadOf(key, newest, result.header),
      created: true,
      oldest: owner.kvs[0],
      existing: undefined,
    };
  }
  const [mine, owner] = result.responses;
  const existing = mine.kvs[0];
  // The else branch runs only when the key exists, and both reads are of the same revision.
  if (existing === undefined) throw new Error(`${key} vanished inside one txn`);
  return {
    key,
    createRevision: existing.createRevision,
    header: result.header,
    created: false,
    oldest: owner.kvs[0],
    existing,
  };
}

// Calls of this process using a session key now: two campaigns of one session in one election share
// its key (Go's layout: one candidate per session), and a failed wait of one must not delete the
// key the other waits with or leads with. (A Mutex's calls take the key in call order:
// lock/mutex.ts.)
const USERS = new Slot(() => new Map<string, number>());

/** Records a local user of a session key; call the returned function when it stops using it. */
export function useSessionKey(session: Session, key: string): () => number {
  const byKey = session.slots.get(USERS);
  byKey.set(key, (byKey.get(key) ?? 0) + 1);
  let done = false;
  return () => {
    if (done) return byKey.get(key) ?? 0;
    done = true;
    const left = (byKey.get(key) ?? 1) - 1;
    if (left <= 0) byKey.delete(key);
    else byKey.set(key, left);
    return left;
  };
}

let lastUnique = 0n;

/** A decimal timestamp in nanoseconds, strictly increasing within this process. */
function uniqueSuffix(): string {
  const now = BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n);
  lastUnique = now > lastUnique ? now : lastUnique + 1n;
  return lastUnique.toString();
}

/**
 * Creates a new key `prefix + <nanoseconds>` attached to the session's lease (the layout of Go's
 * experimental recipes), retrying with a new name if one is taken. A retry after an unknown
 * outcome that finds the name taken by our own lease knows it is the key it created (names are
 * never reused within a process), so no attempt leaves a stray key in the queue.
 *
 * With `blockers` (the prefix a one-slot waiter waits on), the same txn reads the newest key under
 * it, which the entry's `ahead` then holds.
 */
export async function createUniqueKey(
  session: Session,
  prefix: string,
  blockers?: string,
): Promise<LineEntry> {
  for (;;) {
    const key = `${prefix}${uniqueSuffix()}`;
    const reads = blockers === undefined ? [] : [newestTwo(blockers)];
    const result = await leased(
      session,
      session.etcd
        .txn()
        .if(cmp.createRevision(key, '==', 0n))
        .then(op.put(key, '', { lease: session.leaseId }), ...reads)
        .else(op.get(key))
        .commit({ retry: 'guarded' }),
    );
    if (result.succeeded) {
      const newest = result.responses[1];
      const entry = { key, createRevision: result.header.revision, header: result.header };
      if (newest?.kind !== 'range') return entry;
      return { ...entry, ahead: aheadOf(key, newest, result.header) };
    }
    const existing = result.responses[0].kvs[0];
    if (existing && existing.lease === session.leaseId) {
      return { key, createRevision: existing.createRevision, header: result.header };
    }
  }
}

/**
 * The two newest keys under `blockers` by create revision, read in the txn that creates a key:
 * the new key is the newest of all then, so the other one (if it is under `blockers` too) is the
 * newest key created before it.
 */
export function newestTwo(blockers: string) {
  return op.range({
    prefix: blockers,
    sort: { target: 'create', order: 'descend' },
    limit: 2,
    keysOnly: true,
  });
}

/** The queue ahead of the just created `key`, from {@link newestTwo}'s read. */
export function aheadOf(
  key: string,
  newest: { readonly kvs: readonly KeyValue[]; readonly more: boolean },
  header: ResponseHeader,
): LineRead {
  const others = newest.kvs.filter((kv) => kv.keyText() !== key);
  const predecessor = others[0];
  const complete = !newest.more && others.length <= 1;
  return { predecessors: predecessor ? [predecessor] : [], complete, header };
}

/**
 * A put on the session's lease that the server refuses with "lease not found" means the session
 * is over, even if its keepalive has not heard yet (revoked elsewhere, or expired): say so.
 */
export async function leased<T>(session: Session, write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (error instanceof LeaseNotFoundError) throw sessionEnded(session, error);
    throw error;
  }
}

/**
 * Deletes `key` only while it is the incarnation created at `createRevision`. Go deletes
 * unconditionally, so a retried or late unlock can delete a newer holder's key (etcd issue
 * 22082); with the compare it deletes nothing then. Safe to retry. Resolves true when it deleted.
 */
export async function deleteIfCreatedAt(
  session: Session,
  key: string,
  createRevision: bigint,
): Promise<boolean> {
  const result = await session.etcd
    .txn()
    .if(cmp.createRevision(key, '==', createRevision))
    .then(op.delete(key))
    .commit({ retry: 'guarded' });
  return result.succeeded;
}

/** The SessionExpiredError of an operation refused or cut short because the session ended. */
export function sessionEnded(session: Session, cause?: unknown): SessionExpiredError {
  return new SessionExpiredError(`the session (lease ${session.leaseId.toString(16)}) has ended`, {
    cause: cause ?? session.signal.reason,
  });
}

/**
 * @internal The shared mechanics of a held key. The public handles (Lock, Permit, Leadership) wrap
 * one.
 *
 * The signal fires when the session is done, when the key is deleted or re-created (watched from
 * the revision at which it was seen, so nothing in between is missed), when the watch fails for
 * good, or when the hold is released through this handle.
 */
export class Holding {
  readonly key: string;
  readonly createRevision: bigint;
  #header: ResponseHeader;
  readonly #session: Session;
  readonly #controller = new AbortController();
  /** Stops the key's loss watch now running. */
  #stopWatch: (() => void) | undefined;
  #releasing = false;
  /** The revision our own key's delete was seen at while releasing (an error only if it fails). */
  #deletedWhileReleasing: bigint | undefined;
  #stopping = false;
  readonly #onSessionDone: () => void;

  readonly #what: string;

  /** The key is not watched yet: a loss watch is {@link adopt}ed once it holds. */
  constructor(session: Session, entry: LineEntry, what: string) {
    this.#session = session;
    this.key = entry.key;
    this.createRevision = entry.createRevision;
    this.#header = entry.header;
    this.#what = what;
    this.#onSessionDone = () =>
      this.#lose(
        new LockLostError(
          this.key,
          this.createRevision,
          `${what} ${this.key} may be lost: the session ended`,
          { cause: session.signal.reason },
        ),
      );
    if (session.signal.aborted) {
      this.#onSessionDone();
      return;
    }
    session.signal.addEventListener('abort', this.#onSessionDone, { once: true });
  }

  /** @internal Takes over a watch of the key (the one that found the turn) as its loss watch. */
  adopt(watch: LossWatch): void {
    if (this.#stopping) {
      watch.close();
      return;
    }
    // Closed, not aborted: a closed turn watch reports nothing more (no controller per hold).
    this.#stopWatch = () => watch.close();
    watch.onLoss({
      lost: (revision) => this.#deleted(revision),
      failed: (error) => this.#unwatchable(error),
    });
  }

  #deleted(revision: bigint): void {
    // Our own release's delete is often seen before its answer: that is no loss, unless the
    // release then fails.
    if (this.#releasing) this.#deletedWhileReleasing = revision;
    else this.#lose(this.#deletedAt(revision));
  }

  #deletedAt(revision: bigint): LockLostError {
    return new LockLostError(
      this.key,
      this.createRevision,
      `${this.#what} ${this.key} was lost: the key was deleted at revision ${revision}`,
    );
  }

  #unwatchable(error: unknown): void {
    if (this.#stopping) return;
    this.#lose(
      new LockLostError(
        this.key,
        this.createRevision,
        `${this.#what} ${this.key} may be lost: its key can no longer be watched`,
        { cause: error },
      ),
    );
  }

  /** Aborts when the hold may be lost or was released; the reason says which. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Header of the response that established the hold (the acquire txn or the final read). */
  get header(): ResponseHeader {
    return this.#header;
  }

  /** `createRevision(key) == createRevision`. */
  isOwner(): Compare {
    return cmp.createRevision(this.key, '==', this.createRevision);
  }

  /**
   * Deletes the key if it is still this incarnation. Throws LockNotHeldError when this handle
   * already released it (or is releasing it), LockLostError when the key was no longer this
   * incarnation (nothing deleted). A failure of the call itself leaves the handle as it was, so
   * the release can be retried (the compare makes a retry harmless).
   */
  async release(): Promise<void> {
    if (this.#releasing) throw new LockNotHeldError(this.key);
    this.#releasing = true;
    // A helper watch the wait left: its cancel goes out with the delete.
    closeNow(this.#session.etcd);
    let deleted: boolean;
    try {
      deleted = await deleteIfCreatedAt(this.#session, this.key, this.createRevision);
    } catch (error) {
      this.#releasing = false;
      const deletedAt = this.#deletedWhileReleasing;
      if (deletedAt !== undefined) this.#lose(this.#deletedAt(deletedAt));
      throw error;
    }
    if (!deleted) {
      const lost = new LockLostError(this.key, this.createRevision);
      this.#lose(lost);
      throw lost;
    }
    // The signal's reason, never thrown from here: every release makes one.
    this.#lose(withoutStack(() => new LockNotHeldError(this.key)));
  }

  /** @internal The read that found the turn: the hold is established at its revision. */
  established(header: ResponseHeader): void {
    this.#header = header;
  }

  /** Marks the hold lost (a guarded write found it gone): the signal fires, the watch stops. */
  lose(): void {
    // Already over (a resign after its release): nothing to signal, no error to build.
    if (this.#stopping) return;
    this.#lose(new LockLostError(this.key, this.createRevision));
  }

  /** True once released through this handle (or while the release is in flight). */
  get released(): boolean {
    return this.#releasing;
  }

  #lose(reason: Error): void {
    this.#session.signal.removeEventListener('abort', this.#onSessionDone);
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
    if (this.#stopping) return;
    this.#stopping = true;
    const stop = this.#stopWatch;
    this.#stopWatch = undefined;
    if (stop) closeSoon(this.#session.etcd, stop);
  }
}

const stackLimitWritable =
  Object.getOwnPropertyDescriptor(Error, 'stackTraceLimit')?.writable === true;

/** Makes an error without capturing a stack (the costly part of making one). */
function withoutStack<E extends Error>(make: () => E): E {
  if (!stackLimitWritable) return make();
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}
