// Observe, as Go's Election.Observe behaves behind etcd's election server: the current leader
// (or, when there is none, the first key put under the election's prefix), then every put to that
// leader's key, and when the key is deleted, the same again for the next leader. Leaders come in
// create-revision order and a deleted key is never reported as leader after its delete was seen.
//
// One prefix watch, created in the same synchronous step as the read, carries everything after the
// read; the consumer may be slow (a gRPC stream), and the watch keeps the order meanwhile.

import { toWireKeyValue, type WireKeyValue } from '../api/requests.js';
import { keyString } from '../bytes.js';
import type { LocalClient } from './local-client.js';
import { oldestUnder, queuePrefix } from './queue.js';
import { type StoreWatch, StoreWatchCompactedError } from './store-watch.js';

/** One observation: a leader's key-value and the revision its response header carries. */
export interface Observation {
  readonly kv: WireKeyValue;
  /**
   * The header revision etcd sends with it: the read's revision for a leader found by reading,
   * the put's revision for the first key put into an empty election, the watch response's revision
   * for a put to the leader's key.
   */
  readonly revision: bigint;
}

/**
 * The observations of the election `name`, until `signal` aborts (the iteration then throws its
 * reason). It ends quietly when the watch loses history to a compaction, as etcd's stream does.
 */
export async function* observe(
  client: LocalClient,
  name: Uint8Array,
  signal: AbortSignal,
): AsyncGenerator<Observation, void, undefined> {
  const prefix = queuePrefix(name);
  for (;;) {
    const read = client.range(oldestUnder(prefix));
    const watch = client.watch({ prefix });
    try {
      let current: Observation | undefined;
      const found = read.kvs?.[0];
      if (found !== undefined) {
        current = { kv: found, revision: read.header?.revision ?? 0n };
      } else {
        current = await firstPut(watch, signal);
      }
      yield current;
      // Go then watches the leader's key from the revision after the observation.
      const leaderKey = keyString(current.kv.key ?? new Uint8Array(0));
      for await (const next of leaderPuts(watch, leaderKey, current.revision, signal)) {
        yield next;
      }
    } catch (error) {
      if (error instanceof StoreWatchCompactedError) return;
      throw error;
    } finally {
      watch.close();
    }
  }
}

/** The first put under the watched prefix; its header revision is the put's own. */
async function firstPut(watch: StoreWatch, signal: AbortSignal): Promise<Observation> {
  for (;;) {
    const batch = await watch.next(signal);
    // Deletes are skipped: with no leader, only a new key can start a leadership.
    const put = batch.events.find((event) => event.type === 'put');
    if (put !== undefined) {
      return { kv: toWireKeyValue(put.kv), revision: BigInt(put.kv.modRevision) };
    }
  }
}

/** Every put to `key` after `after`, until its delete (then the generator returns). */
async function* leaderPuts(
  watch: StoreWatch,
  key: string,
  after: bigint,
  signal: AbortSignal,
): AsyncGenerator<Observation, void, undefined> {
  for (;;) {
    const batch = await watch.next(signal);
    for (const event of batch.events) {
      if (BigInt(event.kv.modRevision) <= after || keyString(event.kv.key) !== key) continue;
      if (event.type === 'delete') return;
      yield { kv: toWireKeyValue(event.kv), revision: BigInt(batch.revision) };
    }
  }
}
