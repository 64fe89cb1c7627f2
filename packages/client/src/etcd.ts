// The facade users construct: one connection, the KV API on it, and the other services.
import { AuthClient } from './cluster/auth.js';
import { ClusterClient } from './cluster/cluster.js';
import {
  checkAutoSyncInterval,
  EndpointAutoSync,
  type EndpointSyncHooks,
  type EndpointSyncResult,
  reportedSync,
  syncEndpoints,
} from './cluster/endpoint-sync.js';
import { MaintenanceClient } from './cluster/maintenance.js';
import { Connection } from './connection/connection.js';
import type { CallHooks, ConnectionOptions } from './connection/options.js';
import type { CallOptions } from './connection/types.js';
import { ElectionClient } from './election/election.js';
import { ElectionObservers } from './election/election-observe.js';
import type { ElectionHooks } from './election/election-observe-events.js';
import { LockClient } from './election/lock.js';
import { ClientClosedError } from './errors.js';
import { KV, type SharedKvServices } from './kv/kv.js';
import { RangeStreamSupport } from './kv/scan.js';
import { LeaseClient } from './lease/lease.js';
import type { LeaseHooks } from './lease/lease-events.js';
import { LeaseKeeper } from './lease/lease-keepalive.js';
import { WatchHub } from './watch/hub.js';
import type { WatchStreamOptions } from './watch/types.js';

/**
 * Observability callbacks of an {@link Etcd} client, its `hooks` option. Each is optional and costs
 * nothing when absent. They run synchronously on the call path: keep them cheap. Exceptions thrown
 * by a hook are ignored. The connection takes its own ({@link CallHooks}); the facade hands the lease
 * hooks ({@link LeaseHooks}) to its lease keepalives, the endpoint sync hook
 * ({@link EndpointSyncHooks}) to its endpoint discovery, the election hooks ({@link ElectionHooks})
 * to its `election.observe()`.
 */
export interface ConnectionHooks extends CallHooks, LeaseHooks, EndpointSyncHooks, ElectionHooks {}

/**
 * Options of {@link Etcd}: how to connect (see {@link ConnectionOptions}), how to watch, and
 * endpoint discovery.
 */
export type EtcdOptions = ConnectionOptions & {
  /** Observability callbacks of the connection and of the services. */
  readonly hooks?: ConnectionHooks;
  /** Settings of the watch stream every watcher of this client shares (stall detection...). */
  readonly watch?: WatchStreamOptions;
  /**
   * Run {@link Etcd.syncEndpoints} in the background every so many ms, so the endpoints follow
   * membership changes; the first sync runs one interval after construction. Default 0: off. A
   * failed sync changes nothing and is only reported to the `onEndpointSync` hook; the next
   * interval tries again. The timer never keeps the process alive; `close()` stops it.
   */
  readonly autoSyncIntervalMs?: number;
};

/**
 * An etcd client. It is the {@link KV} API of the whole store (`get`, `range`, `scan`, `put`,
 * `delete`, `txn`, `compact`, `namespace`), plus the other services, all over one connection.
 *
 * Nothing connects before the first call. Close it when done ({@link close}, or `await using`).
 *
 * @example
 * ```ts
 * const etcd = new Etcd({ endpoints: ['http://127.0.0.1:2379'] });
 * await etcd.put('config/a', 'v1');
 * const kv = await etcd.get('config/a');
 * await etcd.close();
 * ```
 */
export class Etcd extends KV {
  /** The connection every call goes through (endpoints, retries, auth), for raw RPCs. */
  readonly connection: Connection;
  /** Leases: grant, revoke, time to live, list. */
  readonly lease: LeaseClient;
  /** Cluster membership. */
  readonly cluster: ClusterClient;
  /** Status, alarms, defragmentation, hashes, snapshots. */
  readonly maintenance: MaintenanceClient;
  /** Users, roles and permissions; enabling and disabling auth. */
  readonly auth: AuthClient;
  /**
   * The server's Lock service (etcd's v3lock): one call acquires a lock the server manages. For
   * the client-side lock with sessions and fencing, see `Mutex` in `@etcdkit/recipes` (same keys).
   */
  readonly lock: LockClient;
  /**
   * The server's Election service (etcd's v3election). For the client-side election with sessions
   * and leadership signals, see `Election` in `@etcdkit/recipes` (same keys).
   */
  readonly election: ElectionClient;
  readonly #hooks: EtcdOptions['hooks'];
  // The streams this client owns, as fields (Go's Client owns its Watcher and Lease): its
  // namespaces and services share them, close() ends them.
  readonly #watchHub: WatchHub;
  readonly #keeper: LeaseKeeper;
  readonly #observers: ElectionObservers;
  readonly #autoSync: EndpointAutoSync | undefined;
  /** What libraries built on the client own on it (the recipes' sessions), ended by close(). */
  readonly #owned = new Set<() => Promise<unknown>>();
  #closing: Promise<void> | undefined;

  /**
   * Validates the options (InvalidConfigError on a bad endpoint, mixed schemes, half a TLS key
   * pair...). Nothing is connected until the first call.
   */
  constructor(options: EtcdOptions) {
    const autoSyncIntervalMs = checkAutoSyncInterval(options?.autoSyncIntervalMs);
    const connection = new Connection(options);
    const shared: SharedKvServices = {
      watchHub: new WatchHub(connection, options.watch ?? {}),
      rangeStream: new RangeStreamSupport(),
    };
    super(connection, shared);
    this.connection = connection;
    this.#watchHub = shared.watchHub;
    this.#keeper = new LeaseKeeper(connection);
    this.#observers = new ElectionObservers();
    this.lease = new LeaseClient(connection, { hooks: options.hooks }, this.#keeper);
    this.cluster = new ClusterClient(connection);
    this.maintenance = new MaintenanceClient(connection);
    this.auth = new AuthClient(connection);
    this.lock = new LockClient(connection);
    this.election = new ElectionClient(connection, { hooks: options.hooks }, this.#observers);
    this.#hooks = options.hooks;
    this.#autoSync =
      autoSyncIntervalMs > 0
        ? new EndpointAutoSync(() => this.#sync(true), autoSyncIntervalMs)
        : undefined;
  }

  /**
   * Endpoint discovery, like etcd's Go client `Sync`: lists the members (with this client's
   * credentials) and makes the client URLs of every started voting member the endpoints
   * (`connection.setEndpoints`), so a client given one member's URL learns the others and
   * survives that member's loss. Members added but not started yet, and learners, are left out,
   * and so are URLs with another scheme than the client's (see
   * {@link EndpointSyncResult.ignored}); the client's TLS settings apply to every endpoint.
   *
   * Rejects with NoMemberEndpointsError, changing nothing, when the list names no usable URL, and
   * with the MemberList call's error when that fails. Reported to the `onEndpointSync` hook.
   *
   * @example
   * ```ts
   * const etcd = new Etcd({ endpoints: ['http://10.0.0.1:2379'] });
   * const { endpoints } = await etcd.syncEndpoints();
   * ```
   */
  syncEndpoints(options?: CallOptions): Promise<EndpointSyncResult> {
    return this.#sync(false, options);
  }

  #sync(auto: boolean, options?: CallOptions): Promise<EndpointSyncResult> {
    return reportedSync(
      () => syncEndpoints(this.connection, this.cluster, options),
      auto,
      this.#hooks,
      () => this.connection.closed,
    );
  }

  /**
   * Closes the client. First what was built on it ends (the recipes' sessions revoke their leases,
   * so their locks and leaderships end with them), while calls still work: a revoke is not sent
   * when the lease keepalive stream last found the server unreachable (the lease then expires after
   * its TTL), so close() does not wait for a connection that is not coming. Then calls in flight
   * and later calls reject with ClientClosedError, streams end, kept-alive leases end with reason
   * `client-closed` (not revoked: they expire after their TTL), election observations end with
   * ClientClosedError, the automatic endpoint sync stops. Resolves once every connection is
   * released. Calling it again returns the same promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  #close(): Promise<void> {
    this.#autoSync?.stop();
    // A session's revoke is then sent only if the server last answered the keepalive stream.
    this.#keeper.beginClose();
    // Every one starts before any ends; their failures are theirs (best effort, bounded by them).
    const owned = [...this.#owned].map(endQuietly);
    this.#owned.clear();
    // Without any, the streams end in this very call, as they always did.
    if (owned.length === 0) return this.#closeConnection();
    return Promise.all(owned).then(() => this.#closeConnection());
  }

  #closeConnection(): Promise<void> {
    this.#watchHub.close(new ClientClosedError());
    this.#keeper.close();
    this.#observers.close();
    return this.connection.close();
  }

  /**
   * @internal For packages built on the client (the recipes' `Session`): `end` runs when this
   * client closes, before its connection does, so it can still make calls (a session revokes its
   * lease). It must settle within a bound of its own; a rejection is ignored. Returns the function
   * that forgets it, for a resource that ended on its own. Once the client is closing, `end` is
   * not kept (the caller's own calls fail with ClientClosedError).
   */
  ownedByClient(end: () => Promise<unknown>): () => void {
    if (this.#closing !== undefined) return () => {};
    this.#owned.add(end);
    return () => this.#owned.delete(end);
  }

  /** Closes the client, for `await using etcd = new Etcd(...)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Runs what a client owns to its end, ignoring its failure (close goes on regardless). */
async function endQuietly(end: () => Promise<unknown>): Promise<void> {
  try {
    await end();
  } catch {
    // Its own concern: a session's lease expires after its TTL if the revoke failed.
  }
}
