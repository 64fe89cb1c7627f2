// A store, lease applier and watchable store with the server's LocalClient over them, on a
// virtual clock: the lock and election algorithms run here with no gRPC and no sleeping.

import { LocalClient } from '../../src/concurrency/local-client.js';
import { ProposalLog } from '../../src/consensus/proposals.js';
import { VirtualClock } from '../../src/index.js';
import { KvApplier } from '../../src/kv/kv-applier.js';
import { LeaseApplier } from '../../src/lease/lease-applier.js';
import { LeaseTable } from '../../src/lease/lease-table.js';
import { MvccStore } from '../../src/mvcc/store.js';
import { WatchableStore } from '../../src/watch/watchable-store.js';
import { b, text } from '../support/bytes.js';

export function setup() {
  const clock = new VirtualClock();
  const table = new LeaseTable();
  const store = new MvccStore({ lessor: table });
  const proposals = new ProposalLog({ memberId: 0x1234n, maxRequestBytes: 1.5 * 1024 * 1024 });
  const leases = new LeaseApplier({ table, store, proposals, clock });
  leases.startExpiryChecks();
  const kv = new KvApplier({ store, lessor: table, proposals, maxTxnOps: 128 });
  const watchable = new WatchableStore(store);
  const client = new LocalClient({ kv, leases, watchable });

  /** A lease of `ttl` seconds. */
  const grant = (ttl = 30): bigint => leases.grant({ ID: 0n, TTL: BigInt(ttl) }, 4).ID ?? 0n;
  /** The keys under `prefix`, oldest first, as text. */
  const queue = (prefix: string): string[] =>
    kv
      .range({ key: b(prefix), rangeEnd: b(`${prefix}\xff`), sortOrder: 1, sortTarget: 2 })
      .kvs?.map((kv) => text(kv.key)) ?? [];
  /** The current value and revisions of `key`, if it exists. */
  const get = (key: string) => kv.range({ key: b(key) }).kvs?.[0];
  const del = (key: string) => kv.deleteRange({ key: b(key) }, 8).header?.revision ?? 0n;
  const revoke = (lease: bigint) => leases.revoke({ ID: lease }, 8);
  const compact = () => kv.compact({ revision: BigInt(store.revision) }, 8);
  return { clock, store, leases, kv, watchable, client, grant, queue, get, del, revoke, compact };
}

/** `name/<lease hex>`. */
export function keyOf(name: string, lease: bigint): string {
  return `${name}/${lease.toString(16)}`;
}

/** Lets pending promise continuations (and setImmediate sync passes) run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Whether `promise` has settled by now. */
export async function isPending(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol('pending');
  const first = await Promise.race([promise.catch(() => undefined), settle().then(() => pending)]);
  return first === pending;
}
