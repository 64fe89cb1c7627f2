// The server as its own client. etcd's v3lock and v3election servers run Go's client recipes over
// an in-process client of the member; here the recipes call the KV and lease appliers directly,
// with the same requests, so each one is validated, size-checked (by its real encoded size),
// quota-checked and applied exactly like a client's. Waiting uses watches on the server's
// watchable store (store-watch.ts).
//
// With auth, etcd's in-process client carries the incoming call's context, so every request is
// checked as the caller's: a view made with `as(credentials)` does the same. Undoing what a failed
// call queued runs as the server itself (`asServer()`), so that nothing leaks: etcd runs that delete
// on a context without the caller's token, which fails with auth on and leaves the key to its lease.
import { setMaxListeners } from 'node:events';
import { etcdserverpb } from '@etcdkit/client/protocol';
import type {
  DeleteRangeRequest,
  DeleteRangeResponse,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
} from '../api/requests.js';
import type { CallCredentials } from '../auth/types.js';
import { EtcdServerError } from '../errors.js';
import type { KvApplier } from '../kv/kv-applier.js';
import type { LeaseApplier } from '../lease/lease-applier.js';
import type { WatchableStore } from '../watch/watchable-store.js';
import { StoreWatch, type StoreWatchOptions, type WatchTarget } from './store-watch.js';

/** What a {@link LocalClient} works on. */
export interface LocalClientOptions {
  readonly kv: KvApplier;
  readonly leases: LeaseApplier;
  readonly watchable: WatchableStore;
}

/** What the views of one {@link LocalClient} share. */
interface Shared extends LocalClientOptions {
  /** Replaced by dropWaits(): aborting it ends the waits in progress. */
  halt: AbortController;
}

/** A halt controller: every waiting Lock, Campaign and Observe call listens to its signal. */
function newHalt(): AbortController {
  const halt = new AbortController();
  setMaxListeners(Number.POSITIVE_INFINITY, halt.signal);
  return halt;
}

/** The requests the lock and election recipes make, applied on this server. */
export class LocalClient {
  readonly #shared: Shared;
  /** Whose requests these are; undefined: the server's own, never checked. */
  readonly #credentials: CallCredentials | undefined;

  constructor(options: LocalClientOptions | { shared: Shared; credentials?: CallCredentials }) {
    if ('shared' in options) {
      this.#shared = options.shared;
      this.#credentials = options.credentials;
    } else {
      this.#shared = { ...options, halt: newHalt() };
      this.#credentials = undefined;
    }
  }

  /** This client acting for the caller that presented `credentials` (checked as with auth). */
  as(credentials: CallCredentials): LocalClient {
    return new LocalClient({ shared: this.#shared, credentials });
  }

  /** This client acting as the server itself: no permission checks. */
  asServer(): LocalClient {
    return new LocalClient({ shared: this.#shared });
  }

  /**
   * Aborts when the waits in progress are dropped (the server stops or restarts). A wait ended
   * that way undoes nothing: like an etcd member that goes down, the server leaves the keys it
   * queued to their leases. Read it when a wait starts: later waits get a fresh signal.
   */
  get halted(): AbortSignal {
    return this.#shared.halt.signal;
  }

  /** Ends every wait in progress without undoing anything (see {@link halted}). */
  dropWaits(): void {
    const halt = this.#shared.halt;
    this.#shared.halt = newHalt();
    // A plain error, as etcd's in-process client passes the stop on: it goes out as Unknown.
    halt.abort(new Error(EtcdServerError.messageOf('SERVER_STOPPED')));
  }

  range(request: RangeRequest): RangeResponse {
    return this.#shared.kv.range(request, this.#credentials);
  }

  txn(request: TxnRequest): TxnResponse {
    const size = etcdserverpb.TxnRequest.encode(request).finish().length;
    return this.#shared.kv.txn(request, size, this.#credentials);
  }

  deleteRange(request: DeleteRangeRequest): DeleteRangeResponse {
    const size = etcdserverpb.DeleteRangeRequest.encode(request).finish().length;
    return this.#shared.kv.deleteRange(request, size, this.#credentials);
  }

  /** Grants a lease of `ttlSeconds` with an id the server picks; returns the id. */
  grant(ttlSeconds: number): bigint {
    const request = { TTL: BigInt(ttlSeconds), ID: 0n };
    const size = etcdserverpb.LeaseGrantRequest.encode(request).finish().length;
    return this.#shared.leases.grant(request, size, this.#credentials).ID ?? 0n;
  }

  /** Watches `target` from the next revision (see store-watch.ts). */
  watch(target: WatchTarget, options?: StoreWatchOptions): StoreWatch {
    return new StoreWatch(this.#shared.watchable, target, options);
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
