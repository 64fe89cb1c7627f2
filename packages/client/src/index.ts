/**
 * @etcdkit/client: a typed, failure-safe etcd v3 client.
 *
 * @module @etcdkit/client
 */
export * from './bytes.js';
export type { CallOptions, RetryPolicy } from './connection/types.js';
export * from './errors.js';
export type { Metadata, TlsOptions, Transport } from './transport/types.js';
export { GrpcStatus, TransportError } from './transport/types.js';
