/**
 * The wire of both roles: the HTTP/2 connection core under the client's own HTTP/2 transport
 * (`'h2'`) and `@etcdkit/server-embedded`'s gRPC engine (`session.ts`: frame loop, SETTINGS,
 * PING, GOAWAY, flow control, limits, the per-tick writes and their order across connections),
 * HPACK decoding and encoding, frame constants and helpers, and gRPC message framing. Internal:
 * exported as `@etcdkit/client/h2` only so the server package needs no copy of them; not part of
 * the public API and may change.
 *
 * @internal
 * @module h2
 */
export * from './chunk-queue.js';
export * from './frames.js';
export * from './grpc-message.js';
export * from './header-limits.js';
export * from './hpack.js';
export * from './huffman.js';
export * from './protocol-error.js';
export * from './session.js';
export * from './write-order.js';
