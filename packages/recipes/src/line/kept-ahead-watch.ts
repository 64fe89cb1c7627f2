// The watch of the key just ahead of a Mutex waiter in a long line, kept by the session across its
// waits: contenders that lock again after each unlock queue in the same order every cycle, so a
// waiter's key ahead is usually the same key (the same session's) each time, and a watch of it
// created and cancelled per wait costs the waiting process two more answers per cycle. Only the
// long line's wait uses it: there a delete of the key ahead is checked by a read of the line
// (turn.ts), so a delete seen before the wait began is handed over as the latest one.
import type { WatchBatch } from '@etcdkit/client';
import { Slot } from '@etcdkit/client/internal';
import { STOPPED } from '../errors.js';
import type { Session } from '../session/session.js';
import { IdleClose } from './idle-close.js';
import { closeSoon, type KeyListener, type KeySubscription, watchKeyNow } from './turn.js';

/** How long a kept watch stays open with no wait on it (the next wait is usually sooner). */
const IDLE_MS = 1_000;

const KEPT = new Slot(() => new Map<string, KeptKeyWatch>());

/**
 * @internal The deletes of `key` after `after`, from the session's kept watch of it (created from
 * now when there is none): `covered` resolves with the revision after which every delete is
 * delivered; a delete above `after` seen before is delivered at once.
 */
export function keptKeyWatch(
  session: Session,
  key: Uint8Array,
  after: bigint,
  listener: KeyListener,
): KeySubscription {
  if (session.signal.aborted) return watchKeyNow(session.etcd, key, after, listener);
  const byKey = session.slots.get(KEPT);
  const name = Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
  // The waiter's place changed: a watch of another key no wait uses would only wake this process
  // with that key's deletes until it idles out; its cancel goes with the next request.
  for (const [other, watch] of byKey) {
    if (other !== name && watch.unused) closeSoon(session.etcd, () => watch.closeIfUnused());
  }
  let kept = byKey.get(name);
  if (kept === undefined) {
    const made = new KeptKeyWatch(session, key, () => {
      if (byKey.get(name) === made) byKey.delete(name);
    });
    kept = made;
    byKey.set(name, made);
  }
  return kept.subscribe(after, listener);
}

/** A session's watch of one key's deletes, shared by its waits behind that key. */
class KeptKeyWatch {
  readonly #listeners = new Set<KeyListener>();
  readonly #stop = new AbortController();
  readonly #forget: () => void;
  readonly #session: Session;
  readonly #onSessionDone = () => this.#close();
  /** The revision the watch was created at: every delete after it is delivered. */
  readonly #created: Promise<bigint>;
  /** The latest batch delivered (a delete of the key). */
  #last: WatchBatch | undefined;
  readonly #idleClose = new IdleClose(
    IDLE_MS,
    () => this.#listeners.size > 0 || this.#stop.signal.aborted,
    () => this.#close(),
  );

  constructor(session: Session, key: Uint8Array, forget: () => void) {
    this.#forget = forget;
    this.#session = session;
    const start = Buffer.from(key);
    const watcher = session.etcd.watch({
      range: { start, end: Buffer.concat([start, ZERO]) },
      startRevision: 0n,
      filters: ['noPut'],
      signal: this.#stop.signal,
    });
    this.#created = watcher.ready();
    // A failed creation reaches the listeners through the error event.
    this.#created.catch(() => undefined);
    watcher.on('batch', (batch) => {
      this.#last = batch;
      for (const listener of [...this.#listeners]) listener.batch(batch);
    });
    watcher.on('error', (error) => {
      const listeners = [...this.#listeners];
      this.#close();
      for (const listener of listeners) listener.error(error);
    });
    session.signal.addEventListener('abort', this.#onSessionDone, { once: true });
  }

  /** No wait uses it now. */
  get unused(): boolean {
    return this.#listeners.size === 0;
  }

  closeIfUnused(): void {
    if (this.unused) this.#close();
  }

  subscribe(after: bigint, listener: KeyListener): KeySubscription {
    this.#listeners.add(listener);
    const last = this.#last;
    if (last !== undefined && last.revision > after) listener.batch(last);
    return {
      covered: this.#created,
      close: () => {
        if (this.#listeners.delete(listener) && this.#listeners.size === 0) this.#idleClose.idle();
      },
    };
  }

  #close(): void {
    if (this.#stop.signal.aborted) return;
    this.#forget();
    this.#idleClose.cancel();
    this.#session.signal.removeEventListener('abort', this.#onSessionDone);
    this.#listeners.clear();
    this.#stop.abort(STOPPED);
  }
}

const ZERO = Buffer.from([0]);
