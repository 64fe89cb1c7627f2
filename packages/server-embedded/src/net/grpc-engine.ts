// The gRPC server under a member: grpc-js's (with the unary fast path beside it), or the server's
// own HTTP/2 layer (net/h2). Either takes connections from the member's listeners and serves the
// handlers the services register, every call passing the member's call gate (and, on net/h2, any
// middleware after it).
import type { Socket } from 'node:net';
import type { CallGate } from '../faults/call-gate.js';
import { grpcJs } from '../grpc-js-module.js';
import type { ServiceRegistry } from '../services/registry.js';
import type { CallMiddleware } from './call-middleware.js';
import type { ConnectionAcceptor } from './client-port.js';
import { GrpcJsRegistry } from './grpc-js-registry.js';
import { Routes } from './h2/routes.js';
import { H2GrpcServer } from './h2/server.js';
import { H2Registry } from './h2-registry.js';
import { UnaryFastPath } from './unary-fast-path.js';

/**
 * Which gRPC server serves the calls: `'grpc-js'` (@grpc/grpc-js's server) or `'h2'` (the
 * embedded server's own HTTP/2, about half the server CPU per call; docs/embedded-server.md).
 */
export type ServerTransport = 'grpc-js' | 'h2';

/** The transport an EmbeddedEtcd serves on when its options name none. */
export const DEFAULT_SERVER_TRANSPORT: ServerTransport = 'h2';

/** A member's gRPC server. */
export interface GrpcEngine {
  /** Where the member's listeners hand connections. */
  readonly acceptor: ConnectionAcceptor;
  /** Where the services register their handlers (once). */
  registry(): ServiceRegistry;
  /** Ends every call and connection at once. */
  shutdown(): void;
}

/** What both servers are made from. */
export interface GrpcEngineOptions {
  readonly gate: CallGate;
  /** The largest request message accepted (gRPC's max receive message length). */
  readonly maxReceiveBytes: number;
  /** Middleware after the gate (a simulated cluster's leader gate); 'h2' only. */
  readonly middleware?: readonly CallMiddleware[];
}

/** grpc-js's server, with unary calls answered beside it (the fast path). */
export function grpcJsEngine(options: GrpcEngineOptions): GrpcEngine {
  if ((options.middleware ?? []).length > 0) {
    throw new Error("transport 'grpc-js' serves no middleware (simulated clusters use 'h2')");
  }
  const server = new (grpcJs().Server)({
    'grpc.max_receive_message_length': options.maxReceiveBytes,
    'grpc.max_send_message_length': -1,
    interceptors: [options.gate.interceptor()],
  });
  const injector = server.createConnectionInjector(grpcJs().ServerCredentials.createInsecure());
  let fastPath: UnaryFastPath | undefined = new UnaryFastPath(
    options.gate,
    options.maxReceiveBytes,
  );
  if (!fastPath.divert(server)) fastPath = undefined;
  return {
    acceptor: { accept: (connection) => injector.injectConnection(connection), plainHandoff: true },
    registry: () => new GrpcJsRegistry(server, fastPath),
    shutdown: () => server.forceShutdown(),
  };
}

/** The server's own HTTP/2 layer. */
export function h2Engine(options: GrpcEngineOptions): GrpcEngine {
  const routes = new Routes();
  const server = new H2GrpcServer({ routes, maxReceiveBytes: options.maxReceiveBytes });
  return {
    // The listeners give it TCP, TLS and unix sockets alike.
    acceptor: { accept: (connection) => server.handle(connection as Socket), plainHandoff: false },
    registry: () => new H2Registry(routes, options.gate, options.middleware),
    shutdown: () => void server.destroy(),
  };
}
