// The gRPC server under a member: the server's own HTTP/2 (net/h2). It takes connections from the
// member's listeners (TCP, TLS and unix sockets alike) and serves the handlers the services
// register, every call passing the member's call gate and then any middleware
// (call-middleware.ts: a simulated cluster's leader gate). A connection that does not open with
// the HTTP/2 preface is HTTP/1.x and gets etcd's HTTP endpoints (http1/), as on etcd's port.
import type { Socket } from 'node:net';
import type { CallGate } from '../faults/call-gate.js';
import type { ServiceRegistry } from '../services/registry.js';
import type { CallMiddleware } from './call-middleware.js';
import type { ConnectionAcceptor } from './client-port.js';
import { Routes } from './h2/routes.js';
import { H2GrpcServer } from './h2/server.js';
import { H2Registry } from './h2-registry.js';
import { errorAnswer } from './http1/answer.js';
import { DEFAULT_HTTP1_LIMITS, Http1Connection } from './http1/connection.js';
import type { EtcdEndpoints } from './http1/etcd-endpoints.js';
import { h2Request, sendH2Answer } from './http1/h2-answer.js';
import { sniffProtocol } from './http1/protocol-sniff.js';

/** A member's gRPC server. */
export interface GrpcEngine {
  /** Where the member's listeners hand connections. */
  readonly acceptor: ConnectionAcceptor;
  /** Where the services register their handlers (once). */
  registry(): ServiceRegistry;
  /** Where HTTP/1.x requests go from now on (until then they get 503). */
  serveHttp(endpoints: EtcdEndpoints): void;
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
  let endpoints: EtcdEndpoints | undefined;
  const server = new H2GrpcServer({
    routes,
    maxReceiveBytes: options.maxReceiveBytes,
    otherRequest: (stream, fields) => {
      if (endpoints === undefined) return false;
      const request = h2Request(fields);
      sendH2Answer(stream, endpoints.answer(request), request.method);
      return true;
    },
  });
  const http1 = (socket: Socket, first: Buffer): void => {
    new Http1Connection(
      socket,
      (head) => endpoints?.answer(head) ?? errorAnswer(503, 'Service Unavailable'),
      DEFAULT_HTTP1_LIMITS,
      first,
    );
  };
  return {
    acceptor: {
      accept: (connection) =>
        sniffProtocol(connection, { h2: (socket) => server.handle(socket), http1 }),
    },
    registry: () => new H2Registry(routes, options.gate, options.middleware),
    serveHttp: (served) => {
      endpoints = served;
    },
    shutdown: () => void server.destroy(),
  };
}
