// The gRPC server under a member: the server's own HTTP/2 (net/h2). It takes connections from the
// member's listeners (TCP, TLS and unix sockets alike) and serves the handlers the services
// register, every call passing the member's call gate and then any middleware
// (call-middleware.ts: a simulated cluster's leader gate).
import type { CallGate } from '../faults/call-gate.js';
import type { ServiceRegistry } from '../services/registry.js';
import type { CallMiddleware } from './call-middleware.js';
import type { ConnectionAcceptor } from './client-port.js';
import { Routes } from './h2/routes.js';
import { H2GrpcServer } from './h2/server.js';
import { H2Registry } from './h2-registry.js';

/** A member's gRPC server. */
export interface GrpcEngine {
  /** Where the member's listeners hand connections. */
  readonly acceptor: ConnectionAcceptor;
  /** Where the services register their handlers (once). */
  registry(): ServiceRegistry;
  /** Ends every call and connection at once. */
  shutdown(): void;
}

/** What the server is made from. */
export interface GrpcEngineOptions {
  readonly gate: CallGate;
  /** The largest request message accepted (gRPC's max receive message length). */
  readonly maxReceiveBytes: number;
  /** Middleware after the gate, in order (a simulated cluster's leader gate). */
  readonly middleware?: readonly CallMiddleware[];
}

/** A member's gRPC server on the server's own HTTP/2. */
export function grpcEngine(options: GrpcEngineOptions): GrpcEngine {
  const routes = new Routes();
  const server = new H2GrpcServer({ routes, maxReceiveBytes: options.maxReceiveBytes });
  return {
    acceptor: { accept: (connection) => server.handle(connection) },
    registry: () => new H2Registry(routes, options.gate, options.middleware),
    shutdown: () => void server.destroy(),
  };
}
