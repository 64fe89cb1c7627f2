// RangeStream (etcd 3.7): a range answered as a stream of chunks. The revision is pinned when the
// stream starts, chunks carry disjoint slices of the keys in order, and only the last chunk has the
// header, `more` and `count`, so that merging the chunks gives the Range response. Chunks start at
// 10 keys and double or halve to land near max-request-bytes, as etcd sizes them.
import { etcdserverpb } from '@etcdkit/client/protocol';
import { bytesOf, numberOf, type RangeRequest, type RangeResponse } from '../api/requests.js';
import type { MvccStore } from '../mvcc/store.js';
import { executeRange } from './range.js';

const INITIAL_CHUNK_KEYS = 10;

/**
 * The chunks of a checked RangeStream request. Each chunk is read when the consumer asks for it,
 * so writes and compactions can happen in between: reads stay at the pinned revision, and a
 * compaction past it ends the stream with the compacted error.
 */
export function* rangeStreamChunks(
  store: MvccStore,
  request: RangeRequest,
  maxRequestBytes: number,
): Generator<RangeResponse> {
  if (request.countOnly) {
    const response = executeRange(store, request, false);
    yield { header: response.header, count: response.count };
    return;
  }
  const requested = numberOf(request.limit);
  const totalLimit = requested === 0 ? Number.POSITIVE_INFINITY : requested;
  let limit = Math.min(INITIAL_CHUNK_KEYS, totalLimit);
  let key = bytesOf(request.key);
  let revision = numberOf(request.revision);
  let headerRevision = 0;
  let sent = 0;
  for (;;) {
    const chunk = executeRange(
      store,
      { ...request, key, limit: BigInt(limit), revision: BigInt(revision) },
      false,
    );
    const kvs = chunk.kvs ?? [];
    if (headerRevision === 0) {
      headerRevision = numberOf(chunk.header?.revision);
      if (revision === 0) revision = headerRevision;
    }
    sent += kvs.length;
    const more = chunk.more ?? false;
    const nextKey = more ? withZeroByte(bytesOf(kvs[kvs.length - 1]?.key)) : undefined;
    if (!more || sent === totalLimit) {
      let count = sent;
      if (nextKey !== undefined) {
        const rest = executeRange(store, {
          key: nextKey,
          rangeEnd: request.rangeEnd,
          revision: BigInt(revision),
          countOnly: true,
        });
        count += numberOf(rest.count);
      }
      yield { header: { revision: BigInt(headerRevision) }, kvs, more, count: BigInt(count) };
      return;
    }
    yield { kvs };
    key = nextKey!;
    limit = Math.min(
      nextChunkLimit(
        limit,
        etcdserverpb.RangeResponse.encode(chunk).finish().length,
        maxRequestBytes,
      ),
      totalLimit - sent,
    );
  }
}

function nextChunkLimit(limit: number, lastSize: number, targetSize: number): number {
  if (lastSize < targetSize / 2) limit *= 2;
  else if (lastSize > targetSize * 2) limit = Math.floor(limit / 2);
  return Math.max(limit, 1);
}

function withZeroByte(key: Uint8Array): Uint8Array {
  const next = new Uint8Array(key.length + 1);
  next.set(key);
  return next;
}
