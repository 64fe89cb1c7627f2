// A work queue with at-least-once delivery: claims live on the consumer's lease, acks delete, and
// an item claimed too often goes to a dead-letter key (layout: docs/queues.md).
import {
  AbortedError,
  type Bytes,
  CompactedError,
  cmp,
  InvalidArgumentError,
  type KeyValue,
  type KV,
  LeaseNotFoundError,
  op,
  prefixEnd,
  type ResponseHeader,
  toBytes,
  toText,
} from '@etcdkit/client';
import { linkSignals } from '@etcdkit/client/internal';
import { SessionExpiredError, throwIfAborted } from '../errors.js';
import { recipeName } from '../recipe-name.js';
import type { Session } from '../session/session.js';
import { waitForEvent } from '../wait.js';
import { MAX_QUEUE_PRIORITY } from './priority-queue.js';
import { ClaimLostError } from './work-queue-errors.js';

/** Options of a {@link WorkQueue}. */
export interface WorkQueueOptions {
  /**
   * How many claims an item gets: when it comes back (nack, crash, expired claim) after this
   * many, it is moved to the dead-letter keys instead of being delivered again. Default 5.
   */
  readonly maxAttempts?: number;
}

/** Options of {@link WorkQueue.enqueue}. */
export interface WorkEnqueueOptions {
  /** 0 (default, served first) to {@link MAX_QUEUE_PRIORITY}; equal priorities are FIFO. */
  readonly priority?: number;
  /** Checked before each write; a write once sent is waited for. */
  readonly signal?: AbortSignal;
}

/** What {@link WorkQueue.enqueue} resolves with. */
export interface WorkEnqueued {
  /** The item's id, `<priority>/<sequence>`. */
  readonly id: string;
  /** Header of the write. */
  readonly header: ResponseHeader;
}

/** Options of {@link WorkQueue.claim}. */
export interface WorkClaimOptions {
  /**
   * Aborting it ends the wait with AbortedError and claims nothing. A claim already sent is not
   * interrupted: if it wins, the item is returned (dropping it would leave it claimed until the
   * session ends).
   */
  readonly signal?: AbortSignal;
}

/** An item claimed by a consumer: it stays in the queue, invisible to others, until acked. */
export interface WorkItem {
  /** The item's id, `<priority>/<sequence>`. */
  readonly id: string;
  /** Its priority. */
  readonly priority: number;
  /** The payload. */
  readonly value: Uint8Array;
  /** Which claim of the item this is: 1 for the first delivery. */
  readonly attempt: number;
  /** The create revision of the claim, which ack and nack check: it names this delivery. */
  readonly claimRevision: bigint;
  /** Header of the claim. */
  readonly header: ResponseHeader;
  /** The payload as UTF-8. */
  text(): string;
}

/** An item moved to the dead-letter keys after {@link WorkQueueOptions.maxAttempts} claims. */
export interface DeadLetter {
  /** The item's id. */
  readonly id: string;
  /** The payload. */
  readonly value: Uint8Array;
  /** The payload as UTF-8. */
  text(): string;
}

/** The default of {@link WorkQueueOptions.maxAttempts}. */
export const DEFAULT_WORK_MAX_ATTEMPTS = 5;

// Items read per round trip when looking for one nobody holds.
const PAGE = 64;

let lastSequence = 0n;

/** Unix nanoseconds as 20 digits, strictly increasing within this process. */
function nextSequence(): string {
  const now = BigInt(Date.now()) * 1_000_000n;
  lastSequence = now > lastSequence ? now : lastSequence + 1n;
  return lastSequence.toString().padStart(20, '0');
}

/** Checks that `item` is what claim returned, so a wrong argument never reads as a lost claim. */
function claimed(item: WorkItem): void {
  const { id, claimRevision, attempt, value } = (item ?? {}) as Partial<WorkItem>;
  if (
    typeof id !== 'string' ||
    typeof claimRevision !== 'bigint' ||
    typeof attempt !== 'number' ||
    !(value instanceof Uint8Array)
  ) {
    throw new InvalidArgumentError('expected a WorkItem returned by claim()');
  }
}

/** A claim refused for "lease not found" means the consumer's session is over. */
async function leased<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (!(error instanceof LeaseNotFoundError)) throw error;
    throw new SessionExpiredError("the session's lease is gone: nothing was claimed", {
      cause: error,
    });
  }
}

/**
 * A work queue with at-least-once delivery, for any number of producers and consumers.
 *
 * {@link claim} gives a consumer the first item nobody holds (lowest priority number, then oldest)
 * under the consumer's {@link Session}: a `claims/<id>` key on its lease marks it taken, so the
 * session's TTL is the visibility timeout. The item itself stays in etcd until {@link ack} deletes
 * it. A {@link nack}, a consumer crash (its lease expires) or a revoked session deletes only the
 * claim, and the item is claimed again with its attempt count incremented. After `maxAttempts`
 * claims an item that comes back is moved to `dead/<id>` ({@link deadLetters}).
 *
 * Every step is one etcd txn guarded by revisions: an item is never lost (it leaves `items/` only
 * by ack or dead-lettering) and never acked twice (an ack applies only while its own claim holds).
 * A consumer that lost its claim gets ClaimLostError from ack: the work may then be done twice, so
 * make it idempotent.
 *
 * @example
 * ```ts
 * const jobs = new WorkQueue(etcd, 'jobs', { maxAttempts: 3 });
 * await jobs.enqueue(JSON.stringify({ id: 42 }));
 * await using session = await Session.create(etcd, { ttl: 30 });
 * const item = await jobs.claim(session);
 * try {
 *   await handle(JSON.parse(item.text()));
 *   await jobs.ack(item);
 * } catch (error) {
 *   await jobs.nack(item);
 * }
 * ```
 */
export class WorkQueue {
  readonly #items: string;
  readonly #claims: string;
  readonly #attempts: string;
  readonly #dead: string;
  /** The claims an item gets before it is dead-lettered. */
  readonly maxAttempts: number;

  constructor(
    /** The client (or a namespace of it) the queue lives in. */
    readonly kv: KV,
    /** The queue's name: its keys are under `prefix + "/"`. */
    readonly prefix: string,
    options: WorkQueueOptions = {},
  ) {
    recipeName('WorkQueue', 'prefix', prefix);
    const max = options.maxAttempts ?? DEFAULT_WORK_MAX_ATTEMPTS;
    if (!Number.isSafeInteger(max) || max < 1) {
      throw new InvalidArgumentError(`maxAttempts must be an integer >= 1, got ${String(max)}`);
    }
    this.maxAttempts = max;
    this.#items = `${prefix}/items/`;
    this.#claims = `${prefix}/claims/`;
    this.#attempts = `${prefix}/attempts/`;
    this.#dead = `${prefix}/dead/`;
  }

  /** Adds `value` behind every item of its priority. */
  async enqueue(value: Bytes, options: WorkEnqueueOptions = {}): Promise<WorkEnqueued> {
    const priority = options.priority ?? 0;
    if (!Number.isInteger(priority) || priority < 0 || priority > MAX_QUEUE_PRIORITY) {
      throw new InvalidArgumentError(
        `priority must be an integer from 0 to ${MAX_QUEUE_PRIORITY}, got ${String(priority)}`,
      );
    }
    const payload = toBytes(value);
    for (;;) {
      throwIfAborted(options.signal);
      const id = `${String(priority).padStart(5, '0')}/${nextSequence()}`;
      const key = this.#items + id;
      // Another producer may have picked the same name: then try the next one.
      const result = await this.kv.txn().if(cmp.missing(key)).then(op.put(key, payload)).commit();
      if (result.succeeded) return { id, header: result.header };
    }
  }

  /**
   * Claims the first item nobody holds, waiting for one if there is none. The claim lasts until
   * {@link ack} or {@link nack}, or until the session ends. Fails with SessionExpiredError when
   * the session ends first, AbortedError when `signal` aborts.
   */
  async claim(session: Session, options: WorkClaimOptions = {}): Promise<WorkItem> {
    const linked = linkSignals(options.signal, session.signal);
    try {
      for (;;) {
        const found = await this.#claimFirst(session, linked.signal);
        if ('item' in found) return found.item;
        await this.#waitForChange(found.revision, linked.signal);
      }
    } catch (error) {
      if (error instanceof AbortedError && session.isDone && !options.signal?.aborted) {
        throw new SessionExpiredError('the session ended before an item was claimed', {
          cause: error,
        });
      }
      throw error;
    } finally {
      linked.release();
    }
  }

  /**
   * Deletes a claimed item: its work is done. Only the claim `item` names can: ClaimLostError
   * when it expired or was already acked or nacked (nothing is changed then). Not retried: after
   * OutcomeUnknownError, an ack may have applied, and a repeated ack then fails with
   * ClaimLostError.
   */
  async ack(item: WorkItem): Promise<ResponseHeader> {
    claimed(item);
    return this.#settle(item, [
      op.delete(this.#items + item.id),
      op.delete(this.#attempts + item.id),
      op.delete(this.#claims + item.id),
    ]);
  }

  /**
   * Gives a claimed item back: it is claimable again, or, when this was its last allowed attempt,
   * moved to the dead-letter keys. ClaimLostError when the claim no longer holds.
   */
  async nack(item: WorkItem): Promise<ResponseHeader> {
    claimed(item);
    const release = [op.delete(this.#claims + item.id)];
    if (item.attempt < this.maxAttempts) return this.#settle(item, release);
    return this.#settle(item, [
      op.put(this.#dead + item.id, item.value),
      op.delete(this.#items + item.id),
      op.delete(this.#attempts + item.id),
      ...release,
    ]);
  }

  /** The dead-lettered items, in id order. */
  async deadLetters(options: { readonly signal?: AbortSignal } = {}): Promise<DeadLetter[]> {
    const read = await this.kv.range({ prefix: this.#dead, signal: options.signal });
    return read.kvs.map((kv) => {
      const value = kv.value;
      return { id: kv.keyText().slice(this.#dead.length), value, text: () => toText(value) };
    });
  }

  async #settle(
    item: WorkItem,
    writes: ReturnType<typeof op.delete | typeof op.put>[],
  ): Promise<ResponseHeader> {
    const result = await this.kv
      .txn()
      .if(cmp.createRevision(this.#claims + item.id, '==', item.claimRevision))
      .then(...writes)
      .commit();
    if (!result.succeeded) throw new ClaimLostError(item.id, item.claimRevision);
    return result.header;
  }

  /**
   * One pass over the queue: claims the first item nobody holds, or says at which revision none
   * was free (the revision of the first read, so a change after any page read wakes the wait).
   */
  async #claimFirst(
    session: Session,
    signal: AbortSignal,
  ): Promise<{ readonly item: WorkItem } | { readonly revision: bigint }> {
    let from = toBytes(this.#items);
    let revision: bigint | undefined;
    for (;;) {
      throwIfAborted(signal);
      const read = await this.kv
        .txn()
        .then(
          op.range({ prefix: this.#claims, keysOnly: true }),
          op.range({ prefix: this.#attempts }),
          op.range({
            key: from,
            end: prefixEnd(toBytes(this.#items)),
            sort: { target: 'key', order: 'ascend' },
            limit: PAGE,
            keysOnly: true,
          }),
        )
        .commit({ signal });
      revision ??= read.header.revision;
      // A txn without compares always takes its then branch.
      if (!read.succeeded) throw new Error('a txn without compares took its else branch');
      const [claims, attempts, items] = read.responses;
      const held = new Set(claims.kvs.map((kv) => kv.keyText().slice(this.#claims.length)));
      const counts = new Map(
        attempts.kvs.map((kv) => [kv.keyText().slice(this.#attempts.length), kv] as const),
      );
      for (const candidate of items.kvs) {
        const id = candidate.keyText().slice(this.#items.length);
        if (held.has(id)) continue;
        throwIfAborted(signal);
        const count = counts.get(id);
        const item =
          Number(count?.text() ?? '0') >= this.maxAttempts
            ? await this.#deadLetter(id, candidate, count)
            : await this.#take(session, id, candidate, count);
        if (item) return { item };
      }
      const last = items.kvs.at(-1);
      if (!items.more || last === undefined) return { revision };
      from = new Uint8Array([...last.key, 0]);
    }
  }

  /** Claims `candidate` if nobody took it since it was read; undefined when another won. */
  async #take(
    session: Session,
    id: string,
    candidate: KeyValue,
    count: KeyValue | undefined,
  ): Promise<WorkItem | undefined> {
    const attempt = Number(count?.text() ?? '0') + 1;
    const claimKey = this.#claims + id;
    const attemptsKey = this.#attempts + id;
    // No signal and no retry: a claim that applied must be returned, or the item would stay
    // claimed until the session ends. An unknown outcome is the client's OutcomeUnknownError.
    const result = await leased(
      this.kv
        .txn()
        .if(
          cmp.missing(claimKey),
          cmp.modRevision(candidate.key, '==', candidate.modRevision),
          cmp.modRevision(attemptsKey, '==', count?.modRevision ?? 0n),
        )
        .then(
          op.put(claimKey, String(attempt), { lease: session.leaseId }),
          op.put(attemptsKey, String(attempt)),
          op.get(candidate.key),
        )
        .commit(),
    );
    if (!result.succeeded) return undefined;
    const stored = result.responses[2].kvs[0];
    if (stored === undefined) return undefined;
    const value = stored.value;
    return {
      id,
      priority: Number(id.slice(0, id.indexOf('/'))),
      value,
      attempt,
      claimRevision: result.header.revision,
      header: result.header,
      text: () => toText(value),
    };
  }

  /** Moves an item claimed `maxAttempts` times to `dead/`, unless someone else acted on it first. */
  async #deadLetter(
    id: string,
    candidate: KeyValue,
    count: KeyValue | undefined,
  ): Promise<undefined> {
    const stored = (await this.kv.get(candidate.key))?.value;
    if (stored === undefined) return undefined;
    await this.kv
      .txn()
      .if(
        cmp.missing(this.#claims + id),
        cmp.modRevision(candidate.key, '==', candidate.modRevision),
        cmp.modRevision(this.#attempts + id, '==', count?.modRevision ?? 0n),
      )
      .then(
        op.put(this.#dead + id, stored),
        op.delete(candidate.key),
        op.delete(this.#attempts + id),
      )
      .commit();
    return undefined;
  }

  /** Waits for an item to be added or a claim to end (nack, ack, expired lease) after `revision`. */
  async #waitForChange(revision: bigint, signal: AbortSignal): Promise<void> {
    const inner = new AbortController();
    const linked = linkSignals(signal, inner.signal);
    const from = revision + 1n;
    const waits = [
      waitForEvent(this.kv, { prefix: this.#items }, 'put', from, { signal: linked.signal }),
      waitForEvent(this.kv, { prefix: this.#claims }, 'delete', from, { signal: linked.signal }),
    ];
    try {
      await Promise.race(waits);
    } catch (error) {
      // History since the read was compacted: read the queue again from now.
      if (!(error instanceof CompactedError)) throw error;
    } finally {
      inner.abort();
      linked.release();
      await Promise.allSettled(waits);
    }
  }
}
