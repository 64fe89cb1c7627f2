// Names the guides' samples use without defining them, with their types (see samples.test.ts).
import type { cmp as cmpBuilders, Etcd, KV, Lease, op as opBuilders } from '@etcdkit/client';
import type { Election, Leadership, Lock, Mutex, Session } from '@etcdkit/recipes';
import type { EmbeddedEtcd, VirtualClock } from '@etcdkit/server-embedded';

declare global {
  /** The client's op builders (`op.put`, `op.get`...), often used without their import. */
  const op: typeof opBuilders;
  /** The client's compare builders (`cmp.modRevision`...). */
  const cmp: typeof cmpBuilders;
  /** Some key. */
  const key: string;
  /** Some revision. */
  const rev: bigint;
  /** A connected client. */
  const etcd: Etcd;
  /** Any KV view (a client or a namespace). */
  const kv: KV;
  /** A lease granted by `etcd.lease.grant`. */
  const lease: Lease;
  /** A session of the recipes. */
  const session: Session;
  /** A mutex on `session`. */
  const mutex: Mutex;
  /** A held lock. */
  const lock: Lock;
  /** An election on `session`. */
  const election: Election;
  /** A won leadership. */
  const leadership: Leadership;
  /** An embedded server started with `clock: 'virtual'`. */
  const server: EmbeddedEtcd & { readonly clock: VirtualClock };
  /** A signal that ends the work. */
  const signal: AbortSignal;
}
