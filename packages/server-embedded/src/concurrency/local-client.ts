// The server as its own client. etcd's v3lock and v3election servers run Go's client recipes over
// an in-process client of the member; here the recipes call the KV and lease appliers directly,
// with the same requests, so each one is validated, size-checked (by its real encoded size),
// quota-checked and applied exactly like a client's. Waiting uses watches on the server's
// watchable store (store-watch.ts).
import { etcdserverpb } from '@etcdkit/client/protocol';
import { EtcdServerError } from '../errors.js';
import type { KvApplier } from '../kv/kv-applier.js';
import type {
  DeleteRangeRequest,
  DeleteRangeResponse,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
} from '../kv/requests.js';
import type { LeaseApplier } from '../lease/lease-applier.js';
import type { WatchableStore } from '../watch/watchable-store.js';
import { StoreWatch, type StoreWatchOptions, type WatchTarget } from './store-watch.js';

/** What a {@link LocalClient} works on. */
export interface LocalClientOptions {
  readonly kv: KvApplier;
  readonly leases: LeaseApplier;
  readonly watchable: WatchableStore;
}

/** The requests the lock and election recipes make, applied on this server. */
export class LocalClient {
  private readonly kv: KvApplier;
  private readonly leases: LeaseApplier;
  private readonly watchable: WatchableStore;
  private halt = new AbortController();

  constructor(options: LocalClientOptions) {
    this.kv = options.kv;
    this.leases = options.leases;
    this.watchable = options.watchable;
  }

  /**
   * Aborts when the waits in progress are dropped (the server stops or restarts). A wait ended
   * that way undoes nothing: like an etcd member that goes down, the server leaves the keys it
   * queued to their leases. Read it when a wait starts: later waits get a fresh signal.
   */
  get halted(): AbortSignal {
    return this.halt.signal;
  }

  /** Ends every wait in progress without undoing anything (see {@link halted}). */
  dropWaits(): void {
    const halt = this.halt;
    this.halt = new AbortController();
    halt.abort(new Error('etcdserver: server stopped'));
  }

  range(request: RangeRequest): RangeResponse {
    return this.kv.range(request);
  }

  txn(request: TxnRequest): TxnResponse {
    return this.kv.txn(request, etcdserverpb.TxnRequest.encode(request).finish().length);
  }

  deleteRange(request: DeleteRangeRequest): DeleteRangeResponse {
    return this.kv.deleteRange(
      request,
      etcdserverpb.DeleteRangeRequest.encode(request).finish().length,
    );
  }

  /** Grants a lease of `ttlSeconds` with an id the server picks; returns the id. */
  grant(ttlSeconds: number): bigint {
    const request = { TTL: BigInt(ttlSeconds), ID: 0n };
    const size = etcdserverpb.LeaseGrantRequest.encode(request).finish().length;
    return this.leases.grant(request, size).ID ?? 0n;
  }

  /** Watches `target` from the next revision (see store-watch.ts). */
  watch(target: WatchTarget, options?: StoreWatchOptions): StoreWatch {
    return new StoreWatch(this.watchable, target, options);
  }
}

/**
 * An error as etcd's lock and election servers pass it on: their in-process client turns every
 * status into an error that carries the message but no gRPC status, so grpc-go answers Unknown
 * with the message (seen on etcd 3.4.23: Lock on an unknown lease fails with Unknown
 * "etcdserver: requested lease not found", not NotFound).
 */
export function withoutStatus(error: unknown): unknown {
  if (!(error instanceof EtcdServerError)) return error;
  return new Error(error.message, { cause: error });
}
