/**
 * The generated etcd v3 protocol: message codecs (64-bit fields as `bigint`) and the table of every
 * RPC. Exported as `@etcdkit/client/protocol` for servers and tools that speak the wire format
 * directly, such as `@etcdkit/server-embedded`.
 *
 * @module protocol
 */
export * from './generated/methods.js';
export * from './generated/protocol.js';
