// One gRPC Watch stream (etcd's serverWatchStream and mvcc watchStream): the watch ids of the
// stream, its requests (create, cancel, progress), its progress ticks, and every response it sends,
// in one ordered queue. Because created replies, cancel replies, events and progress notifications
// all go through that queue in the order they are produced, no event of a watch can overtake its
// created reply and a progress reply is ordered with the events before it.

import { bytesOf, numberOf, type ResponseHeader } from '../api/requests.js';
import { compareBytes, isNullByte, keyString } from '../bytes.js';
import { type Clock, every, type Timer } from '../clock.js';
import type { EncodedMessage } from '../encoded-message.js';
import { fragmentResponse } from './fragments.js';
import { type MessageWriter, ResponseQueue, WATCH_RESPONSE_CAPACITY } from './response-queue.js';
import { STREAM_PROGRESS_WATCH_ID, type WatchableStore } from './watchable-store.js';
import type { Watcher, WatcherOptions, WatcherResponse, WatchSink } from './watcher.js';
import {
  CancelReason,
  encodeEventsResponse,
  encodeLiveResponse,
  FilterType,
  INVALID_WATCH_ID,
  toWireEvents,
  type WireWatchCreateRequest,
  type WireWatchRequest,
  type WireWatchResponse,
} from './wire.js';

/** etcd's default progress notification interval: 10 minutes. */
export const DEFAULT_PROGRESS_NOTIFY_INTERVAL_MS = 10 * 60 * 1000;
/** etcd raises shorter progress notification intervals to this. */
export const MIN_PROGRESS_NOTIFY_INTERVAL_MS = 100;
/**
 * Responses waiting on a stream that is not draining past which it stops reading requests (etcd's
 * control channel holds 16): a client that only writes gets HTTP/2 backpressure, not an ever
 * growing queue of created replies.
 */
const CONTROL_BACKLOG = 16;

/** What a watch stream needs from the server. */
export interface WatchStreamOptions {
  readonly watchable: WatchableStore;
  /** Drives progress notifications. */
  readonly clock: Clock;
  /** Interval between progress notifications, already clamped. */
  readonly progressNotifyIntervalMs: number;
  /** Encoded size from which responses of fragmenting watches are split (max-request-bytes + 512 KiB). */
  readonly fragmentLimitBytes: number;
  /** A response header (cluster, member, raft term) with the given revision. */
  readonly header: (revision: number) => ResponseHeader;
  /** Watch results that may wait on a congested stream. Default 128, as etcd. */
  readonly capacity?: number;
  /**
   * Checks that the stream's user may watch [key, rangeEnd) (etcd's range permission; `rangeEnd`
   * as sent, empty for one key): the reason to cancel the watch with, or undefined to create it.
   */
  readonly authorize?: (key: Uint8Array, rangeEnd: Uint8Array) => string | undefined;
  /**
   * A negative start revision is taken as 0 (now), as etcd 3.4 does; default false: refused as
   * compacted, as etcd does since 3.5.24 and 3.6.6.
   */
  readonly negativeStartIsNow?: boolean;
  /**
   * A progress request is answered at once with the current revision, even without watches or
   * with watches not synced yet, ahead of events still to be sent, as etcd 3.4 does (its recvLoop
   * puts the reply on the control channel: v3.4.23 etcdserver/api/v3rpc/watch.go); default false:
   * only once every watch is synced, after the events before it (etcd 3.5.8 on).
   */
  readonly progressAtOnce?: boolean;
}

/** The gRPC call, as the stream uses it: responses out, and flow control of requests in. */
export interface WatchCall extends MessageWriter<WireWatchResponse | EncodedMessage> {
  /** Stop delivering requests (the client then feels HTTP/2 backpressure). */
  pause(): void;
  /** Deliver requests again. */
  resume(): void;
}

/** A watch stream: feed it requests with {@link handle}, end it with {@link close}. */
export class WatchStream implements WatchSink {
  readonly #options: WatchStreamOptions;
  readonly #call: WatchCall;
  readonly #queue: ResponseQueue<WireWatchResponse | EncodedMessage>;
  /** Watches of this stream by id, in creation order; compacted ones stay until canceled. */
  readonly #watchers = new Map<bigint, Watcher>();
  /** Progress-notify watches, and whether nothing was sent for them since the last tick. */
  readonly #progressDue = new Map<bigint, boolean>();
  /** WatchSink: this stream only writes responses, so history may come encoded. */
  readonly writesBytes = true;
  #nextId = 0n;
  readonly #ticker: Timer;
  /** A watch result was refused since the queue last drained: tell the store when it has room. */
  #refused = false;
  #readingPaused = false;
  #closed = false;

  constructor(call: WatchCall, options: WatchStreamOptions) {
    this.#call = call;
    this.#options = options;
    this.#queue = new ResponseQueue(call, options.capacity ?? WATCH_RESPONSE_CAPACITY, () =>
      this.#written(),
    );
    // One ticker per stream, from when it opens, as etcd's send loop has.
    this.#ticker = every(options.clock, options.progressNotifyIntervalMs, () => this.#tick());
  }

  /** Number of watches on the stream, including ones canceled by a compaction. */
  get size(): number {
    return this.#watchers.size;
  }

  get accepting(): boolean {
    const accepting = this.#queue.accepting;
    if (!accepting) this.#refused = true;
    return accepting;
  }

  /** Queues a response of one of this stream's watchers (WatchSink). */
  send(watcher: Watcher, response: WatcherResponse): boolean {
    if (this.#closed) return true;
    const taken = this.#queue.offer({ render: () => this.#render(watcher, response) });
    if (!taken) this.#refused = true;
    return taken;
  }

  /** Handles one request of the client. */
  handle(request: WireWatchRequest): void {
    if (this.#closed) return;
    if (request.createRequest) this.#create(request.createRequest);
    else if (request.cancelRequest) this.#cancel(request.cancelRequest.watchId ?? 0n);
    else if (request.progressRequest) this.#progress();
    // Anything else (an empty request) is ignored, as etcd does, rather than ending the stream.
  }

  /** Ends the stream: every watch is removed from the store and nothing more is sent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#ticker.cancel();
    this.#queue.close();
    for (const watcher of this.#watchers.values()) this.#options.watchable.cancel(watcher);
    this.#watchers.clear();
    this.#progressDue.clear();
  }

  #create(request: WireWatchCreateRequest): void {
    const { watchable } = this.#options;
    const refuse = (cancelReason: string) =>
      this.#control({
        header: this.#options.header(watchable.revision),
        watchId: INVALID_WATCH_ID,
        created: true,
        canceled: true,
        cancelReason,
      });
    // An empty key means the smallest key, "\0".
    const key = bytesOf(request.key).length === 0 ? new Uint8Array([0]) : bytesOf(request.key);
    let startRevision = numberOf(request.startRevision);
    if (startRevision < 0) {
      if (this.#options.negativeStartIsNow !== true) {
        refuse(CancelReason.COMPACTED);
        return;
      }
      startRevision = 0;
    }
    const denied = this.#options.authorize?.(key, bytesOf(request.rangeEnd));
    if (denied !== undefined) {
      refuse(denied);
      return;
    }
    // range_end: empty watches the one key, "\0" every key from `key` on, anything else [key, end).
    const rangeEnd = bytesOf(request.rangeEnd);
    const single = rangeEnd.length === 0;
    const unbounded = isNullByte(rangeEnd);
    if (!single && !unbounded && compareBytes(key, rangeEnd) >= 0) {
      refuse(CancelReason.EMPTY_RANGE);
      return;
    }
    let id = request.watchId ?? 0n;
    if (id === 0n) {
      // Auto ids count up from 0 and are never reused on the stream, skipping ids in use.
      while (this.#watchers.has(this.#nextId)) this.#nextId++;
      id = this.#nextId++;
    } else if (this.#watchers.has(id)) {
      refuse(CancelReason.DUPLICATE_ID);
      return;
    }
    const filters = request.filters ?? [];
    const options: WatcherOptions = {
      keys: {
        key: keyString(key),
        single,
        end: single || unbounded ? undefined : keyString(rangeEnd),
      },
      startRevision,
      noPut: filters.includes(FilterType.NOPUT),
      noDelete: filters.includes(FilterType.NODELETE),
      prevKv: request.prevKv === true,
      fragment: request.fragment === true,
      progressNotify: request.progressNotify === true,
    };
    // Queued before the watcher exists, so nothing of the watch can be queued ahead of it.
    this.#control({ header: this.#options.header(watchable.revision), watchId: id, created: true });
    this.#watchers.set(id, watchable.watch(id, options, this));
    if (options.progressNotify) this.#progressDue.set(id, true);
  }

  #cancel(id: bigint): void {
    const watcher = this.#watchers.get(id);
    // Canceling an id that is not on the stream gets no reply at all.
    if (watcher === undefined) return;
    this.#options.watchable.cancel(watcher);
    this.#watchers.delete(id);
    this.#progressDue.delete(id);
    this.#control({
      header: this.#options.header(this.#options.watchable.revision),
      watchId: id,
      canceled: true,
    });
  }

  #progress(): void {
    const { watchable } = this.#options;
    if (!this.#options.progressAtOnce) {
      watchable.progress(this.#watchers.values(), STREAM_PROGRESS_WATCH_ID);
      return;
    }
    // Whether or not the watches caught up: the events of those that did not come after it.
    this.#control({
      header: this.#options.header(watchable.revision),
      watchId: STREAM_PROGRESS_WATCH_ID,
    });
  }

  #control(message: WireWatchResponse): void {
    this.#queue.push({ render: () => [message] });
    if (!this.#readingPaused && this.#queue.length > CONTROL_BACKLOG) {
      this.#readingPaused = true;
      this.#call.pause();
    }
  }

  /** Turns a watcher's response into wire messages, at the moment it is written. */
  #render(watcher: Watcher, response: WatcherResponse): (WireWatchResponse | EncodedMessage)[] {
    const { events, watchId, compactRevision, encoded } = response;
    // A response with events makes the next progress tick of the watch unnecessary.
    const any = events.length > 0 || (encoded !== undefined && encoded.count > 0);
    if (any && this.#progressDue.has(watchId)) this.#progressDue.set(watchId, false);
    // Only watches without fragments get encoded history (see WatchableStore).
    if (encoded !== undefined) {
      return [encodeEventsResponse(this.#options.header(response.revision), watchId, encoded)];
    }
    // Events without prev_kv are written straight to bytes, without wire objects. A watch with
    // fragments (etcdkit's client always asks) gets them too when the response would not be
    // split: one event, or below the limit (fragmentResponse's rule), which nearly all are.
    const { prevKv, fragment } = watcher.options;
    if (events.length > 0 && compactRevision === 0 && !prevKv) {
      const encoded = encodeLiveResponse(this.#options.header(response.revision), watchId, events);
      if (
        !fragment ||
        watchId !== watcher.id ||
        events.length < 2 ||
        encoded.bytes.length < this.#options.fragmentLimitBytes
      ) {
        return [encoded];
      }
    }
    const message: WireWatchResponse = {
      header: this.#options.header(response.revision),
      watchId,
      events: toWireEvents(events, watcher.options.prevKv, this.#options.watchable.appliedStore),
      compactRevision: BigInt(compactRevision),
      canceled: compactRevision !== 0,
    };
    if (!watcher.options.fragment || watchId !== watcher.id) return [message];
    return fragmentResponse(message, this.#options.fragmentLimitBytes);
  }

  /** Queued responses went out. */
  #written(): void {
    if (this.#closed) return;
    if (this.#refused && this.#queue.accepting) {
      this.#refused = false;
      this.#options.watchable.resume();
    }
    if (this.#readingPaused && this.#queue.length <= CONTROL_BACKLOG) {
      this.#readingPaused = false;
      this.#call.resume();
    }
  }

  /**
   * A progress tick: each progress-notify watch that got nothing since the last tick is sent its
   * progress, if it is synced (the store decides); then every one of them is due again.
   */
  #tick(): void {
    for (const [id, due] of this.#progressDue) {
      const watcher = this.#watchers.get(id);
      if (due && watcher !== undefined) this.#options.watchable.progress([watcher], id);
      this.#progressDue.set(id, true);
    }
  }
}

/** The progress interval etcd would use for `requestedMs` (unset or not positive: the default). */
export function progressNotifyInterval(requestedMs: number | undefined): number {
  if (requestedMs === undefined || !(requestedMs > 0)) return DEFAULT_PROGRESS_NOTIFY_INTERVAL_MS;
  return Math.max(requestedMs, MIN_PROGRESS_NOTIFY_INTERVAL_MS);
}
