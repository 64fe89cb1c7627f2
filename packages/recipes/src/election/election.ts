// Leader election in the key layout of Go's concurrency.Election, so Go services and `etcdctl elect`
// take part in the same election; candidates queue like mutex waiters.
import { cmp, type KeyValue, op, type ResponseHeader } from '@etcdkit/client';
import {
  ElectionNoLeaderError,
  ElectionNotLeaderError,
  LeadershipLostError,
  type RecipeError,
  throwIfAborted,
} from '../errors.js';
import { acquireHold, acquireSessionKey, type Holding, sessionKey } from '../line/place.js';
import { Hold } from '../lock/hold.js';
import { recipeName } from '../recipe-name.js';
import type { Session } from '../session/session.js';
import { type WaitOptions, waitForEvent } from '../wait.js';

/** Options of {@link Election.campaign}. */
export interface CampaignOptions extends WaitOptions {}

/** Options of {@link Election.observe}. */
export interface ObserveOptions {
  /** Aborting it ends the iteration with the client's AbortedError (as a watch's does). */
  readonly signal?: AbortSignal;
}

/**
 * A leader election named by a key prefix. Each session campaigns with ONE key,
 * `name/<lease id in lowercase hex>`, holding the candidate's value and attached to the session's
 * lease (Go's layout). The leader is the candidate whose key has the oldest create revision; the
 * others wait in create-revision order, each watching only the key just ahead of it.
 *
 * @example
 * ```ts
 * const election = new Election(session, 'elections/scheduler');
 * const leadership = await election.campaign('node-a');
 * await runScheduler({ signal: leadership.signal, epoch: leadership.epoch });
 * await leadership.resign();
 * ```
 */
export class Election {
  /** The election's key prefix: the name followed by `/`. */
  readonly prefix: string;
  #leadership: Leadership | undefined;

  constructor(
    /** The session whose lease the candidate key is attached to. */
    readonly session: Session,
    /** The election's name (a non-empty key prefix, without the trailing `/` Go adds too). */
    readonly name: string,
  ) {
    this.prefix = `${recipeName('Election', 'name', name)}/`;
  }

  /** The key this session campaigns with. */
  get key(): string {
    return sessionKey(this.prefix, this.session);
  }

  /**
   * The leadership won by the last {@link campaign} of this object, until it is resigned or a
   * proclaim finds it lost. Its `signal` says whether it may have been lost meanwhile.
   */
  get leadership(): Leadership | undefined {
    return this.#leadership;
  }

  /**
   * Campaigns with `value` and resolves once this session is the leader.
   *
   * Puts the candidate key if the session has none; if it has one with another value, proclaims
   * the new value. Then waits for every older candidate's key to go, and finally checks that its
   * own key still exists (Go does not, and can report leadership after its session expired).
   *
   * Fails with the client's AbortedError when `signal` aborts, with SessionExpiredError when the
   * session ends or the candidate key disappears while waiting; the key this call put is deleted
   * then (guarded by its create revision), so an abandoned campaign leaves no candidate behind.
   */
  campaign(value: string, options: CampaignOptions = {}): Promise<Leadership> {
    const { session, prefix } = this;
    return acquireHold({
      session,
      signal: options.signal,
      what: 'leadership',
      blockers: prefix,
      sharedKey: this.key,
      take: () => acquireSessionKey(session, prefix, value),
      taken: async (entry) => {
        if (entry.existing !== undefined && entry.existing.text() !== value) {
          await this.#put(entry.key, entry.createRevision, value);
        }
      },
      atHead: (entry) => entry.oldest?.createRevision === entry.createRevision,
      wrap: (holding, release) => {
        const leadership = new Leadership(this, holding, value, release);
        this.#leadership = leadership;
        return leadership;
      },
    });
  }

  /**
   * Proclaims a new value as the current leader (see {@link Leadership.proclaim}). Rejects with
   * {@link ElectionNotLeaderError} when this object holds no leadership.
   */
  async proclaim(value: string): Promise<ResponseHeader> {
    const leadership = this.#leadership;
    if (!leadership) {
      throw new ElectionNotLeaderError({ message: `not the leader of election ${this.name}` });
    }
    return leadership.proclaim(value);
  }

  /** Resigns the current leadership (see {@link Leadership.resign}); nothing to resign is fine. */
  async resign(): Promise<void> {
    await this.#leadership?.resign();
  }

  /**
   * The current leader's key-value: the candidate key with the oldest create revision. Rejects
   * with {@link ElectionNoLeaderError} when there is no candidate.
   */
  async leader(options: { readonly signal?: AbortSignal } = {}): Promise<KeyValue> {
    const read = await this.session.etcd.range({
      prefix: this.prefix,
      sort: { target: 'create', order: 'ascend' },
      limit: 1,
      signal: options.signal,
    });
    const leader = read.kvs[0];
    if (!leader) {
      throw new ElectionNoLeaderError({ message: `election ${this.name} has no leader` });
    }
    return leader;
  }

  /**
   * Follows the election: yields the current leader's key-value, then every value it proclaims,
   * then, when its key is deleted, the next leader, and so on. Leaders come in increasing create
   * revision; a deleted key is never yielded; when there is no leader it waits for one (nothing
   * is yielded meanwhile, as in Go). Leaving the loop ends it; an aborted `signal` ends it with the
   * client's AbortedError, as it ends a watch and `etcd.election.observe()`; it fails with the
   * error of a read or watch (ClientClosedError...).
   *
   * @example
   * ```ts
   * for await (const leader of election.observe({ signal })) {
   *   console.log(`leader ${leader.keyText()} (epoch ${leader.createRevision}): ${leader.text()}`);
   * }
   * ```
   */
  async *observe(options: ObserveOptions = {}): AsyncGenerator<KeyValue, void, undefined> {
    const { signal } = options;
    const kv = this.session.etcd;
    throwIfAborted(signal);
    for (;;) {
      const read = await kv.range({
        prefix: this.prefix,
        sort: { target: 'create', order: 'ascend' },
        limit: 1,
        signal,
      });
      let leader = read.kvs[0];
      let from = read.header.revision + 1n;
      if (leader === undefined) {
        // No candidate at the read: the first put after it creates the oldest key.
        const first = await waitForEvent(kv, { prefix: this.prefix }, 'put', from, { signal });
        leader = first.kv;
        from = first.kv.modRevision + 1n;
      }
      yield leader;
      // Follow the leader's key from just after what was yielded: proclaims, then its delete.
      const watcher = kv.watch({ key: leader.key, startRevision: from, signal });
      try {
        for await (const batch of watcher) {
          const deleted = batch.events.some((event) => event.type === 'delete');
          if (deleted) break;
          for (const event of batch.events) yield event.kv;
        }
      } finally {
        await watcher.close();
      }
      throwIfAborted(signal);
    }
  }

  /** Puts `value` on the candidate key if it is still the incarnation `createRevision`. */
  async #put(key: string, createRevision: bigint, value: string): Promise<ResponseHeader> {
    const result = await this.session.etcd
      .txn()
      .if(cmp.createRevision(key, '==', createRevision))
      .then(op.put(key, value, { lease: this.session.leaseId }))
      .commit({ retry: 'guarded' });
    if (!result.succeeded) {
      throw new ElectionNotLeaderError({
        message: `${key} is no longer the candidate key created at revision ${createRevision}`,
      });
    }
    return result.header;
  }

  /** @internal */
  putIfOwner(key: string, createRevision: bigint, value: string): Promise<ResponseHeader> {
    return this.#put(key, createRevision, value);
  }

  /** @internal */
  cleared(leadership: Leadership): void {
    if (this.#leadership === leadership) this.#leadership = undefined;
  }
}

/**
 * Leadership won by {@link Election.campaign}. Resign when done ({@link resign}, or
 * `await using`); fence what the leader does with {@link epoch} or {@link Hold.txn}.
 */
export class Leadership extends Hold implements AsyncDisposable {
  readonly #release: () => number;
  #value: string;
  #resigned = false;

  /** @internal Made by {@link Election.campaign}. */
  constructor(
    /** The election this leadership belongs to. */
    readonly election: Election,
    holding: Holding,
    value: string,
    release: () => number,
  ) {
    super(election.session, holding);
    this.#value = value;
    this.#release = release;
  }

  /**
   * The leadership's epoch: the create revision of the leader key (the same number as
   * {@link Hold.fencingToken}). Successive leaders have strictly increasing epochs.
   */
  get epoch(): bigint {
    return this.holding.createRevision;
  }

  /** The value last proclaimed through this handle (or campaigned with). */
  get value(): string {
    return this.#value;
  }

  /**
   * Announces a new value without a new election: puts it on the leader key only if the key is
   * still this leadership's. When it is not, nothing is written, the leadership is cleared (its
   * signal fires) and this rejects with {@link ElectionNotLeaderError}.
   */
  async proclaim(value: string): Promise<ResponseHeader> {
    if (this.#resigned) {
      throw new ElectionNotLeaderError({
        message: `not the leader of election ${this.election.name}`,
      });
    }
    try {
      const header = await this.election.putIfOwner(this.key, this.epoch, value);
      this.#value = value;
      return header;
    } catch (error) {
      if (error instanceof ElectionNotLeaderError) this.#clear();
      throw error;
    }
  }

  /**
   * Gives up the leadership: deletes the leader key only if it is still this leadership's (the
   * next candidate then wins). Not being the leader (any more) is not an error (as Go's Resign),
   * calling it again does nothing, and neither does a resign after this process closed the
   * session or the client (the leadership ended with them).
   */
  async resign(): Promise<void> {
    if (this.#resigned) return;
    if (!this.endedHere) {
      try {
        await this.holding.release();
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (code !== 'LOCK_LOST' && code !== 'LOCK_NOT_HELD') throw error;
      }
    }
    this.#clear();
  }

  /**
   * Ends the leadership at the end of an `await using` block: resigns it, and throws
   * {@link LeadershipLostError} when it was lost while held, so a lost leadership is reported as
   * its signal reports it. Does nothing after a resign, or once this process closed the session or
   * the client.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.end();
    } finally {
      this.#clear();
    }
  }

  /** @internal A lost leadership is reported as a LeadershipLostError. */
  override lostError(key: string, epoch: bigint, message?: string, cause?: unknown): RecipeError {
    return new LeadershipLostError(key, epoch, message, { cause });
  }

  #clear(): void {
    this.#resigned = true;
    this.holding.lose();
    this.election.cleared(this);
    this.#release();
  }
}
