// One server of a differential run: sends each operation, keeps the view of the sequence that
// symbolic revisions and leases resolve against, and reads the final state.
import {
  etcdserverpb_KV as KV,
  etcdserverpb_Lease as Lease,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import type { RawClient } from '../support/grpc-client.js';
import { WatchConnection } from '../watch/watch-client.js';
import type { Operation } from './operations.js';
import {
  deleteRequest,
  putRequest,
  type ResolveContext,
  rangeRequest,
  resolveLease,
  resolveRevision,
  txnRequest,
} from './requests.js';

/** What a request got: a response, or a gRPC status. */
export type Outcome =
  | { readonly response: object }
  | { readonly error: { readonly code: number; readonly details: string } };

/** The state read after a sequence, on each server. */
export interface FinalState {
  readonly keys: Outcome;
  readonly hashKV: Outcome;
  readonly leases: Outcome;
  /** A watch of every key from just after the compaction (or 1), with prev_kv, until caught up. */
  readonly history: Outcome;
}

/** The key range of every key: key "\0", range_end "\0". */
const EVERY_KEY = { key: new Uint8Array([0]), rangeEnd: new Uint8Array([0]) };

/** How long the history watch may take to catch up. */
const HISTORY_TIMEOUT_MS = 5_000;

export class Participant implements ResolveContext {
  revision = 1;
  compactRevision: number | undefined;
  readonly picked: bigint[] = [];

  constructor(
    /** `embedded` or `etcd`, for reports. */
    readonly name: string,
    readonly endpoint: string,
    private readonly client: RawClient,
  ) {}

  /** Sends `op` and records what it changed in the sequence's view. */
  async apply(op: Operation): Promise<Outcome> {
    return this.capture(async () => {
      const response = await this.send(op);
      this.observe(response);
      return response;
    });
  }

  private async send(op: Operation): Promise<object> {
    const client = this.client;
    switch (op.type) {
      case 'put':
        return client.unary(KV.Put, putRequest(op, this));
      case 'delete':
        return client.unary(KV.DeleteRange, deleteRequest(op));
      case 'range':
        return client.unary(KV.Range, rangeRequest(op, this));
      case 'txn':
        return client.unary(KV.Txn, txnRequest(op.txn, this));
      case 'compact': {
        const revision = resolveRevision(op.revision, this);
        // Always physical: etcd applies a compaction to its key index and storage in the
        // background, and a HashKV read before that finishes hashes the old state (seen on 3.4:
        // put a, delete it, compact, HashKV gives one hash at once and another ~100 ms later).
        // A physical compaction answers only when that is done; the embedded server is done at
        // once either way, and the answer is the same.
        const response = await client.unary(KV.Compact, { revision, physical: true });
        this.compactRevision = Number(revision);
        return response;
      }
      case 'grant': {
        const response = await client.unary(Lease.LeaseGrant, { ID: op.id, TTL: BigInt(op.ttl) });
        if (op.id === 0n) this.picked.push(response.ID);
        return response;
      }
      case 'revoke':
        return client.unary(Lease.LeaseRevoke, { ID: resolveLease(op.lease, this) });
      case 'time-to-live':
        return client.unary(Lease.LeaseTimeToLive, {
          ID: resolveLease(op.lease, this),
          keys: op.keys,
        });
      case 'leases':
        return client.unary(Lease.LeaseLeases, {});
    }
  }

  private observe(response: object): void {
    const header = (response as { header?: { revision?: bigint } | null }).header;
    if (header?.revision) this.revision = Number(header.revision);
  }

  /** Every key, the HashKV, the leases and the history this server ended with. */
  async finalState(): Promise<FinalState> {
    const [keys, hashKV, leases, history] = await Promise.all([
      this.capture(() => this.client.unary(KV.Range, EVERY_KEY)),
      this.capture(() => this.client.unary(Maintenance.HashKV, { revision: 0n })),
      this.capture(() => this.client.unary(Lease.LeaseLeases, {})),
      this.capture(() => this.history()),
    ]);
    return { keys, hashKV, leases, history };
  }

  /**
   * The responses of a watch on every key, with prev_kv, from the first revision after the
   * compaction: every revision from there on has events, so the watch has caught up when it
   * delivered an event of the current revision.
   */
  private async history(): Promise<{ responses: object[]; incomplete?: string }> {
    // Revision 1 (the empty store) has no events; every later one has.
    const start = Math.max(2, (this.compactRevision ?? 0) + 1);
    const connection = new WatchConnection(this.endpoint);
    const responses: object[] = [];
    try {
      const stream = connection.open();
      stream.create({ ...EVERY_KEY, startRevision: BigInt(start), prevKv: true });
      const deadline = Date.now() + HISTORY_TIMEOUT_MS;
      const next = async () => {
        const [response] = await stream.take(1, Math.max(1, deadline - Date.now()));
        responses.push(response!);
        return response!;
      };
      const created = await next();
      if (created.canceled) return { responses };
      let last = 0n;
      while (start <= this.revision && last < BigInt(this.revision)) {
        const response = await next();
        if (response.canceled) break;
        last = response.events.at(-1)?.kv?.modRevision ?? last;
      }
      return { responses };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return { responses, incomplete: `not caught up to ${this.revision}: ${reason}` };
    } finally {
      connection.close();
    }
  }

  private async capture(call: () => Promise<object>): Promise<Outcome> {
    try {
      return { response: await call() };
    } catch (error) {
      if (isStatus(error)) return { error: { code: error.code, details: error.details } };
      throw error;
    }
  }
}

function isStatus(error: unknown): error is { code: number; details: string } {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'number' &&
    typeof (error as { details?: unknown }).details === 'string'
  );
}
