// @grpc/grpc-js, loaded when the first grpc-js channel opens: importing it takes about as long as
// importing the rest of the client (60 ms on the development machine), and a client on the
// default transport never needs it.
import { createRequire } from 'node:module';
import type * as Grpc from '@grpc/grpc-js';

let loaded: typeof Grpc | undefined;

/** The @grpc/grpc-js module, required on first use. */
export function grpcJs(): typeof Grpc {
  loaded ??= createRequire(import.meta.url)('@grpc/grpc-js') as typeof Grpc;
  return loaded;
}
