// Which transport a connection uses: the `transport` option, by name or as an instance.
import { InvalidConfigError } from '../errors.js';
import { GrpcJsTransport } from './grpc-js.js';
import { H2Transport } from './h2.js';
import { Http2Transport } from './http2.js';
import type { Transport } from './types.js';

/**
 * The built-in transports by name: `'h2'` ({@link H2Transport}, gRPC over HTTP/2 spoken by the
 * client itself over a socket, the default), `'http2'` ({@link Http2Transport}, gRPC framed
 * directly over node:http2) and `'grpc-js'` ({@link GrpcJsTransport}, @grpc/grpc-js).
 */
export type TransportName = 'grpc-js' | 'h2' | 'http2';

/**
 * The transport for a `transport` option: the instance given, the one named, or the default,
 * `'h2'` (the built-in transport with the least client CPU per call that passes every suite).
 * Throws InvalidConfigError for anything else.
 */
export function selectTransport(choice: Transport | TransportName | undefined): Transport {
  if (choice === 'http2') return new Http2Transport();
  if (choice === undefined || choice === 'h2') return new H2Transport();
  if (choice === 'grpc-js') return new GrpcJsTransport();
  if (typeof choice === 'object' && choice !== null && typeof choice.open === 'function') {
    return choice;
  }
  throw new InvalidConfigError(
    `transport must be 'grpc-js', 'h2', 'http2' or a Transport instance, got ${String(choice)}`,
  );
}
