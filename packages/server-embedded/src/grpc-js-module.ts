// @grpc/grpc-js, loaded when something of grpc-js's is first needed (its server, a simulated
// cluster's interceptors, request metadata of the unary fast path): the default transport serves
// on the server's own HTTP/2 and never needs it, and importing it takes about 60 ms.
import { createRequire } from 'node:module';
import type * as Grpc from '@grpc/grpc-js';

let loaded: typeof Grpc | undefined;

/** The @grpc/grpc-js module, required on first use. */
export function grpcJs(): typeof Grpc {
  loaded ??= createRequire(import.meta.url)('@grpc/grpc-js') as typeof Grpc;
  return loaded;
}
