/**
 * @etcdkit/client/internal: what the sibling packages (recipes, server-embedded, otel, verify, cli)
 * need of the client and a user's program does not: signal linking, the reconnect backoff, and
 * turning any failure into the client's typed errors. No stability promise: it changes with the
 * packages that use it.
 *
 * @internal
 * @module @etcdkit/client/internal
 */
export { raceAbort } from '../connection/call-scope.js';
export { type LinkedSignal, linkSignals } from '../connection/link-signals.js';
export { fromTransportError, serverErrorClass, toEtcdError } from '../errors.js';
export { KeyedSlot, Slot, Slots } from '../kv/slots.js';
export { type BackoffOptions, backoffDelay } from '../transport/backoff.js';
export { GrpcCode } from '../transport/types.js';
