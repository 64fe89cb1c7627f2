/**
 * @etcdkit/recipes/internal: what the sibling packages need of the recipes and a user's program
 * does not: the queue algorithm written once over a minimal store (the embedded server's Lock and
 * Election services run it over their in-process client) and the signal check the recipes share.
 * No stability promise: it changes with the packages that use it.
 *
 * @internal
 * @module @etcdkit/recipes/internal
 */

export { throwIfAborted } from './errors.js';
export {
  type Acquisition,
  type AheadRead,
  acquireInLine,
  type LinePlace,
  type QueueLine,
  type TurnOptions,
  waitForTurn,
} from './line/line.js';
