// @grpc/grpc-js, loaded when the first grpc-js channel opens: importing it takes about as long as
// importing the rest of the client (60 ms on the development machine), and a client on the
// default transport never needs it. It is an optional peer dependency: installed by those who
// choose the grpc-js transport.
import { createRequire } from 'node:module';
import type * as Grpc from '@grpc/grpc-js';
import { InvalidConfigError } from '../errors.js';

const MODULE = '@grpc/grpc-js';

let loaded: typeof Grpc | undefined;
let requireHere: NodeJS.Require | undefined;

function localRequire(): NodeJS.Require {
  requireHere ??= createRequire(import.meta.url);
  return requireHere;
}

/** The @grpc/grpc-js module, required on first use. */
export function grpcJs(): typeof Grpc {
  loaded ??= localRequire()(MODULE) as typeof Grpc;
  return loaded;
}

/**
 * Throws InvalidConfigError when @grpc/grpc-js cannot be found from the client, so that choosing
 * the grpc-js transport without it fails where the client is made, not at its first call.
 * `resolve` is the module resolver (Node's by default).
 */
export function requireGrpcJsInstalled(
  resolve: (id: string) => string = (id) => localRequire().resolve(id),
): void {
  try {
    resolve(MODULE);
  } catch (cause) {
    throw new InvalidConfigError(
      `transport 'grpc-js' needs ${MODULE}, an optional peer dependency of @etcdkit/client: ` +
        `install it (npm install ${MODULE}) or use the default transport`,
      { cause },
    );
  }
}
