// The public shapes of watching: what a watch asks for, what it delivers, and how the one shared
// watch stream of a client is tuned and observed.
import type { Bytes } from '../bytes.js';
import type { EtcdError } from '../errors.js';
import type { ResponseHeader } from '../header.js';
import type { KeyValue } from '../key-value.js';
import type { KeyRange } from '../keys/key-range.js';

/** A server-side filter: `noPut` drops put events, `noDelete` drops delete events. */
export type WatchFilter = 'noPut' | 'noDelete';

/**
 * Which keys a watch covers: every form of {@link KeyRange} (`{ key }`, `{ key, end }`,
 * `{ prefix }`, `{ fromKey }`, `{ all: true }`), or `{ range: { start, end } }` for the keys in
 * [start, end). Inside a namespace every form is relative to it and never reaches outside it.
 */
export type WatchKeys =
  | (KeyRange & { readonly range?: never })
  | {
      readonly range: { readonly start: Bytes; readonly end: Bytes };
      readonly key?: never;
      readonly end?: never;
      readonly prefix?: never;
      readonly fromKey?: never;
      readonly all?: never;
    };

/** How to watch. Every field is optional. */
export interface WatchOptions {
  /**
   * First revision to deliver. Absent (or 0n): changes after the watch is created on the server;
   * {@link Watcher.ready} tells that revision. At or below the current revision, the history from
   * it is replayed first, then live changes follow. Above it, nothing is delivered until the store
   * reaches it. Below the compaction revision, the watcher ends with WatchCompactedError.
   */
  readonly startRevision?: bigint;
  /** Deliver each event's previous key-value (`prevKv`) when etcd still has it. Default false. */
  readonly prevKv?: boolean;
  /** Events the server should not send at all. Default none. */
  readonly filters?: readonly WatchFilter[];
  /**
   * Ask etcd for periodic progress notifications (every 10 minutes by default, etcd's
   * `--experimental-watch-progress-notify-interval`) while nothing changes: they keep the resume
   * point of a quiet watcher close to the current revision. Default false.
   */
  readonly progressNotify?: boolean;
  /** Aborting it closes the watcher, like {@link Watcher.close}. */
  readonly signal?: AbortSignal;
  /**
   * How many events the watcher holds for an iterator that is not consuming them, before it stops
   * receiving from the server (it cancels its server-side watch and re-creates it from the next
   * revision once the iterator has consumed half of them): memory stays bounded and nothing is
   * lost. Default 10_000. Watchers consumed only through events ('put', 'delete', 'batch') never
   * hold events.
   */
  readonly maxBufferedEvents?: number;
}

/** A watch: which keys ({@link WatchKeys}) and how ({@link WatchOptions}). */
export type WatchRequest = WatchKeys & WatchOptions;

/** One change of one key. */
export interface WatchEvent {
  /** `put` for a create or an update, `delete` for a deletion (or a lease expiry). */
  readonly type: 'put' | 'delete';
  /**
   * The key-value after the change. For a delete it holds only the key and `modRevision` (the
   * revision of the deletion); the value is empty and the other revisions are 0n.
   */
  readonly kv: KeyValue;
  /** The key-value before the change, when `prevKv` was asked for and etcd still had it. */
  readonly prevKv?: KeyValue;
}

/** Every event of one revision that the watch covers, in the order etcd applied them. */
export interface WatchBatch {
  /** The revision all the events belong to. */
  readonly revision: bigint;
  /** The events, never empty. */
  readonly events: readonly WatchEvent[];
  /**
   * The header of the response that carried them. Its `revision` is the store's revision when it
   * was sent: equal to {@link revision} for live changes, possibly higher during history replay.
   */
  readonly header: ResponseHeader;
}

/** The watcher has seen every change up to `revision` (a progress notification). */
export interface WatchProgress {
  readonly revision: bigint;
  readonly header: ResponseHeader;
}

/** A watcher is watching again after its stream failed. */
export interface WatchResumed {
  /** The revision it resumed from: the last delivered revision + 1. */
  readonly startRevision: bigint;
  /** The store revision when the server created the resumed watch. */
  readonly createdRevision: bigint;
}

/** The events a {@link Watcher} emits, with their arguments. */
export interface WatcherEvents {
  /** A put event, after the batch's 'batch' event. */
  put: (event: WatchEvent, batch: WatchBatch) => void;
  /** A delete event, after the batch's 'batch' event. */
  delete: (event: WatchEvent, batch: WatchBatch) => void;
  /** Every event of one revision. */
  batch: (batch: WatchBatch) => void;
  /** Nothing changed up to a revision. */
  progress: (progress: WatchProgress) => void;
  /**
   * The stream failed, or could not be opened; the watcher will resume by itself ('resumed').
   * Reported once per outage. Informational.
   */
  disconnected: (error: EtcdError) => void;
  /**
   * The watcher is watching again after a failure, with nothing lost and nothing repeated. (Not
   * reported for its first creation: that is ready().)
   */
  resumed: (resumed: WatchResumed) => void;
  /** The watcher failed for good (compaction, permission, client closed); 'end' follows. */
  error: (error: EtcdError) => void;
  /** The watcher ended (closed, aborted or failed). Listeners are removed after it. */
  end: () => void;
}

/** Why the shared watch stream closed. */
export type WatchStreamCloseReason =
  /** No watcher needs it any more (it reopens on the next watch). */
  | 'idle'
  /** The stream failed (connection lost, server restarted...); it reopens and watchers resume. */
  | 'error'
  /** It did not answer a progress request in time; it is replaced and watchers resume. */
  | 'stall'
  /** The server rejected the auth token; it reopens once with a fresh token. */
  | 'auth'
  /** The client closed. */
  | 'closed';

/** Reported when the shared watch stream closes. */
export interface WatchStreamCloseEvent {
  readonly reason: WatchStreamCloseReason;
  /** The failure, for 'error', 'stall' and 'auth'. */
  readonly error?: EtcdError;
}

/** Reported when a watcher's buffer fills up or drains (see {@link WatchOptions.maxBufferedEvents}). */
export interface WatchBackpressureEvent {
  /** True when the watcher stopped receiving, false when it asked the server again. */
  readonly paused: boolean;
  /** Events waiting for the iterator at that moment. */
  readonly bufferedEvents: number;
}

/**
 * Observability callbacks of the watch stream. Each is optional and costs nothing when absent;
 * exceptions thrown by a hook are ignored.
 */
export interface WatchHooks {
  /** The shared stream opened. */
  readonly onStreamOpen?: () => void;
  /** The shared stream closed. */
  readonly onStreamClose?: (event: WatchStreamCloseEvent) => void;
  /** A watcher resumed after a failure. */
  readonly onResume?: (event: WatchResumed) => void;
  /** A watcher paused or resumed because of its iterator's pace. */
  readonly onBackpressure?: (event: WatchBackpressureEvent) => void;
}

/**
 * Settings of the one watch stream a client shares between all its watchers.
 *
 * Stall detection: when the stream has been silent for `progressIntervalMs`, the client sends a
 * progress request; when a request (that one, or a watch creation) has had no answer of any kind
 * for `stallTimeoutMs`, the stream is declared dead, the connection of the endpoint it was on is
 * redialled (other endpoints' connections are left alone) and every watcher resumes on a new
 * stream. A dead stream is therefore replaced at most `progressIntervalMs + stallTimeoutMs` after
 * the last message it delivered.
 */
export interface WatchStreamOptions {
  /** Silence, in ms, after which the stream is probed with a progress request. Default 10_000. */
  readonly progressIntervalMs?: number;
  /** How long, in ms, a request may go unanswered before the stream is replaced. Default 5_000. */
  readonly stallTimeoutMs?: number;
  /** Largest delay between two attempts to reopen a failed stream, in ms. Default 5_000. */
  readonly maxReconnectDelayMs?: number;
  /**
   * How long, in ms, the stream stays open after its last watcher closed or paused. A watcher
   * started within that time has its create sent on the open stream instead of waiting about half
   * a round trip for a new one (a lock or election handoff opens a watch right after closing one).
   * The stream then closes with reason 'idle'; `client.close()` closes it at once. A lingering
   * stream that fails is dropped, not reopened. `0` closes it with the last watcher. Default
   * 2_000: longer than the gap between two acquisitions of a busy lock, short enough that an idle
   * client soon holds no stream on the server.
   */
  readonly idleStreamMs?: number;
  /** Observability callbacks. */
  readonly hooks?: WatchHooks;
}
