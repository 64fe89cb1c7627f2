// A small service to test (see examples/test/service.test.ts): instances register themselves under
// `instances/<name>` with a lease kept alive, so an instance that crashes disappears from discovery
// by itself once its lease's TTL runs out.
import { type Etcd, type Lease, OutcomeUnknownError } from '@etcdkit/client';

/** What an instance publishes about itself. */
export interface InstanceInfo {
  readonly name: string;
  readonly address: string;
}

/** A registered instance. */
export interface Registration {
  /** The lease the instance's key is attached to. */
  readonly lease: Lease;
  /** Deregisters: revokes the lease, which deletes the key. */
  close(): Promise<void>;
  /** Simulates a crash: stops the keepalive without deleting anything. */
  crash(): void;
}

const PREFIX = 'instances/';

/**
 * Registers `info` with a lease of `ttlSeconds`, kept alive. The put is idempotent (same key, same
 * value, same lease), so when its outcome is unknown (the connection dropped after the server may
 * have applied it) it is simply sent again.
 */
export async function register(
  etcd: Etcd,
  info: InstanceInfo,
  ttlSeconds: number,
): Promise<Registration> {
  const lease = await etcd.lease.grant(ttlSeconds, { keepAlive: true });
  const value = JSON.stringify(info);
  for (let attempt = 1; ; attempt++) {
    try {
      await etcd.put(`${PREFIX}${info.name}`, value, { lease });
      break;
    } catch (error) {
      if (!(error instanceof OutcomeUnknownError) || attempt >= 3) {
        await lease.revoke().catch(() => {});
        throw error;
      }
    }
  }
  return {
    lease,
    close: async () => {
      await lease.revoke();
    },
    crash: () => lease.release(),
  };
}

/** The instances registered now, by name. */
export async function discover(etcd: Etcd): Promise<InstanceInfo[]> {
  const { kvs } = await etcd.range({ prefix: PREFIX });
  return kvs.map((kv) => kv.json() as InstanceInfo);
}
