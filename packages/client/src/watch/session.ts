// One Watch bidi stream and the watches on it; per-stream state (watch ids, unanswered creations,
// fragments) dies with the stream. Protocol rules relied on: docs/watch.md.
import {
  type EtcdError,
  serverErrorClass,
  toEtcdError,
  UnavailableError,
  WatchCanceledError,
} from '../errors.js';
import type { etcdserverpb, mvccpb } from '../generated/protocol.js';
import { type ResponseHeader, toResponseHeader } from '../header.js';
import type { BidiStream } from '../transport/types.js';
import { WatchCompactedError } from './errors.js';
import { eventRevision, toBatches } from './events.js';
import type { WatchSpec } from './spec.js';
import { StallDetector, type StallTiming } from './stall.js';
import type { WatchBatch, WatchStreamCloseReason } from './types.js';

/** The bidi stream of the Watch RPC. */
export type WatchBidiStream = BidiStream<
  etcdserverpb.WatchRequest.$Properties,
  etcdserverpb.WatchResponse
>;

/** What a session needs from one watcher. Implemented by Watcher. */
export interface WatchSubscriber {
  readonly spec: WatchSpec;
  /** Revision the next creation starts at: 0n (from the creation revision) or last delivered + 1. */
  startRevision(): bigint;
  /** The server created the watch at `createdRevision` (the store revision then). */
  created(startRevision: bigint, createdRevision: bigint): void;
  /** Every event of one revision, newer than anything delivered before. */
  deliver(batch: WatchBatch): void;
  /** The watcher has seen everything up to `revision`. */
  progress(revision: bigint, header: ResponseHeader): void;
  /** The stream carrying the watch failed; the watcher will be created again on the next one. */
  disconnected(error: EtcdError): void;
  /** The watcher cannot go on. */
  fail(error: EtcdError): void;
}

/** What a session reports to its owner (the hub), which decides what happens next. */
export interface SessionOwner {
  /** The server refused to create, or cancelled, a watch with a reason. */
  rejected(subscriber: WatchSubscriber, error: EtcdError): void;
  /** A cancel this session was asked for (a pause) is confirmed. */
  released(subscriber: WatchSubscriber): void;
  /**
   * The stream stopped answering; the session is already closing. `endpoint` is the one the
   * stream was open on (`host:port`), when its stream told.
   */
  stalled(waitedMs: number, endpoint: string | undefined): void;
}

/** How a session ended. */
export interface SessionEnd {
  readonly reason: WatchStreamCloseReason;
  readonly error?: EtcdError;
  /** Whether the server answered anything on this stream. */
  readonly answered: boolean;
}

/** One watch on this stream. */
interface Registration {
  readonly subscriber: WatchSubscriber;
  /** The id sent with the creation; replaced by the server's answer. */
  id: bigint;
  readonly startRevision: bigint;
  /** Revisions at or below it were delivered before: never deliver them again. */
  floor: bigint;
  created: boolean;
  /** Known to be caught up with the store (so a stream-wide progress answer applies to it). */
  synced: boolean;
  /** A cancel was sent (a pause); events keep flowing until the server confirms it. */
  cancelling: boolean;
  /** The watcher left (closed): ignore everything about this watch from now on. */
  dropped: boolean;
}

/** A FIFO of unanswered creations, O(1) at both ends. */
class CreationQueue {
  #items: Registration[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  push(registration: Registration): void {
    this.#items.push(registration);
  }

  shift(): Registration | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head++];
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }
}

/** One Watch stream with the watches created on it. */
export class WatchSession {
  readonly #stream: WatchBidiStream;
  readonly #owner: SessionOwner;
  readonly #detector: StallDetector;
  readonly #pending = new CreationQueue();
  readonly #byId = new Map<bigint, Registration>();
  readonly #bySubscriber = new Map<WatchSubscriber, Registration>();
  readonly #fragments = new Map<bigint, mvccpb.Event.$Properties[]>();
  #nextId = 1n;
  #answered = false;
  #closing: { reason: WatchStreamCloseReason; error?: EtcdError } | undefined;

  constructor(stream: WatchBidiStream, owner: SessionOwner, timing: StallTiming) {
    this.#stream = stream;
    this.#owner = owner;
    this.#detector = new StallDetector(timing, {
      awaitingReply: () => this.#pending.size > 0,
      canProbe: () => this.#byId.size > 0,
      probe: () => this.#write({ progressRequest: {} }),
      stalled: (waitedMs) => {
        this.close(
          'stall',
          new UnavailableError({
            message: `the watch stream did not answer for ${waitedMs} ms; replacing it`,
          }),
        );
        this.#owner.stalled(waitedMs, this.#stream.endpoint);
      },
    });
  }

  /** True once the session is closing or closed: nothing more is sent on it. */
  get ended(): boolean {
    return this.#closing !== undefined;
  }

  /** Whether `subscriber` has a watch (created, pending, or being paused) on this stream. */
  has(subscriber: WatchSubscriber): boolean {
    return this.#bySubscriber.has(subscriber);
  }

  /** Sends the creation of `subscriber`'s watch, without waiting for earlier creations' answers. */
  create(subscriber: WatchSubscriber): void {
    if (this.#closing) return;
    // A watcher paused and resumed before its cancel was confirmed: forget the old watch; its late
    // events are ignored and the new one starts right after the last delivered revision.
    const previous = this.#bySubscriber.get(subscriber);
    if (previous) previous.dropped = true;
    const spec = subscriber.spec;
    const startRevision = subscriber.startRevision();
    const registration: Registration = {
      subscriber,
      id: this.#nextId++,
      startRevision,
      floor: startRevision > 0n ? startRevision - 1n : 0n,
      created: false,
      synced: false,
      cancelling: false,
      dropped: false,
    };
    this.#bySubscriber.set(subscriber, registration);
    this.#pending.push(registration);
    this.#write({
      createRequest: {
        key: spec.key,
        rangeEnd: spec.rangeEnd,
        startRevision,
        filters: spec.filters.length > 0 ? [...spec.filters] : undefined,
        prevKv: spec.prevKv,
        progressNotify: spec.progressNotify,
        watchId: registration.id,
        // Large responses are split instead of failing the stream; pieces are joined here.
        fragment: true,
      },
    });
    this.#detector.asked();
  }

  /**
   * Cancels `subscriber`'s watch. `pause`: events keep being delivered until the server confirms
   * (then the owner hears `released`); otherwise the watch is forgotten at once (a close).
   */
  cancel(subscriber: WatchSubscriber, pause: boolean): void {
    const registration = this.#bySubscriber.get(subscriber);
    if (!registration) return;
    if (pause) {
      registration.cancelling = true;
    } else {
      registration.dropped = true;
      this.#bySubscriber.delete(subscriber);
    }
    // Before its creation is answered the server id is not known yet; the cancel goes out then.
    if (registration.created) this.#sendCancel(registration);
  }

  /** Ends the session: the stream is cancelled and `run()` resolves with `reason`. */
  close(reason: WatchStreamCloseReason, error?: EtcdError): void {
    if (this.#closing) return;
    this.#closing = error ? { reason, error } : { reason };
    this.#detector.stop();
    this.#stream.cancel();
  }

  /**
   * Reads the stream until it ends. Resolves (never rejects) with how it ended; watchers that had
   * a watch on it hear `disconnected` unless the session was closed on purpose.
   */
  async run(): Promise<SessionEnd> {
    let failure: EtcdError | undefined;
    try {
      for await (const response of this.#stream) {
        if (this.#closing) break;
        this.#answered = true;
        this.#dispatch(response);
        this.#detector.heard();
      }
      if (!this.#closing) failure = new UnavailableError({ message: 'the watch stream ended' });
    } catch (error) {
      failure = toEtcdError(error);
    }
    this.#detector.stop();
    const closing = this.#closing ?? { reason: 'error' as const, error: failure };
    this.#closing = closing;
    this.#stream.cancel();
    const subscribers = [...this.#bySubscriber.keys()];
    this.#bySubscriber.clear();
    this.#byId.clear();
    this.#fragments.clear();
    const error = closing.error ?? failure;
    if (closing.reason !== 'idle' && closing.reason !== 'closed' && error) {
      for (const subscriber of subscribers) subscriber.disconnected(error);
    }
    return { reason: closing.reason, error, answered: this.#answered };
  }

  #write(request: etcdserverpb.WatchRequest.$Properties): void {
    if (this.#closing) return;
    try {
      this.#stream.write(request);
    } catch {
      // The stream already failed; its iteration reports why.
    }
  }

  #sendCancel(registration: Registration): void {
    this.#write({ cancelRequest: { watchId: registration.id } });
  }

  #dispatch(response: etcdserverpb.WatchResponse): void {
    if (response.created) {
      this.#onCreated(response);
      return;
    }
    const id = response.watchId ?? 0n;
    if (id === -1n) {
      this.#onStreamProgress(response);
      return;
    }
    const registration = this.#byId.get(id);
    if (!registration) return;
    if (response.canceled) {
      this.#onCanceled(registration, response);
      return;
    }
    if (registration.dropped) return;
    const events = response.events ?? [];
    const parts = this.#fragments.get(id);
    if (response.fragment) {
      if (parts) append(parts, events);
      else this.#fragments.set(id, events.slice());
      return;
    }
    let all: readonly mvccpb.Event.$Properties[] = events;
    if (parts) {
      this.#fragments.delete(id);
      append(parts, events);
      all = parts;
    }
    const header = toResponseHeader(response.header);
    if (all.length === 0) {
      // Sent only to watchers that are caught up, in order with their events.
      registration.synced = true;
      registration.subscriber.progress(header.revision, header);
      return;
    }
    const last = eventRevision(all[all.length - 1]!);
    // Live delivery is one response per revision at that revision; replay responses carry the
    // store's (higher) revision. Equal means the watcher has caught up.
    if (header.revision === last) registration.synced = true;
    for (const batch of toBatches(
      all,
      header,
      registration.floor,
      registration.subscriber.spec.strip,
    )) {
      registration.floor = batch.revision;
      registration.subscriber.deliver(batch);
      if (registration.dropped) return;
    }
  }

  #onCreated(response: etcdserverpb.WatchResponse): void {
    const registration = this.#pending.shift();
    if (!registration) return;
    const id = response.watchId ?? 0n;
    const header = toResponseHeader(response.header);
    if (response.canceled || id === -1n) {
      if (registration.dropped) return;
      this.#bySubscriber.delete(registration.subscriber);
      this.#reject(registration, response);
      return;
    }
    registration.id = id;
    registration.created = true;
    this.#byId.set(id, registration);
    if (registration.dropped || registration.cancelling) {
      this.#sendCancel(registration);
      if (registration.dropped) return;
    }
    const start = registration.startRevision;
    // etcd starts a watch without a start revision at the creation revision + 1.
    if (start === 0n) registration.floor = header.revision;
    // Caught up from the start when there is no history to replay.
    registration.synced = start === 0n || start > header.revision;
    registration.subscriber.created(start, header.revision);
  }

  #onCanceled(registration: Registration, response: etcdserverpb.WatchResponse): void {
    const id = registration.id;
    this.#byId.delete(id);
    this.#fragments.delete(id);
    if (registration.dropped) return;
    if (this.#bySubscriber.get(registration.subscriber) === registration) {
      this.#bySubscriber.delete(registration.subscriber);
    }
    const compactRevision = response.compactRevision ?? 0n;
    if (compactRevision > 0n) {
      registration.subscriber.fail(
        new WatchCompactedError(compactRevision, registration.startRevision),
      );
      return;
    }
    if (registration.cancelling && !response.cancelReason) {
      this.#owner.released(registration.subscriber);
      return;
    }
    this.#reject(registration, response);
  }

  #reject(registration: Registration, response: etcdserverpb.WatchResponse): void {
    const compactRevision = response.compactRevision ?? 0n;
    if (compactRevision > 0n) {
      registration.subscriber.fail(
        new WatchCompactedError(compactRevision, registration.startRevision),
      );
      return;
    }
    this.#owner.rejected(registration.subscriber, cancelError(response.cancelReason ?? ''));
  }

  #onStreamProgress(response: etcdserverpb.WatchResponse): void {
    if ((response.events ?? []).length > 0 || response.canceled) return;
    const header = toResponseHeader(response.header);
    for (const registration of this.#byId.values()) {
      // A watcher still replaying history has not seen everything up to this revision: etcd before
      // the fix of issue 15220 answered progress requests without waiting for it to catch up.
      if (registration.synced && !registration.dropped) {
        registration.subscriber.progress(header.revision, header);
      }
    }
  }
}

/** Appends `more` to `to` (a loop: a fragment can hold more events than call arguments allow). */
function append<T>(to: T[], more: readonly T[]): void {
  for (const item of more) to.push(item);
}

/** The typed error for a server-side cancel `reason`. */
function cancelError(reason: string): EtcdError {
  if (reason === '') return new WatchCanceledError();
  // etcd 3.4 sends the whole gRPC error text: "rpc error: code = PermissionDenied desc = ...".
  const message = /^rpc error: code = \w+ desc = (.*)$/s.exec(reason)?.[1] ?? reason;
  const known = serverErrorClass(message);
  if (known) return new known();
  return new WatchCanceledError({ message });
}
