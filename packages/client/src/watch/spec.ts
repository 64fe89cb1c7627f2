// Validating a watch request into what the stream sends: the interval in the store's terms (the
// namespace applied), the filters and flags, the start revision and the buffering bound.
import { EmptyKeyError, InvalidArgumentError } from '../errors.js';
import { etcdserverpb } from '../generated/protocol.js';
import { toInterval } from '../keys/key-range.js';
import type { KeyPrefix } from '../keys/namespace.js';
import { bytesArg, flagArg, objectArg, revisionArg } from '../validate.js';
import type { WatchFilter, WatchRequest } from './types.js';

/** Default of {@link WatchOptions.maxBufferedEvents}. */
export const DEFAULT_MAX_BUFFERED_EVENTS = 10_000;

/** A validated watch, ready to be sent (in the store's key space). */
export interface WatchSpec {
  /** First key, namespace prefix included. */
  readonly key: Uint8Array;
  /** End of the range as etcd wants it: empty for one key, `\0` for "every key >= key". */
  readonly rangeEnd: Uint8Array;
  readonly filters: readonly etcdserverpb.WatchCreateRequest.FilterType[];
  readonly prevKv: boolean;
  readonly progressNotify: boolean;
  /** The requested start revision; 0n for "from the creation revision". */
  readonly startRevision: bigint;
  readonly maxBufferedEvents: number;
  readonly signal: AbortSignal | undefined;
  /** Maps a stored key to the key the caller sees (strips the namespace prefix). */
  readonly strip: (stored: Uint8Array) => Uint8Array;
}

const FILTERS: Record<WatchFilter, etcdserverpb.WatchCreateRequest.FilterType> = {
  noPut: etcdserverpb.WatchCreateRequest.FilterType.NOPUT,
  noDelete: etcdserverpb.WatchCreateRequest.FilterType.NODELETE,
};

const OPTION_FIELDS = new Set([
  'key',
  'end',
  'prefix',
  'fromKey',
  'all',
  'range',
  'startRevision',
  'prevKv',
  'filters',
  'progressNotify',
  'signal',
  'maxBufferedEvents',
]);

/** Validates `request` for a watch inside namespace `ns`. Throws InvalidArgumentError. */
export function watchSpec(request: WatchRequest, ns: KeyPrefix): WatchSpec {
  const o = objectArg<WatchRequest>(request, 'request');
  for (const field of Object.keys(o)) {
    if (!OPTION_FIELDS.has(field)) {
      throw new InvalidArgumentError(`unknown watch option ${JSON.stringify(field)}`);
    }
  }
  const range: unknown = Reflect.get(o, 'range');
  let selector: unknown = o;
  if (range !== undefined) {
    for (const other of ['key', 'end', 'prefix', 'fromKey', 'all']) {
      if (Reflect.get(o, other) !== undefined) {
        throw new InvalidArgumentError(`request: range cannot be combined with ${other}`);
      }
    }
    if (typeof range !== 'object' || range === null) {
      throw new InvalidArgumentError('request.range must be { start, end }');
    }
    selector = {
      key: bytesArg(Reflect.get(range, 'start'), 'request.range.start'),
      end: bytesArg(Reflect.get(range, 'end'), 'request.range.end'),
    };
  }
  const interval = toInterval(selector, 'request');
  // etcd reads an empty key as `\0`; reject it like every other single-key call does.
  if (interval.key.length === 0 && interval.end.length === 0) throw new EmptyKeyError();
  const wire = ns.interval(interval);
  return {
    key: wire.key,
    rangeEnd: wire.rangeEnd,
    filters: filtersArg(o.filters),
    prevKv: flagArg(o.prevKv, 'prevKv'),
    progressNotify: flagArg(o.progressNotify, 'progressNotify'),
    startRevision: revisionArg(o.startRevision, 'startRevision'),
    maxBufferedEvents: maxBufferedArg(o.maxBufferedEvents),
    signal: signalArg(o.signal),
    strip: stripperOf(ns),
  };
}

// One key mapper per namespace, shared by its watchers (an idle watcher should cost little).
const strippers = new WeakMap<KeyPrefix, (stored: Uint8Array) => Uint8Array>();

function stripperOf(ns: KeyPrefix): (stored: Uint8Array) => Uint8Array {
  let strip = strippers.get(ns);
  if (!strip) {
    strip = (stored) => ns.strip(stored);
    strippers.set(ns, strip);
  }
  return strip;
}

function filtersArg(value: unknown): etcdserverpb.WatchCreateRequest.FilterType[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new InvalidArgumentError("filters must be an array of 'noPut' and 'noDelete'");
  }
  const out = new Set<etcdserverpb.WatchCreateRequest.FilterType>();
  for (const filter of value) {
    if (filter !== 'noPut' && filter !== 'noDelete') {
      throw new InvalidArgumentError(
        `filters may hold only 'noPut' and 'noDelete', got ${JSON.stringify(filter)}`,
      );
    }
    out.add(FILTERS[filter as WatchFilter]);
  }
  return [...out];
}

function maxBufferedArg(value: unknown): number {
  if (value === undefined) return DEFAULT_MAX_BUFFERED_EVENTS;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) return value;
  throw new InvalidArgumentError(`maxBufferedEvents must be an integer >= 1, got ${String(value)}`);
}

function signalArg(value: unknown): AbortSignal | undefined {
  if (value === undefined || value instanceof AbortSignal) return value;
  throw new InvalidArgumentError('signal must be an AbortSignal');
}
