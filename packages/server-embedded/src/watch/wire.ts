// Watch responses in wire form, and the cancel reasons etcd sends, word for word.
import type { etcdserverpb, mvccpb } from '@etcdkit/client/protocol';
import { type ResponseHeader, toWireKeyValue } from '../api/requests.js';
import { encodeHeader } from '../api/response-encoding.js';
import { EncodedMessage } from '../encoded-message.js';
import { EtcdServerError } from '../errors.js';
import {
  emptyKeyValueFields,
  eventFieldSize,
  int64Size,
  type KeyValueFields,
  keyValueSize,
  ProtoWriter,
  varintSize,
  writeEventField,
} from '../mvcc/kv-encoding.js';
import type { MvccStore } from '../mvcc/store.js';
import type { KeyValue, MvccEvent } from '../mvcc/types.js';
import type { EncodedBatch } from './event-batch.js';

export type WireWatchRequest = etcdserverpb.WatchRequest.$Properties;
export type WireWatchCreateRequest = etcdserverpb.WatchCreateRequest.$Properties;
export type WireWatchResponse = etcdserverpb.WatchResponse.$Properties;
export type WireEvent = mvccpb.Event.$Properties;

/** Cancel reasons of a create request etcd refuses (mvcc's and rpctypes' error texts). */
export const CancelReason = {
  /** A client-chosen watch id already used on the stream. */
  DUPLICATE_ID: 'mvcc: duplicate watch ID provided on the WatchStream',
  /** range_end at or below key. */
  EMPTY_RANGE: 'mvcc: watcher range is empty',
  /** A negative start revision. */
  COMPACTED: EtcdServerError.messageOf('COMPACTED'),
} as const;

/** WatchCreateRequest.FilterType values. */
export const FilterType = { NOPUT: 0, NODELETE: 1 } as const;

/** The watch id of a refused create request (clientv3.InvalidWatchID). */
export const INVALID_WATCH_ID = -1n;

/**
 * `events` in wire form. With `prevKv`, deletes and puts that are not a key's creation carry the
 * key-value as of the revision before the event, read now; it is left out when that revision has
 * been compacted meanwhile, as etcd does.
 */
export function toWireEvents(
  events: readonly MvccEvent[],
  prevKv: boolean,
  store: MvccStore,
): WireEvent[] {
  return events.map((event): WireEvent => {
    const { kv } = event;
    const wire: WireEvent = { type: event.type === 'put' ? 0 : 1, kv: toWireKeyValue(kv) };
    const isCreate = event.type === 'put' && kv.createRevision === kv.modRevision;
    if (prevKv && !isCreate) {
      const previous = store.previousValue(kv.key, kv.modRevision);
      if (previous !== undefined) wire.prevKv = toWireKeyValue(previous);
    }
    return wire;
  });
}

/**
 * The WatchResponse of a history batch already encoded ({@link EncodedBatch}): the bytes
 * protobufjs would write for { header, watchId, events } (not canceled, no compact revision).
 */
export function encodeEventsResponse(
  header: ResponseHeader,
  watchId: bigint,
  batch: EncodedBatch,
): EncodedMessage {
  const out = responseStart(header, watchId, batch.byteLength);
  const { ranges, arena } = batch;
  for (let i = 0; i < ranges.length; i += 2) {
    out.raw(arena.bytes, ranges[i]!, ranges[i + 1]! - ranges[i]!);
  }
  return new EncodedMessage(out.bytes);
}

/** What encodeLiveResponse hands the encoder for each event: one, reused. */
const liveFields: KeyValueFields = emptyKeyValueFields();

/**
 * The WatchResponse of `events` without prev_kv: the bytes protobufjs would write for
 * { header, watchId, events: toWireEvents(events, false) } (not canceled, no compact revision),
 * written without the wire objects. The events' bytes are shared by every watcher sent the same
 * events of a commit in a row: only the header and the watch id are written for each.
 */
export function encodeLiveResponse(
  header: ResponseHeader,
  watchId: bigint,
  events: readonly MvccEvent[],
): EncodedMessage {
  const body = liveEventsBytes(events);
  const out = responseStart(header, watchId, body.length);
  out.raw(body, 0, body.length);
  return new EncodedMessage(out.bytes);
}

/** The events last written live (the same event objects: the same commit) and their bytes. */
let lastEvents: readonly MvccEvent[] = [];
let lastEventsBytes: Uint8Array = new Uint8Array(0);

/** The `events` fields of a WatchResponse of `events`. */
function liveEventsBytes(events: readonly MvccEvent[]): Uint8Array {
  if (events.length === lastEvents.length && events.length > 0) {
    let same = true;
    for (let i = 0; i < events.length && same; i++) same = events[i] === lastEvents[i];
    if (same) return lastEventsBytes;
  }
  const sizes: number[] = [];
  let body = 0;
  for (const { type, kv } of events) {
    const kvSize = keyValueSize(fieldsOf(kv));
    sizes.push(kvSize);
    body += eventFieldSize(type === 'delete', kvSize);
  }
  const out = new ProtoWriter(body);
  for (let i = 0; i < events.length; i++) {
    const { type, kv } = events[i]!;
    writeEventField(out, type === 'delete', fieldsOf(kv), sizes[i]!);
  }
  lastEvents = events;
  lastEventsBytes = out.bytes;
  return out.bytes;
}

function fieldsOf(kv: KeyValue): KeyValueFields {
  const fields = liveFields;
  fields.key = kv.key;
  fields.createRevision = kv.createRevision;
  fields.modRevision = kv.modRevision;
  fields.version = kv.version;
  fields.values = kv.value;
  fields.valueOffset = 0;
  fields.valueLength = kv.value.length;
  fields.lease = kv.lease;
  return fields;
}

/** A writer of exactly a response's size with its header and watch id written; `body` to come. */
function responseStart(header: ResponseHeader, watchId: bigint, body: number): ProtoWriter {
  // Kept for the next responses at the revision: a commit's events to every watcher share it.
  const headerBytes = encodeHeader(header);
  const size =
    1 +
    varintSize(headerBytes.length) +
    headerBytes.length +
    (watchId === 0n ? 0 : 1 + int64Size(watchId)) +
    body;
  const out = new ProtoWriter(size);
  out.bytes[out.length++] = (1 << 3) | 2;
  out.varint(headerBytes.length);
  out.raw(headerBytes, 0, headerBytes.length);
  if (watchId !== 0n) {
    out.bytes[out.length++] = 2 << 3;
    out.int64(watchId);
  }
  return out;
}
