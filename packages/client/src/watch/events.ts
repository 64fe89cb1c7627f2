// Turning the events of a watch response into per-revision batches: etcd never splits a revision
// across complete responses (fragments are joined first), so grouping by revision gives whole ones.
import { mvccpb } from '../generated/protocol.js';
import type { ResponseHeader } from '../header.js';
import { jsonReady } from '../json.js';
import { toKeyValue } from '../key-value.js';
import type { WatchBatch, WatchEvent } from './types.js';

/** The revision an event belongs to (the mod revision of its key-value). */
export function eventRevision(event: mvccpb.Event.$Properties): bigint {
  return event.kv?.modRevision ?? 0n;
}

/** One decoded event; keys mapped through `strip` (a namespace removes its prefix). */
export function toWatchEvent(
  event: mvccpb.Event.$Properties,
  strip: (stored: Uint8Array) => Uint8Array,
): WatchEvent {
  const type = event.type === mvccpb.Event.EventType.DELETE ? 'delete' : 'put';
  const kv = toKeyValue(event.kv ?? {}, strip);
  return event.prevKv ? { type, kv, prevKv: toKeyValue(event.prevKv, strip) } : { type, kv };
}

/**
 * The batches of a complete response, one per revision, in order. Revisions at or below `floor`
 * are left out (already delivered); they can only appear through a server bug, and skipping them
 * keeps the watcher's "no duplicate" promise.
 */
export function toBatches(
  events: readonly mvccpb.Event.$Properties[],
  header: ResponseHeader,
  floor: bigint,
  strip: (stored: Uint8Array) => Uint8Array,
): WatchBatch[] {
  const batches: WatchBatch[] = [];
  let revision = -1n;
  let current: WatchEvent[] | undefined;
  for (const event of events) {
    const r = eventRevision(event);
    if (r <= floor) continue;
    if (current === undefined || r !== revision) {
      revision = r;
      current = [];
      batches.push(jsonReady({ revision: r, events: current, header }));
    }
    current.push(toWatchEvent(event, strip));
  }
  return batches;
}
