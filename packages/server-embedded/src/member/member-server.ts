// The network side of one member: a gRPC server (net/grpc-engine.ts) behind the call gate,
// listening on the member's client URLs, with every etcd v3 service registered over a
// ServiceContext. The state it serves (the ServerCore) is built apart, so a simulated cluster can
// serve one core from several members.
import { LocalClient } from '../concurrency/local-client.js';
import { CallGate } from '../faults/call-gate.js';
import type { ServerLogger } from '../logger.js';
import type { CallMiddleware } from '../net/call-middleware.js';
import type { ClientListeners } from '../net/client-listeners.js';
import { type ClientPortOptions, openClientPort } from '../net/client-port.js';
import { type GrpcEngine, grpcEngine } from '../net/grpc-engine.js';
import { contextView } from '../net/http1/context-view.js';
import { EtcdEndpoints } from '../net/http1/etcd-endpoints.js';
import { registerAuthService } from '../services/auth-service.js';
import { registerClusterService } from '../services/cluster-service.js';
import type { ServiceContext } from '../services/context.js';
import { registerElectionService } from '../services/election-service.js';
import { registerHealthService } from '../services/health-service.js';
import { registerKvService } from '../services/kv-service.js';
import { registerLeaseService } from '../services/lease-service.js';
import { registerLockService } from '../services/lock-service.js';
import { registerMaintenanceService } from '../services/maintenance-service.js';
import { SERVED_SERVICES } from '../services/served-services.js';
import { registerWatchService } from '../services/watch-service.js';
import { WatchableStore } from '../watch/watchable-store.js';

/** gRPC accepts this much more than max-request-bytes, as etcd does, so the limit is etcd's error. */
const GRPC_OVERHEAD_BYTES = 512 * 1024;

/** Options of {@link MemberServer.open}. */
export interface MemberServerOptions extends ClientPortOptions {
  readonly maxRequestBytes: number;
  /**
   * Middleware every call passes after the call gate (a simulated cluster's leader gate): a
   * paused member holds a call before it sees it.
   */
  readonly middleware?: readonly CallMiddleware[];
}

/** What serving the services started, for the member's stop and restart. */
export interface ServedServices {
  /** This member's watchers over the store (its Watch service, Lock and Election waits). */
  readonly watchable: WatchableStore;
  /** Ends every open watch stream. */
  closeWatchStreams(): void;
  /** Ends the waits of Lock, Campaign and Observe without undoing anything. */
  dropWaits(): void;
}

/** A member's gRPC server and client listeners. */
export class MemberServer {
  /** The gRPC server. */
  readonly engine: GrpcEngine;
  /** Fault injection and durability: every call passes it. */
  readonly gate: CallGate;
  readonly listeners: ClientListeners;
  /** The URLs MemberList reports for the member. */
  readonly advertisedUrls: readonly string[];

  private constructor(
    engine: GrpcEngine,
    gate: CallGate,
    port: { listeners: ClientListeners; advertisedUrls: readonly string[] },
  ) {
    this.engine = engine;
    this.gate = gate;
    this.listeners = port.listeners;
    this.advertisedUrls = port.advertisedUrls;
  }

  /**
   * Validates the URL options and listens. Nothing is answered until {@link serve} registers the
   * services, which the caller does before it next waits, so no connection is served in between.
   */
  static async open(options: MemberServerOptions, logger: ServerLogger): Promise<MemberServer> {
    const gate = new CallGate();
    const engine = grpcEngine({
      gate,
      maxReceiveBytes: options.maxRequestBytes + GRPC_OVERHEAD_BYTES,
      middleware: options.middleware,
    });
    try {
      const port = await openClientPort(engine.acceptor, options, logger);
      return new MemberServer(engine, gate, port);
    } catch (error) {
      engine.shutdown();
      throw error;
    }
  }

  /** Closes a port that was opened but is not served (a start failing midway). */
  async abandon(): Promise<void> {
    await this.listeners.close();
    this.engine.shutdown();
  }

  /** Registers every etcd v3 service over `context`. */
  serve(context: ServiceContext, options: { progressNotifyIntervalMs?: number }): ServedServices {
    const registry = this.engine.registry();
    registerKvService(registry, context);
    registerMaintenanceService(registry, context);
    registerClusterService(registry, context);
    registerLeaseService(registry, context);
    registerAuthService(registry, context);
    registerHealthService(registry);
    const watchable = new WatchableStore(context.store, {
      replaysCompactionDelete: context.traits.compactionBoundaryDelete,
    });
    const closeWatchStreams = registerWatchService(registry, context, {
      watchable,
      clock: context.clock,
      progressNotifyIntervalMs: options.progressNotifyIntervalMs,
    });
    // Lock and Election run etcd's client recipes on the server itself, as etcd does.
    const local = new LocalClient({ kv: context.kv, leases: context.leases, watchable });
    registerLockService(registry, context, local);
    registerElectionService(registry, context, local);
    for (const service of SERVED_SERVICES) registry.unimplemented(service);
    this.engine.serveHttp(new EtcdEndpoints(contextView(context, context.traits.version)));
    return { watchable, closeWatchStreams, dropWaits: () => local.dropWaits() };
  }
}
