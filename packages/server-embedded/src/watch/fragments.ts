// Fragmenting a watch response (WatchCreateRequest.fragment): a response whose encoding reaches the
// limit (max-request-bytes + 512 KiB, what etcd's own gRPC layer would accept from a client) and has
// more than one event is sent as several responses, each with as many whole events as fit; all but
// the last carry fragment = true. A single event is never split, so a piece with one large event
// may still exceed the limit. The sizes are the exact protobuf encodings, as etcd measures them.
import { etcdserverpb, mvccpb } from '@etcdkit/client/protocol';

type WireWatchResponse = etcdserverpb.WatchResponse.$Properties;
type WireEvent = mvccpb.Event.$Properties;

/** Bytes of a varint encoding `value` (non-negative, below 2^53). */
function varintSize(value: number): number {
  let size = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

/** Bytes an event adds to a WatchResponse: tag, length and the event itself. */
function eventFieldSize(event: WireEvent): number {
  const size = mvccpb.Event.encode(event).finish().length;
  return 1 + varintSize(size) + size;
}

/** A cheap upper bound of eventFieldSize, to skip exact sizing when a response is clearly small. */
function eventFieldBound(event: WireEvent): number {
  const kvBound = (kv: mvccpb.KeyValue.$Properties | null | undefined): number =>
    kv ? 6 + (kv.key?.length ?? 0) + 6 + (kv.value?.length ?? 0) + 4 * 11 + 6 : 0;
  return 6 + 2 + kvBound(event.kv) + kvBound(event.prevKv);
}

function encodedSize(response: WireWatchResponse): number {
  return etcdserverpb.WatchResponse.encode(response).finish().length;
}

/** `response` as etcd sends it to a watch that asked for fragments, with `limit` in bytes. */
export function fragmentResponse(response: WireWatchResponse, limit: number): WireWatchResponse[] {
  const events = response.events ?? [];
  if (events.length < 2) return [response];
  const bare = { ...response, events: [] };
  const base = encodedSize(bare);
  let bound = base;
  for (const event of events) bound += eventFieldBound(event);
  if (bound < limit) return [response];
  const sizes = events.map(eventFieldSize);
  if (base + sizes.reduce((total, size) => total + size, 0) < limit) return [response];

  // Pieces are measured with fragment = true set, as etcd measures them.
  const pieceBase = encodedSize({ ...bare, fragment: true });
  const pieces: WireWatchResponse[] = [];
  let next = 0;
  while (next < events.length) {
    const first = next;
    let size = pieceBase;
    while (next < events.length) {
      const grown = size + sizes[next]!;
      if (next > first && grown >= limit) break;
      size = grown;
      next++;
    }
    pieces.push({ ...bare, events: events.slice(first, next), fragment: next < events.length });
  }
  return pieces;
}
