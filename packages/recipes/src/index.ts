/**
 * @etcdkit/recipes: coordination recipes on etcd (sessions, locks, elections, fencing, STM,
 * barriers, queues), with the key layouts of etcd's Go recipes.
 *
 * @module @etcdkit/recipes
 */
export { RecipeError, SessionExpiredError } from './errors.js';
export {
  type OwnKey,
  type PredecessorWait,
  throwIfAborted,
  type WaitForDeleteOptions,
  type WaitOptions,
  waitForDelete,
  waitForEvent,
  waitForPredecessors,
} from './wait.js';
